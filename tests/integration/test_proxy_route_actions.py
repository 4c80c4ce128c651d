"""Route matching and actions, seen from portico-backend's /headers (the request as it arrived)
and from the client: path_exact and path_regex (RE2) next to path_prefix, first match wins;
a scheme match for an edge's port-80 redirect to https; direct_response; prefix_rewrite;
request and response fields added and removed; a per-route timeout."""
import socket
import time
import unittest

import harness
from proxy_harness import Proxy

ROUTES = r"""
[[route]]
path_prefix = "/private/"
direct_response = { status = 403, body = "no\n" }

[[route]]
scheme = "http"
host = "secure.test"
redirect = { scheme = "https", code = 301 }

[[route]]
path_exact = "/exact"
direct_response = { status = 200, body = "exact\n" }

[[route]]
path_regex = "/users/[0-9]+/profile"
direct_response = { status = 202, body = "regex\n", content_type = "text/x-test" }

[[route]]
path_prefix = "/api/"
prefix_rewrite = "/"
cluster = "app"
request_headers_add = { "X-Route" = "api" }
request_headers_remove = ["x-secret"]
response_headers_add = { "x-served-by" = "portico-route" }
response_headers_remove = ["content-type"]

[[route]]
path_prefix = "/slow/"
prefix_rewrite = "/"
cluster = "app"
timeout = 0.3
"""


def get(port, path, host="x", extra=b""):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s, s.makefile("rb") as f:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n".encode() + extra + b"\r\n")
        return harness.read_http1_response(f)


class RouteActions(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # Class cleanups run even when setUpClass fails: a proxy that does not start leaves
        # no backend behind.
        cls.backend = harness.Backend(workers=1)
        cls.addClassCleanup(cls.backend.stop)
        cls.proxy = Proxy([f"127.0.0.1:{cls.backend.port}"], workers=1, routes_first=ROUTES)
        cls.addClassCleanup(cls.proxy.stop)

    def test_redirect_to_https_for_cleartext_only(self):
        r = get(self.proxy.port, "/a/b?c=1", host="secure.test:80")
        self.assertEqual(r.status, 301)
        self.assertEqual(r.header("location"), "https://secure.test/a/b?c=1")
        # Another host is not redirected (it goes on to the catch-all).
        self.assertEqual(get(self.proxy.port, "/hello", host="other.test").status, 200)

    def test_exact_and_regex_matches(self):
        r = get(self.proxy.port, "/exact")
        self.assertEqual((r.status, r.body), (200, b"exact\n"))
        self.assertEqual(get(self.proxy.port, "/exact/more").status, 404)  # the backend's
        r = get(self.proxy.port, "/users/42/profile?x=1")
        self.assertEqual((r.status, r.body), (202, b"regex\n"))
        self.assertEqual(r.header("content-type"), "text/x-test")
        self.assertEqual(get(self.proxy.port, "/users/ab/profile").status, 404)  # not [0-9]+
        self.assertEqual(get(self.proxy.port, "/users/42/profile/x").status, 404)  # whole path

    def test_dot_segments_cannot_slip_past_a_route(self):
        # The upstream would resolve these to /private/x: so does the route match.
        for path in ("/public/../private/x", "/public/%2e%2e/private/x", "//private/x",
                     "/./private/x"):
            self.assertEqual(get(self.proxy.port, path).status, 403, path)
        self.assertEqual(get(self.proxy.port, "/private-not/x").status, 404)

    def test_rewrite_and_fields(self):
        r = get(self.proxy.port, "/api/headers?q=1", extra=b"X-Secret: s\r\nX-Kept: k\r\n")
        self.assertEqual(r.status, 200, r)
        body = r.body.decode()
        self.assertTrue(body.startswith("GET /headers?q=1\n"), body)
        self.assertIn("x-route: api\n", body)
        self.assertIn("x-kept: k\n", body)
        self.assertNotIn("x-secret", body)
        self.assertEqual(r.header("x-served-by"), "portico-route")
        self.assertIsNone(r.header("content-type"))

    def test_route_timeout(self):
        start = time.monotonic()
        r = get(self.proxy.port, "/slow/delay?ms=3000")
        self.assertEqual(r.status, 504)
        self.assertLess(time.monotonic() - start, 2)
        self.assertEqual(get(self.proxy.port, "/slow/delay?ms=10").status, 200)


if __name__ == "__main__":
    unittest.main()
