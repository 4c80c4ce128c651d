"""The keep-alive race without replaying POSTs (issue 9, defect 3). Upstreams that close idle
connections after 1 s and retire workers every 25 requests (starman --keepalive-timeout 1
--max-requests 25, and portico-backend with the same churn); bursts of GET and POST separated by
pauses just over the upstream's idle timeout; every POST carries a unique id that the
application records. Portico prevents the race (idle connections watched and retired before the
upstream's learned idle timeout, freshest reused first, a retiring connection never reused)
instead of replaying requests: 0 GET failed, 0 POST applied twice, and POST failures no more
than a tenth of nginx's (plus two: see below), measured side by side in the same run in front of
the same upstream.

The pauses are the load's shape (each burst reuses connections the upstream is about to
close), not synchronisation."""
import collections
import http.client
import os
import tempfile
import threading
import time
import unittest
import urllib.request

import harness
from proxy_harness import Proxy

PSGI_APP = r"""
my $log = $ENV{CHURN_LOG};
my $app = sub {
    my $env = shift;
    if ($env->{REQUEST_METHOD} eq 'POST') {
        my $id = '';
        $env->{'psgi.input'}->read($id, 64);
        open(my $fh, '>>', $log) or die;
        syswrite($fh, "$id\n");
        close($fh);
        return [200, ['Content-Type' => 'text/plain'], ["ok\n"]];
    }
    return [200, ['Content-Type' => 'text/plain'], ["hello world\n"]];
};
"""

NGINX_CONF = """
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/client_body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    upstream app {{
        server {upstream};
        keepalive 64;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://app;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
    }}
}}
"""

# Pauses around the upstreams' 1 s keep-alive timeout, so that bursts start as the upstream
# closes the idle connections: where a proxy that reuses them blindly loses the race.
PAUSES = [0.97, 0.99, 1.0, 1.01, 1.03, 0.98, 1.0, 1.02]
BURSTS = len(PAUSES)
THREADS = 8
PER_THREAD = 40  # per burst, GET and POST alternating


class Load:
    """Client threads with keep-alive connections to one proxy; POST bodies are unique ids."""

    def __init__(self, port, tag, post_path):
        self.port, self.tag, self.post_path = port, tag, post_path
        self.counts = collections.Counter()
        self.posted = []
        self.lock = threading.Lock()

    def _thread(self, index, burst, conns):
        for i in range(PER_THREAD):
            post = i % 2 == 1
            xid = f"{self.tag}-{burst}-{index}-{i}"
            kind = "post" if post else "get"
            try:
                c = conns[index]
                if c is None:
                    c = conns[index] = http.client.HTTPConnection("127.0.0.1", self.port,
                                                                  timeout=30)
                if post:
                    c.request("POST", self.post_path.format(id=xid), body=xid.encode())
                else:
                    c.request("GET", "/hello")
                r = c.getresponse()
                r.read()
                ok = r.status == 200
                if r.will_close:
                    c.close()
                    conns[index] = None
            except (OSError, http.client.HTTPException):
                ok = False
                conns[index].close()
                conns[index] = None
            with self.lock:
                self.counts[kind + ("_ok" if ok else "_failed")] += 1
                if post:
                    self.posted.append(xid)

    def run(self):
        conns = [None] * THREADS
        for burst in range(BURSTS):
            threads = [threading.Thread(target=self._thread, args=(i, burst, conns))
                       for i in range(THREADS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
            time.sleep(PAUSES[burst])
        for c in conns:
            if c is not None:
                c.close()
        return self


class KeepAliveChurn(unittest.TestCase):
    def setUp(self):
        harness.need("starman", "nginx")
        self.tmp = tempfile.mkdtemp(prefix="portico-churn-")
        self.report = []

    def tearDown(self):
        print("\n" + "\n".join(self.report))

    def nginx(self, upstream):
        prefix = os.path.join(self.tmp, f"nginx-{len(self.report)}")
        os.makedirs(prefix)
        port = harness.free_port()
        conf = os.path.join(prefix, "nginx.conf")
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(prefix=prefix, upstream=upstream, port=port))
        p = harness.Process(["nginx", "-p", prefix, "-c", conf, "-g", "daemon off;"],
                            os.path.join(prefix, "out.log"))
        self.addCleanup(p.stop)
        harness.wait_until(lambda: harness.port_open("127.0.0.1", port), what="nginx")
        return port

    def compare(self, upstream, post_path, applied):
        """Runs the load through portico and through nginx; returns both loads."""
        proxy = Proxy([upstream], workers=1)
        self.addCleanup(proxy.stop)
        nginx_port = self.nginx(upstream)
        # Alternating, so that neither meets the upstream in a better moment.
        portico = Load(proxy.port, "portico", post_path).run()
        nginx = Load(nginx_port, "nginx", post_path).run()
        for name, load in (("portico", portico), ("nginx", nginx)):
            times = applied(load.posted)
            twice = sum(1 for xid in load.posted if times.get(xid, 0) > 1)
            load.counts["post_applied_twice"] = twice
            self.report.append(f"{upstream.split(':')[0]} {name}: {dict(load.counts)}")
        c = portico.counts
        self.assertEqual(c["get_failed"], 0, self.report)
        self.assertEqual(c["post_applied_twice"], 0, self.report)
        self.assertGreaterEqual(c["get_ok"] + c["post_ok"], BURSTS * THREADS * PER_THREAD * 0.9)
        # The target: POST failures a small fraction of nginx's. When nginx itself
        # loses (almost) nothing, a single race on this shared machine decides either way, so
        # the suite allows two more than a tenth of nginx's and prints both counts.
        self.assertLessEqual(c["post_failed"], nginx.counts["post_failed"] // 10 + 2,
                             self.report)
        self.assertIsNone(proxy.process.proc.poll(), proxy.read_log())

    def test_starman(self):
        log = os.path.join(self.tmp, "posts.log")
        open(log, "w").close()
        starman, port = harness.churning_starman(self.tmp, PSGI_APP,
                                                 env={**os.environ, "CHURN_LOG": log})
        self.addCleanup(starman.stop)

        def applied(ids):
            with open(log) as f:
                return collections.Counter(line.strip() for line in f)

        self.compare(f"127.0.0.1:{port}", "/record", applied)

    def test_portico_backend(self):
        backend = harness.Backend("--keepalive-timeout", "1", "--max-requests", "25", workers=4)
        self.addCleanup(backend.stop)

        def applied(ids):
            # The counter app counts each POST to /counter?id=X once per application; one GET
            # more, straight to the backend, reads the count back (and adds one).
            out = {}
            for xid in ids:
                with urllib.request.urlopen(f"{backend.url}/counter?id={xid}", timeout=10) as r:
                    out[xid] = int(r.read().decode().split(":")[1].rstrip("}")) - 1
            return out

        self.compare(f"127.0.0.1:{backend.port}", "/counter?id={id}", applied)


if __name__ == "__main__":
    unittest.main()
