"""Limits on what is in progress: a route's `concurrency_limit` (requests in flight per key:
one past the max is answered 503 at once, and a place comes back when its exchange ends,
however it ends: answered, or its client gone and the upstream's answer dropped), and a listener's `max_connections_per_client` (one connection past it is closed at
once, the others go on)."""
import http.client
import socket
import threading
import unittest

import harness
from cache_origin import CacheOrigin
from proxy_harness import Proxy

ROUTES = """
[[route]]
path_prefix = "/slow/"
cluster = "app"
concurrency_limit = { name = "slow", max = 2 }

[[route]]
path_prefix = "/tenant/"
cluster = "app"
concurrency_limit = { name = "tenant", max = 1, key = ["header:x-tenant"] }
"""


def get(port, path, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers=headers or {})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


class ConcurrencyLimit(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.origin = CacheOrigin()
        cls.proxy = Proxy([cls.origin.endpoint], workers=2, routes_first=ROUTES,
                          listener_options={"max_connections_per_client": 40})

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.origin.stop()

    def setUp(self):
        self.origin.close_gate()

    def held(self, path, n, headers=None):
        """n requests for path that the origin holds at its gate: their threads and results."""
        results = []
        threads = [threading.Thread(target=lambda: results.append(
            get(self.proxy.port, path, headers)[0])) for _ in range(n)]
        for t in threads:
            t.start()
        self.origin.wait_requests(path, n)
        return threads, results

    def test_one_past_the_max_is_refused_at_once_and_places_come_back(self):
        path = "/slow/x?gate=1"
        limited = self.proxy.metric("portico_rate_limit_requests_total", limit="slow",
                                    result="limited")
        threads, results = self.held(path, 2)
        status, _ = get(self.proxy.port, path)  # not held: answered before the gate opens
        self.assertEqual(status, 503)
        self.origin.open_gate()
        for t in threads:
            t.join(30)
        self.assertEqual(results, [200, 200])
        self.assertEqual(get(self.proxy.port, path)[0], 200)  # the places came back
        self.assertEqual(self.proxy.metric("portico_rate_limit_requests_total",
                                           limit="slow", result="limited"), limited + 1)

    def test_a_client_that_leaves_gives_its_place_back(self):
        path = "/slow/leave?gate=1"
        socks = []
        for _ in range(2):
            s = socket.create_connection(("127.0.0.1", self.proxy.port))
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            socks.append(s)
        self.origin.wait_requests(path, 2)
        self.assertEqual(get(self.proxy.port, path)[0], 503)
        for s in socks:  # gone mid-request; the upstream still works on theirs
            s.close()
        self.origin.open_gate()  # their exchanges end with the upstream's answer
        harness.wait_until(lambda: get(self.proxy.port, "/slow/free")[0] == 200,
                           what="the places of the clients that left")
        self.assertEqual(get(self.proxy.port, "/slow/free")[0], 200)

    def test_each_key_has_its_own_count_and_no_key_is_not_counted(self):
        path = "/tenant/x?gate=1"
        threads, results = self.held(path, 1, {"X-Tenant": "a"})
        self.assertEqual(get(self.proxy.port, "/tenant/y", {"X-Tenant": "a"})[0], 503)
        self.assertEqual(get(self.proxy.port, "/tenant/y", {"X-Tenant": "b"})[0], 200)
        self.assertEqual(get(self.proxy.port, "/tenant/y")[0], 200)
        self.origin.open_gate()
        for t in threads:
            t.join(30)
        self.assertEqual(results, [200])


class ConnectionsPerClient(unittest.TestCase):
    def test_a_connection_past_the_clients_share_is_closed_and_the_rest_go_on(self):
        backend = harness.Backend(workers=1, unix=True)
        self.addCleanup(backend.stop)
        proxy = Proxy([f"unix:{backend.sock_path}"], workers=2,
                      listener_options={"max_connections_per_client": 3})
        self.addCleanup(proxy.stop)
        conns = [http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
                 for _ in range(3)]
        for c in conns:  # each accepted and serving, whichever worker took it
            c.request("GET", "/hello")
            self.assertEqual(c.getresponse().read(), b"hello world\n")
        extra = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        extra.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        try:
            self.assertEqual(extra.recv(100), b"")  # closed without an answer
        except ConnectionResetError:
            pass
        extra.close()
        self.assertEqual(proxy.metric("portico_client_connections_rejected_total",
                                      reason="per_client"), 1)
        for c in conns:  # the three go on
            c.request("GET", "/hello")
            self.assertEqual(c.getresponse().status, 200)
        conns[0].close()

        def served():
            try:  # refused (closed) until the proxy has seen the close
                return harness.http_get(proxy.port, "/hello")[0] == 200
            except OSError:
                return False
        harness.wait_until(served, what="a place after one closed")
        for c in conns[1:]:
            c.close()


if __name__ == "__main__":
    unittest.main()
