"""Active health checks ([[cluster]] health_check): an address whose checks fail `unhealthy`
times in a row gets no new request, and comes back after `healthy` passes; with every address
failing the cluster fails open (Envoy's panic mode) rather than refusing everything; the state
is in /status, in a metric and in the error log. Checked over HTTP/1.1 against two Python
origins whose /healthz the test turns bad and good, and over h2c against portico-backend."""
import unittest

import harness
from harness import wait_until
from named_origin import NamedOrigin
from proxy_harness import Proxy, toml_string


CHECK = ('health_check = { path = "/healthz", interval = 0.1, timeout = 1, healthy = 2, '
         'unhealthy = 2 }')


class HealthChecks(unittest.TestCase):
    def seen(self, proxy, n=20):
        return {harness.http_get(proxy.port, "/")[1].decode() for _ in range(n)}

    def test_failing_address_is_passed_over_then_back(self):
        a, b = NamedOrigin("a"), NamedOrigin("b")
        self.addCleanup(a.stop)
        self.addCleanup(b.stop)
        p = Proxy(["127.0.0.1:9"], workers=1, catch_all=False, routes_first="\n".join([
            "[[cluster]]", 'name = "hc"', 'lb = "round_robin"',
            f'endpoints = ["127.0.0.1:{a.port}", "127.0.0.1:{b.port}"]', CHECK, "",
            "[[route]]", 'cluster = "hc"', ""]))
        self.addCleanup(p.stop)
        self.assertEqual(self.seen(p), {"a", "b"})
        b.bad = True
        wait_until(lambda: "failed 2 health checks in a row" in p.read_log(),
                   what="b marked unhealthy")
        self.assertEqual(self.seen(p), {"a"})
        self.assertIn('"health_check":"failing"', p.admin("/status"))
        self.assertEqual(p.metric("portico_upstream_endpoint_unhealthy",
                                  endpoint=f"127.0.0.1:{b.port}"), 1)
        # Every address failing: traffic flows to all rather than to none.
        a.bad = True
        wait_until(lambda: p.read_log().count("failed 2 health checks in a row") == 2,
                   what="a marked unhealthy too")
        self.assertEqual(self.seen(p), {"a", "b"})
        a.bad = b.bad = False
        # (The log says each kind at most once a second: the metric tells both.)
        wait_until(lambda: all(p.metric("portico_upstream_endpoint_unhealthy",
                                        endpoint=f"127.0.0.1:{o.port}") == 0 for o in (a, b)),
                   what="both back")
        self.assertIn("passes its health check again", p.read_log())
        self.assertEqual(self.seen(p), {"a", "b"})

    def test_checks_spread_over_the_interval(self):
        # Forty addresses whose first checks all fired in one loop pass before: with a thousand
        # clusters, a thousand connects at once every interval.
        o = NamedOrigin("o")
        self.addCleanup(o.stop)
        endpoints = ", ".join([f'"127.0.0.1:{o.port}"'] * 40)  # one pool and checker each
        p = Proxy(["127.0.0.1:9"], workers=1, catch_all=False, routes_first="\n".join([
            "[[cluster]]", 'name = "hc"', f"endpoints = [{endpoints}]",
            'health_check = { path = "/healthz", interval = 2, jitter = 0 }', "",
            "[[route]]", 'cluster = "hc"', ""]))
        self.addCleanup(p.stop)
        wait_until(lambda: len(o.checks) >= 40, timeout=30, what="every address checked once")
        first = sorted(o.checks[:40])
        self.assertGreater(first[-1] - first[0], 0.5, f"first checks within {first[-1] - first[0]} s")

    def test_h2c_cluster_checks_over_http2(self):
        backend = harness.Backend(workers=1, unix=True)
        self.addCleanup(backend.stop)
        p = Proxy([f"unix:{backend.sock_path}"], workers=1,
                  cluster_options={"protocol": '"h2c"',
                                   "health_check": '{ path = "/status/503", interval = 0.1, '
                                                   'unhealthy = 1 }'})
        self.addCleanup(p.stop)
        wait_until(lambda: p.metric("portico_upstream_endpoint_unhealthy") == 1,
                   what="the h2c endpoint failing its check")
        # Its only endpoint: still used (fail open).
        self.assertEqual(harness.http_get(p.port, "/hello")[0], 200)


if __name__ == "__main__":
    unittest.main()
