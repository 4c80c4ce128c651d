"""Upstream faults: refused (502), hanging (504 after the timeout), reset mid-response (the
client sees a cut response, never a clean one), garbage (502). The proxy stays up and serves
the next request."""
import os
import shutil
import socket
import tempfile
import threading
import time
import unittest

import harness
from proxy_clients import curl
from proxy_harness import Proxy

RESPONSE_TIMEOUT = 1

# A second cluster, on a healthy backend, beside the faulty one: what still_serves asks for.
GOOD_ROUTE = """
[[route]]
path_prefix = "/good/"
prefix_rewrite = "/"
cluster = "good"

[[cluster]]
name = "good"
endpoints = ["127.0.0.1:{port}"]
"""


class FakeUpstream:
    """A TCP server on loopback whose behaviour per connection is a function of the socket."""

    def __init__(self, behaviour):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.behaviour = behaviour
        self.conns = []
        self.stopped = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopped:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        try:
            c.settimeout(10)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = c.recv(65536)
                if not chunk:
                    return
                data += chunk
            self.behaviour(c)
        except OSError:
            pass

    def stop(self):
        self.stopped = True
        self.sock.close()
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass


def hang(c):
    threading.Event().wait(30)


def reset_mid_response(c):
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 1000)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    c.close()


def reset_mid_chunked(c):
    c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3e8\r\n" + b"y" * 1000 +
              b"\r\n")
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    c.close()


def garbage(c):
    c.sendall(b"SSH-2.0-OpenSSH_9.2\r\nnot http at all\r\n\r\n")
    c.close()


class ProxyFaults(unittest.TestCase):
    def setUp(self):
        harness.need("curl")
        self.backend = harness.Backend(workers=1)
        self.addCleanup(self.backend.stop)

    def proxy_for(self, endpoint, **cluster):
        # One worker: the one that met the fault is the one still_serves asks.
        opts = {"connect_timeout": 1, "response_timeout": RESPONSE_TIMEOUT}
        opts.update(cluster)
        p = Proxy([endpoint], workers=1, cluster_options=opts,
                  routes_first=GOOD_ROUTE.format(port=self.backend.port))
        self.addCleanup(p.stop)
        return p

    def still_serves(self, proxy):
        # The same proxy, its cluster "app" on a bad upstream, is alive and still answers its
        # clients: a request to its healthy cluster gets the backend's answer, in each protocol.
        self.assertIsNone(proxy.process.proc.poll(), proxy.read_log())
        for mode in ("h1", "h2c"):
            r = curl(proxy, mode, "/good/hello")
            self.assertEqual((r.status, r.body), (200, b"hello world\n"), (mode, r))

    def fake(self, behaviour):
        f = FakeUpstream(behaviour)
        self.addCleanup(f.stop)
        return f

    def test_refused_is_502(self):
        p = self.proxy_for(harness.dead_endpoint(self))
        for mode in ("h1", "h2c"):
            r = curl(p, mode, "/hello")
            self.assertEqual(r.status, 502, r)
        self.still_serves(p)

    def test_missing_unix_socket_is_502(self):
        p = self.proxy_for("unix:/nonexistent/portico-test.sock")
        self.assertEqual(curl(p, "h1", "/").status, 502)

    def test_hang_is_504_after_timeout(self):
        f = self.fake(hang)
        p = self.proxy_for(f"127.0.0.1:{f.port}")
        for mode in ("h1", "h2c"):
            start = time.monotonic()
            r = curl(p, mode, "/hello")
            elapsed = time.monotonic() - start
            self.assertEqual(r.status, 504, r)
            # Not before response_timeout (the upstream accepted and read the request, so
            # nothing else could answer 504 sooner), and long before the upstream's 30 s hang.
            self.assertGreaterEqual(elapsed, RESPONSE_TIMEOUT, (mode, r))
            self.assertLess(elapsed, RESPONSE_TIMEOUT + 15, (mode, r))
        self.still_serves(p)

    def test_reset_mid_response_is_cut(self):
        for behaviour in (reset_mid_response, reset_mid_chunked):
            f = self.fake(behaviour)
            p = self.proxy_for(f"127.0.0.1:{f.port}")
            for mode in ("h1", "h2c"):
                with self.subTest(behaviour=behaviour.__name__, client=mode):
                    r = curl(p, mode, "/big")
                    # curl exits non-zero on a cut transfer: 18 (partial), 56 (recv failure),
                    # 92 (HTTP/2 stream error). A zero exit would be a lie.
                    self.assertNotEqual(r.exit_code, 0, r)
                    self.assertLess(len(r.body), 100000)
            self.still_serves(p)

    def test_a_cut_response_keeps_what_was_already_on_its_way(self):
        # The upstream sends the head and part of the body, then resets. The client must get
        # what the proxy took in before the reset (the status line at least), then the close:
        # a cut response. Dropping it and closing would look like a keep-alive connection
        # closed before the request was read, which a client may answer by sending it again
        # (browsers do, whatever the method): the soak met this on about one resetmid in six.
        # The upstream's bytes and its reset arrive together, so the proxy reads both in one
        # callback; 30 tries, each of which must see the head.
        for behaviour in (reset_mid_response, reset_mid_chunked):
            f = self.fake(behaviour)
            p = self.proxy_for(f"127.0.0.1:{f.port}")
            empty = 0
            for _ in range(30):
                with harness.connection(p.port, timeout=10) as (s, rf):
                    s.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
                    try:
                        first = rf.readline()
                    except ConnectionResetError:
                        first = b""
                    if not first.startswith(b"HTTP/1.1 200"):
                        empty += 1
            self.assertEqual(empty, 0, f"{behaviour.__name__}: {empty} of 30 cut responses "
                             "reached the client as a close with no byte of the answer")
            self.still_serves(p)

    def test_garbage_is_502(self):
        f = self.fake(garbage)
        p = self.proxy_for(f"127.0.0.1:{f.port}")
        for mode in ("h1", "h2c"):
            r = curl(p, mode, "/hello")
            self.assertEqual(r.status, 502, r)
        self.still_serves(p)

    def test_serves_after_faults(self):
        # A proxy whose upstream comes back after refusing. The upstream is a unix socket in a
        # directory of this test's own, bound but not listening (connect: ECONNREFUSED): no
        # other process can take its address between the refusal and the backend's start, as
        # one could a loopback port released in between.
        tmp = tempfile.mkdtemp(prefix="portico-test-")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        path = os.path.join(tmp, "app.sock")
        refusing = socket.socket(socket.AF_UNIX)
        self.addCleanup(refusing.close)
        refusing.bind(path)
        p = self.proxy_for(f"unix:{path}")
        self.assertEqual(curl(p, "h1", "/hello").status, 502)
        refusing.close()
        os.unlink(path)
        b = harness.Backend(workers=1, extra_listen=(f"unix:{path}:0666",))
        self.addCleanup(b.stop)
        harness.wait_until(lambda: harness.unix_socket_open(path), timeout=30,
                           what="the backend on the unix socket")
        r = curl(p, "h1", "/hello")
        self.assertEqual((r.status, r.body), (200, b"hello world\n"), r)


if __name__ == "__main__":
    unittest.main()
