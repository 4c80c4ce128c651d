"""Passive endpoint health: a connect that fails holds the endpoint down for fail_timeout,
the request goes to another endpoint instead of failing, and /status and /metrics say so.
Also [metrics] enabled = false: counters stay, histograms go."""
import json
import subprocess
import unittest

import harness
from proxy_clients import curl
from proxy_harness import Proxy
from test_proxy_metrics import get, sample


class EndpointHealth(unittest.TestCase):
    def setUp(self):
        harness.need("curl")
        self.backend = harness.Backend(workers=1, unix=True)
        self.addCleanup(self.backend.stop)
        # Bound, never listening, and held until the test ends: refused at once, every time (a
        # port bound and released here could be someone else's listener by the first request).
        self.dead = harness.dead_endpoint(self)
        self.live = f"unix:{self.backend.sock_path}"

    def endpoint(self, doc, address):
        return next(e for e in doc["clusters"][0]["endpoints"] if e["address"] == address)

    def test_refused_endpoint_is_passed_over_and_reported_down(self):
        proxy = Proxy([self.dead, self.live], workers=1)
        self.addCleanup(proxy.stop)
        # Every request succeeds: the first one to meet the dead endpoint is retried on the
        # live one, and from then on the dead one is held down.
        for _ in range(6):
            self.assertEqual(curl(proxy, "h1", "/hello").status, 200)
        doc = json.loads(get(proxy.admin_port, "/status")[1])
        dead, live = self.endpoint(doc, self.dead), self.endpoint(doc, self.live)
        self.assertEqual((dead["health"], live["health"]), ("down", "up"))
        self.assertEqual(dead["connect_failures"], 1)
        self.assertEqual((dead["busy"], dead["queue_depth"], dead["in_flight"]), (0, 0, 0))
        self.assertEqual(live["idle"], 1)
        text = get(proxy.admin_port, "/metrics")[1]
        self.assertEqual(sample(text, "portico_upstream_endpoint_up", endpoint=self.dead), 0)
        self.assertEqual(sample(text, "portico_upstream_endpoint_up", endpoint=self.live), 1)
        self.assertEqual(sample(text, "portico_upstream_errors_total", kind="connect_refused"), 1)
        self.assertEqual(sample(text, "portico_upstream_errors_total", kind="retried"), 1)

    def test_without_hold_down_the_dead_endpoint_keeps_being_tried(self):
        proxy = Proxy([self.dead, self.live], workers=1, cluster_options={"fail_timeout": 0})
        self.addCleanup(proxy.stop)
        for _ in range(6):
            self.assertEqual(curl(proxy, "h1", "/hello").status, 200)
        text = get(proxy.admin_port, "/metrics")[1]
        # Equal loads rotate, and the retry moves the rotation on to the live endpoint, so
        # each request meets the dead one first; each still succeeds.
        self.assertEqual(sample(text, "portico_upstream_errors_total", kind="connect_refused"), 6)
        self.assertEqual(sample(text, "portico_upstream_errors_total", kind="retried"), 6)

    def test_single_dead_endpoint_is_502_and_down(self):
        proxy = Proxy([self.dead], workers=1)
        self.addCleanup(proxy.stop)
        self.assertEqual(curl(proxy, "h1", "/hello").status, 502)
        doc = json.loads(get(proxy.admin_port, "/status")[1])
        self.assertEqual(self.endpoint(doc, self.dead)["health"], "down")


class MetricsOff(unittest.TestCase):
    def test_counters_without_histograms(self):
        harness.need("curl", "promtool")
        backend = harness.Backend(workers=1, unix=True)
        self.addCleanup(backend.stop)
        proxy = Proxy([f"unix:{backend.sock_path}"], workers=1,
                      extra_config="[metrics]\nenabled = false\n")
        self.addCleanup(proxy.stop)
        for _ in range(4):
            self.assertEqual(curl(proxy, "h1", "/hello").status, 200)
        text = get(proxy.admin_port, "/metrics")[1]
        check = subprocess.run(["promtool", "check", "metrics"], input=text, text=True,
                               capture_output=True)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        self.assertEqual(sample(text, "portico_requests_total", code="200"), 4)
        self.assertNotIn("_bucket{", text)
        self.assertNotIn("portico_request_duration_seconds", text)


class CustomBuckets(unittest.TestCase):
    def test_configured_bounds_are_the_le_labels(self):
        harness.need("curl")
        backend = harness.Backend(workers=1, unix=True)
        self.addCleanup(backend.stop)
        proxy = Proxy([f"unix:{backend.sock_path}"], workers=1,
                      extra_config="[metrics]\nbuckets = [0.005, 0.25, 2]\n")
        self.addCleanup(proxy.stop)
        self.assertEqual(curl(proxy, "h1", "/delay?ms=100").status, 200)
        text = get(proxy.admin_port, "/metrics")[1]
        les = sorted({line.split('le="')[1].split('"')[0] for line in text.splitlines()
                      if line.startswith("portico_upstream_first_byte_seconds_bucket")})
        self.assertEqual(les, sorted(["0.005", "0.25", "2", "+Inf"]))
        self.assertEqual(sample(text, "portico_upstream_first_byte_seconds_bucket", le="0.005"), 0)
        self.assertEqual(sample(text, "portico_upstream_first_byte_seconds_bucket", le="0.25"), 1)


if __name__ == "__main__":
    unittest.main()
