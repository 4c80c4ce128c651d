"""The keep-alive race without replaying POSTs (issue 9, defect 3). Upstreams that close idle
connections after 1 s and retire workers (starman --keepalive-timeout 1 --max-requests 25, and
portico-backend with the same churn), reached across a 25 ms network (tests/integration/
latency_relay.py: on loopback an upstream's close arrives within microseconds, so no proxy ever
loses the race); bursts of GET and POST separated by pauses just short of the upstream's idle
timeout, inside the last round trip before it, where a request on a connection the upstream is
about to close is lost. Every POST carries a unique id that the application records, and the
relay records what each proxy sent upstream.

Portico prevents the race (idle connections watched and retired before the upstream's learned
idle timeout, freshest reused first, a retiring connection never reused) instead of replaying
requests: 0 GET failed, 0 POST sent upstream twice or applied twice, and POST failures at most a
tenth of nginx's, measured side by side in the same run in front of the same upstream, where
nginx must lose the race (or the load proved nothing).

The pauses are the load's shape (each burst reuses connections the upstream is about to
close), not synchronisation."""
import collections
import http.client
import os
import shutil
import tempfile
import threading
import time
import unittest
import urllib.request

import harness
from proxy_harness import Proxy

RELAY = os.path.join(os.path.dirname(__file__), "latency_relay.py")
DELAY = 0.025  # one way, each direction: a request sent in the last 50 ms before the close races
ROUNDS = 3

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

# One pause longer than the upstreams' 1 s keep-alive timeout, in which they close the idle
# connections (a proxy that watches them can learn the timeout), then pauses inside the race
# window: reused after this idle time, a connection is closed by the upstream while the
# request is on its way.
WARM_UP_PAUSE = 1.3
PAUSES = [0.955, 0.96, 0.965, 0.97, 0.975, 0.96, 0.965, 0.97, 0.955, 0.975]
BURSTS = len(PAUSES) + 1
THREADS = 8
PER_THREAD = 8  # per burst, GET and POST alternating


class Load:
    """Client threads with keep-alive connections to one proxy; POST bodies are unique ids."""

    def __init__(self, port, tag, post_path):
        self.port, self.tag, self.post_path = port, tag, post_path
        self.counts = collections.Counter()
        self.posted = []
        self.lock = threading.Lock()

    def _thread(self, index, burst, conns):
        for i in range(PER_THREAD):
            post = (i + index) % 2 == 1  # half the threads open a burst with a POST
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
        for burst, pause in enumerate([WARM_UP_PAUSE] + PAUSES):
            threads = [threading.Thread(target=self._thread, args=(i, burst, conns))
                       for i in range(THREADS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
            time.sleep(pause)
        for c in conns:
            if c is not None:
                c.close()
        return self


class KeepAliveChurn(unittest.TestCase):
    def setUp(self):
        harness.need("starman", "nginx")
        self.tmp = tempfile.mkdtemp(prefix="portico-churn-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)  # runs last
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

    def relay(self, upstream, name):
        """A latency relay to upstream; returns (address, stop) where stop() ends it and
        returns the bytes sent through it towards the upstream."""
        port = harness.free_port()
        log = os.path.join(self.tmp, f"relay-{name}.log")
        p = harness.Process([harness.PYTHON, RELAY, "--listen", str(port), "--upstream",
                             upstream, "--delay", str(DELAY), "--log", log],
                            os.path.join(self.tmp, f"relay-{name}.out"))
        self.addCleanup(p.stop)
        harness.wait_until(lambda: harness.port_open("127.0.0.1", port), what="relay")

        def stop():
            self.assertIsNone(p.proc.poll(), p.read_log())
            p.stop()  # SIGTERM: the relay writes out the connections still open
            with open(log, "rb") as f:
                return f.read()

        return f"127.0.0.1:{port}", stop

    def compare(self, upstream, post_path, applied):
        """Runs the load through portico and through nginx, each across its own relay."""
        portico_relay, portico_sent = self.relay(upstream, "portico")
        nginx_relay, nginx_sent = self.relay(upstream, "nginx")
        proxy = Proxy([portico_relay], workers=1)
        self.addCleanup(proxy.stop)
        nginx_port = self.nginx(nginx_relay)
        # nginx (which does not replay a POST) must lose the race, or the comparison shows
        # nothing; it loses some 12 to 18 of 176 POSTs a round on a 2-core machine, but what a
        # round makes of a ~50 ms window is luck on a loaded one: rounds go on, both proxies
        # alike, until nginx has lost 5, at most ROUNDS of them.
        c, n = collections.Counter(), collections.Counter()
        rounds = 0
        while rounds < ROUNDS and (rounds == 0 or n["post_failed"] < 5):
            loads = (("portico", Load(proxy.port, f"portico{rounds}", post_path).run(),
                      portico_sent),
                     ("nginx", Load(nginx_port, f"nginx{rounds}", post_path).run(), nginx_sent))
            for name, load, sent in loads:
                times = applied(load.posted)
                wire = sent()
                load.counts["post_applied_twice"] = sum(1 for x in load.posted
                                                        if times.get(x, 0) > 1)
                load.counts["post_sent_twice"] = sum(
                    1 for x in load.posted
                    if wire.count(f"POST {post_path.format(id=x)} HTTP/1.1\r\n".encode()) > 1)
                self.report.append(f"{upstream.split(':')[0]} {name} round {rounds}: "
                                   f"{dict(load.counts)}")
            c.update(loads[0][1].counts)
            n.update(loads[1][1].counts)
            rounds += 1
        self.assertEqual(c["get_failed"], 0, self.report)
        self.assertEqual(c["post_applied_twice"], 0, self.report)
        self.assertEqual(c["post_sent_twice"], 0, self.report)
        self.assertEqual(c["get_ok"] + c["post_ok"] + c["post_failed"],
                         rounds * BURSTS * THREADS * PER_THREAD)
        self.assertGreaterEqual(n["post_failed"], 5, self.report)
        self.assertLessEqual(c["post_failed"], n["post_failed"] // 10, self.report)
        self.assertIsNone(proxy.process.proc.poll(), proxy.read_log())

    def test_starman(self):
        log = os.path.join(self.tmp, "posts.log")
        open(log, "w").close()
        starman, port = harness.churning_starman(self.tmp, PSGI_APP, workers=2 * THREADS,
                                                 env={**os.environ, "CHURN_LOG": log})
        self.addCleanup(starman.stop)

        def applied(ids):
            with open(log) as f:
                return collections.Counter(line.strip() for line in f)

        self.compare(f"127.0.0.1:{port}", "/record?id={id}", applied)

    def test_portico_backend(self):
        backend = harness.Backend("--keepalive-timeout", "1", "--max-requests", "25",
                                  workers=4)
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
