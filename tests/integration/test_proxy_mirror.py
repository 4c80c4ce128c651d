"""Traffic mirroring (issue 27, item 5): a route's mirror = { cluster, fraction, host_suffix,
max_body } copies a fraction of its requests to a shadow cluster, fire and forget. The shadow's
answer is dropped; its slowness or failure never delays or fails the request; a body past
max_body abandons the copy (counted), never the request."""
import http.client
import socket
import threading
import time
import unittest

import harness
from proxy_harness import Proxy
from scripted_origin import ScriptedOrigin


class DiscardingOrigin:
    """Reads each request's Content-Length body in pieces and drops it; answers its length."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.endpoint = f"127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.one, args=(conn,), daemon=True).start()

    def one(self, conn):
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, rest = data.split(b"\r\n\r\n", 1)
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            got = len(rest)
            while got < length:
                chunk = conn.recv(1 << 20)
                if not chunk:
                    return
                got += len(chunk)
            body = str(got).encode()
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                         % (len(body), body))

    def stop(self):
        self.sock.close()


def request(port, method="GET", body=None, host="app.example"):
    start = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(method, "/x", body=body, headers={"Host": host})
        r = conn.getresponse()
        return r.status, r.read(), time.monotonic() - start
    finally:
        conn.close()


class Mirror(unittest.TestCase):
    def start(self, primary, shadow, mirror, workers=1):
        self.shadow = ScriptedOrigin("shadow", shadow)
        self.addCleanup(self.shadow.stop)
        if isinstance(primary, str):
            endpoint = primary
        else:
            self.primary = ScriptedOrigin("primary", primary)
            self.addCleanup(self.primary.stop)
            endpoint = self.primary.endpoint
        extra = f'[[cluster]]\nname = "shadow"\nendpoints = ["{self.shadow.endpoint}"]\n'
        self.proxy = Proxy([endpoint], workers=workers, extra_config=extra,
                           routes_first=f'[[route]]\ncluster = "app"\nmirror = {mirror}\n')
        self.addCleanup(self.proxy.stop)

    def mirrored(self, outcome):
        return self.proxy.metric("portico_upstream_mirrored_total", cluster="shadow",
                                 outcome=outcome)

    def test_every_request_is_copied_with_a_shadow_host_and_its_body(self):
        self.start(lambda n: 200, lambda n: 200, '{ cluster = "shadow" }')
        for i in range(10):
            self.assertEqual(request(self.proxy.port)[:2], (200, b"primary 200\n"))
        status, body, _ = request(self.proxy.port, "POST", b"a body to copy",
                                  host="app.example:8080")
        self.assertEqual((status, body), (200, b"primary 200\n"))
        harness.wait_until(lambda: self.shadow.requests == 11, what="11 copies at the shadow")
        # Copies go their own way: they may arrive in another order than the requests.
        self.assertEqual(sorted(self.shadow.hosts),
                         ["app.example-shadow"] * 10 + ["app.example-shadow:8080"])
        post = [i for i, (_, method) in enumerate(self.shadow.arrivals) if method == "POST"]
        self.assertEqual(len(post), 1)
        self.assertEqual(self.shadow.hosts[post[0]], "app.example-shadow:8080")
        self.assertEqual(self.shadow.bodies[post[0]], b"a body to copy")
        self.assertEqual(self.primary.bodies[10], b"a body to copy")
        harness.wait_until(lambda: self.mirrored("answered") == 11, what="11 answered copies")

    def test_a_fraction_of_requests_is_copied(self):
        self.start(lambda n: 200, lambda n: 200, '{ cluster = "shadow", fraction = 0.25 }')
        for _ in range(400):
            request(self.proxy.port)
        harness.wait_until(lambda: self.mirrored("answered") == self.shadow.requests,
                           what="the copies answered")
        self.assertEqual(self.primary.requests, 400)
        self.assertGreater(self.shadow.requests, 60)
        self.assertLess(self.shadow.requests, 140)

    def test_a_slow_or_failing_shadow_never_delays_or_fails_the_request(self):
        # Three copies answered after 2 s each, then three answered 503.
        self.start(lambda n: 200, lambda n: (200, 2) if n <= 3 else 503,
                   '{ cluster = "shadow" }')
        for _ in range(6):
            status, body, seconds = request(self.proxy.port)
            self.assertEqual((status, body), (200, b"primary 200\n"))
            self.assertLess(seconds, 0.4)
        harness.wait_until(lambda: self.mirrored("answered") == 3 and self.mirrored("failed") == 3,
                           timeout=15, what="3 slow copies answered, 3 failed ones")

    def test_a_1_gb_body_abandons_its_copy_not_the_request(self):
        origin = DiscardingOrigin()
        self.addCleanup(origin.stop)
        self.start(origin.endpoint, lambda n: 200, '{ cluster = "shadow", max_body = 65536 }')
        rss = self.proxy.rss_kib()
        size = 1 << 30
        conn = http.client.HTTPConnection("127.0.0.1", self.proxy.port, timeout=120)
        self.addCleanup(conn.close)
        conn.putrequest("POST", "/upload")
        conn.putheader("Content-Length", str(size))
        conn.endheaders()
        piece = b"x" * (1 << 20)
        for _ in range(size >> 20):
            conn.send(piece)
        r = conn.getresponse()
        self.assertEqual((r.status, r.read()), (200, str(size).encode()))
        self.assertEqual(self.shadow.requests, 0)
        self.assertEqual(self.mirrored("abandoned"), 1)
        self.assertLess(self.proxy.rss_kib() - rss, 64 * 1024)  # nothing of it held

    def test_a_streamed_body_past_max_body_abandons_its_copy(self):
        self.start(lambda n: 200, lambda n: (200, 1), '{ cluster = "shadow", max_body = 1000 }')
        conn = http.client.HTTPConnection("127.0.0.1", self.proxy.port, timeout=30)
        self.addCleanup(conn.close)
        conn.request("POST", "/x", body=iter([b"a" * 600, b"b" * 600]),
                     encode_chunked=True, headers={"Transfer-Encoding": "chunked"})
        r = conn.getresponse()
        self.assertEqual((r.status, r.read()), (200, b"primary 200\n"))
        self.assertEqual(self.primary.bodies[0], b"a" * 600 + b"b" * 600)
        harness.wait_until(lambda: self.mirrored("abandoned") == 1, what="the copy abandoned")

    def test_a_client_gone_mid_body_abandons_the_copy(self):
        self.start(lambda n: 200, lambda n: 200, '{ cluster = "shadow" }')
        s = socket.create_connection(("127.0.0.1", self.proxy.port))
        s.sendall(b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n" + b"x" * 1000)
        harness.wait_until(lambda: self.shadow.requests == 0 and
                           '"busy":1' in self.proxy.admin("/status"), timeout=10,
                           what="the request upstream")
        s.close()
        harness.wait_until(lambda: self.mirrored("abandoned") == 1, what="the copy abandoned")


if __name__ == "__main__":
    unittest.main()
