"""The keep-alive race: upstreams that close idle connections after 1 s and retire workers
every 25 requests, load in bursts separated by pauses just over 1 s, GET and POST over HTTP/1.1
and h2c through the proxy. Not one request may fail.

The pauses are the load's shape (each burst reuses connections the upstream is about to
close), not synchronisation."""
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

import harness
from proxy_harness import Proxy

PSGI_APP = r"""
my $app = sub {
    my $env = shift;
    if ($env->{PATH_INFO} eq '/echo') {
        my $body = '';
        my $in = $env->{'psgi.input'};
        while ($in->read(my $buf, 65536)) { $body .= $buf }
        return [200, ['Content-Type' => 'application/octet-stream'], [$body]];
    }
    return [200, ['Content-Type' => 'text/plain'], ["hello world\n"]];
};
"""

BURSTS = 6
PAUSE = 1.05  # just over the upstream's 1 s keep-alive timeout


def h2load(url, *flags, n=200, c=8, m=4):
    cmd = ["h2load", "-n", str(n), "-c", str(c), "-m", str(m), *flags, url]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
    done = re.search(r"requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded, "
                     r"(\d+) failed, (\d+) errored", out)
    codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out)
    if not done or not codes:
        raise AssertionError(f"unexpected h2load output:\n{out}")
    return {"total": int(done.group(1)), "succeeded": int(done.group(3)),
            "failed": int(done.group(4)), "errored": int(done.group(5)),
            "2xx": int(codes.group(1)), "non2xx": sum(int(codes.group(i)) for i in (2, 3, 4)),
            "out": out}


class KeepAliveRace(unittest.TestCase):
    def setUp(self):
        harness.need("h2load")
        self.tmp = tempfile.mkdtemp(prefix="portico-race-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.post_body = os.path.join(self.tmp, "post.bin")
        with open(self.post_body, "wb") as f:
            f.write(os.urandom(4096))

    def run_bursts(self, proxy):
        totals = {"requests": 0}
        for burst in range(BURSTS):
            runs = [
                h2load(f"{proxy.url}/hello", "--h1", n=150, c=6, m=1),
                h2load(f"{proxy.url}/hello", n=150, c=3, m=5),
                h2load(f"{proxy.url}/echo", "--h1", "-d", self.post_body, n=60, c=4, m=1),
                h2load(f"{proxy.url}/echo", "-d", self.post_body, n=60, c=2, m=4),
            ]
            for r in runs:
                self.assertEqual(r["failed"] + r["errored"], 0, f"burst {burst}:\n{r['out']}")
                self.assertEqual(r["non2xx"], 0, f"burst {burst}:\n{r['out']}")
                self.assertEqual(r["2xx"], r["total"], r["out"])
                totals["requests"] += r["total"]
            time.sleep(PAUSE)
        self.assertGreaterEqual(totals["requests"], 2000)
        self.assertIsNone(proxy.process.proc.poll(), proxy.read_log())

    def test_portico_backend(self):
        backend = harness.Backend("--keepalive-timeout", "1", "--max-requests", "25", workers=4,
                                  unix=True)
        self.addCleanup(backend.stop)
        with Proxy([f"unix:{backend.sock_path}"]) as proxy:
            self.run_bursts(proxy)
        # The workers really did retire during the run: the race was on.
        self.assertGreater(backend.read_log().count("started"), 8)

    def test_starman(self):
        harness.need("starman")
        starman, port = harness.churning_starman(self.tmp, PSGI_APP)
        self.addCleanup(starman.stop)
        with Proxy([f"127.0.0.1:{port}"]) as proxy:
            self.run_bursts(proxy)


if __name__ == "__main__":
    unittest.main()
