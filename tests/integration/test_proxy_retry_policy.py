"""The retry policy (issue 9, defect 2): a request is sent again only when it provably did not
reach the application (the connect failed, the h2c upstream refused the stream), or when its
method is idempotent and no response byte came back, and only while its whole body is still
held. A POST the origin read before the connection died is answered 502, never applied twice,
unless the cluster says retry_non_idempotent = true. Every retry is counted by reason."""
import socket
import unittest

import harness
from fake_origins import H2cOrigin, Http1Origin
from proxy_harness import Proxy
from test_proxy_metrics import get, sample


def request(proxy, method, path, body=b"", xid="1"):
    """One HTTP/1.1 request on a fresh client connection; returns the status."""
    head = (f"{method} {path} HTTP/1.1\r\nHost: app\r\nx-id: {xid}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    with harness.connection(proxy.port, timeout=10) as (s, f):
        s.sendall(head + body)
        return harness.read_http1_response(f).status


def retries(proxy, reason):
    return sample(get(proxy.admin_port, "/metrics")[1], "portico_upstream_retries_total",
                  cluster="app", reason=reason)


class RetryPolicy(unittest.TestCase):
    def origin(self, cls=Http1Origin):
        o = cls()
        self.addCleanup(o.stop)
        return o

    def proxy(self, endpoints, **cluster):
        options = {"retry_on_reset": "true", **cluster}
        p = Proxy(endpoints, workers=1, cluster_options=options)
        self.addCleanup(p.stop)
        return p

    def warm(self, proxy):
        """Leaves one idle keep-alive connection in the pool, so the next request reuses it."""
        self.assertEqual(request(proxy, "GET", "/warm"), 200)

    def test_post_read_then_dropped_on_reused_connection_is_not_replayed(self):
        origin = self.origin()
        proxy = self.proxy([origin.endpoint])
        self.warm(proxy)
        self.assertEqual(origin.connections, 1)
        self.assertEqual(request(proxy, "POST", "/drop", b"pay 10 EUR", xid="p1"), 502)
        self.assertEqual(origin.count("POST", "/drop", "p1"), 1, origin.applied)
        self.assertEqual(origin.connections, 1)  # it went on the reused one, and no other
        self.assertEqual(retries(proxy, "idempotent") + retries(proxy, "non_idempotent"), 0)

    def test_idempotent_request_is_retried_once_on_a_fresh_connection(self):
        origin = self.origin()
        proxy = self.proxy([origin.endpoint])
        self.warm(proxy)
        self.assertEqual(origin.connections, 1)
        self.assertEqual(request(proxy, "GET", "/drop-once", xid="g1"), 200)
        self.assertEqual(origin.count("GET", "/drop-once", "g1"), 2)
        self.assertEqual(retries(proxy, "idempotent"), 1)
        # The first try on the reused connection, the retry on a second, fresh one.
        self.assertEqual(origin.connections, 2)
        # PUT is idempotent too (RFC 9110 9.2.2), with its small body held for the retry.
        self.warm(proxy)
        self.assertEqual(request(proxy, "PUT", "/drop-once", b"x" * 1000, xid="u1"), 200)
        self.assertEqual(retries(proxy, "idempotent"), 2)

    def test_idempotent_request_is_retried_once_only(self):
        origin = self.origin()
        proxy = self.proxy([origin.endpoint])
        self.warm(proxy)
        self.assertEqual(request(proxy, "GET", "/drop", xid="g2"), 502)
        self.assertEqual(origin.count("GET", "/drop", "g2"), 2)

    def test_body_no_longer_held_is_not_replayed(self):
        # 200 KiB is more than the proxy keeps for a retry: once it has gone upstream, the
        # request cannot be sent again, idempotent or not.
        origin = self.origin()
        proxy = self.proxy([origin.endpoint])
        self.warm(proxy)
        self.assertEqual(request(proxy, "PUT", "/drop-once", b"y" * 200_000, xid="u2"), 502)
        self.assertEqual(origin.count("PUT", "/drop-once", "u2"), 1)

    def test_retry_non_idempotent_opt_in(self):
        origin = self.origin()
        proxy = self.proxy([origin.endpoint], retry_non_idempotent="true")
        self.warm(proxy)
        self.assertEqual(request(proxy, "POST", "/drop-once", b"data", xid="p2"), 200)
        self.assertEqual(origin.count("POST", "/drop-once", "p2"), 2)
        self.assertEqual(retries(proxy, "non_idempotent"), 1)

    def test_retry_on_reset_false_turns_off_unanswered_retries(self):
        origin = self.origin()
        proxy = self.proxy([origin.endpoint], retry_on_reset="false")
        self.warm(proxy)
        self.assertEqual(request(proxy, "GET", "/drop-once", xid="g3"), 502)
        self.assertEqual(origin.count("GET", "/drop-once", "g3"), 1)

    def test_failed_connect_is_retried_on_another_endpoint_for_any_method(self):
        origin = self.origin()
        proxy = self.proxy([harness.dead_endpoint(self), origin.endpoint])
        self.assertEqual(request(proxy, "POST", "/once", b"data", xid="p3"), 200)
        self.assertEqual(origin.count("POST", "/once", "p3"), 1)
        self.assertEqual(retries(proxy, "connect_failed"), 1)

    def test_h2c_refused_stream_is_retried_for_any_method(self):
        origin = self.origin(H2cOrigin)
        proxy = self.proxy([origin.endpoint], protocol='"h2c"')
        self.assertEqual(request(proxy, "POST", "/refuse-once", b"data", xid="p4"), 200)
        self.assertEqual(origin.count("POST", "/refuse-once", "p4"), 1)
        self.assertEqual(retries(proxy, "refused_stream"), 1)

    def test_h2c_post_dropped_after_being_read_is_not_replayed(self):
        origin = self.origin(H2cOrigin)
        proxy = self.proxy([origin.endpoint], protocol='"h2c"')
        self.warm(proxy)
        self.assertEqual(request(proxy, "POST", "/drop", b"pay", xid="p5"), 502)
        self.assertEqual(origin.count("POST", "/drop", "p5"), 1, origin.applied)


if __name__ == "__main__":
    unittest.main()
