"""A route's `rate_limit`: a burst passes and the next request is refused 429 with Retry-After
and the RateLimit fields; at three times the rate for 10 s the accepted count is rate × t +
burst within 2 %; without nodelay a burst waits its turn; keys by header (a request without
it is not counted); X-Forwarded-For picks the key only from a trusted proxy; exempt ranges
and dry runs; a flood of spoofed keys stays within the table's memory; the access log says
which limit answered."""
import http.client
import json
import os
import tempfile
import threading
import time
import unittest

import harness
from proxy_harness import Proxy, toml_string

ROUTES = """
[[route]]
path_prefix = "/strict/"
cluster = "app"
prefix_rewrite = "/"
rate_limit = { name = "strict", rate = "1r/m", burst = 2, nodelay = true }

[[route]]
path_prefix = "/steady/"
cluster = "app"
prefix_rewrite = "/"
rate_limit = { name = "steady", rate = "100r/s", burst = 50, nodelay = true }

[[route]]
path_prefix = "/queued/"
cluster = "app"
prefix_rewrite = "/"
rate_limit = { name = "queued", rate = "10r/s", burst = 5 }

[[route]]
path_prefix = "/keyed/"
cluster = "app"
prefix_rewrite = "/"
rate_limit = { name = "keyed", rate = "1r/m", key = ["header:x-api-key"], table_size = 1024 }

[[route]]
path_prefix = "/exempt/"
cluster = "app"
prefix_rewrite = "/"
rate_limit = [{ name = "exempt", rate = "1r/m", exempt = ["127.0.0.0/8"] },
              { name = "dry", rate = "1r/m", dry_run = true, headers = true }]

[[route]]
path_prefix = "/"
cluster = "app"
"""

TRUSTING = """
[[route]]
path_prefix = "/"
cluster = "app"
rate_limit = { name = "behind", rate = "1r/m" }
"""


class Connection:
    """Keep-alive requests on one connection: (status, fields with lower-case names)."""

    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def get(self, path, headers=None):
        self.conn.request("GET", path, headers=headers or {})
        r = self.conn.getresponse()
        r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}

    def close(self):
        self.conn.close()


class RateLimit(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.backend = harness.Backend(workers=1, unix=True)
        cls.tmp = tempfile.mkdtemp(prefix="portico-limit-test-")
        cls.access_log = os.path.join(cls.tmp, "access.log")
        cls.proxy = Proxy([f"unix:{cls.backend.sock_path}"], workers=2, routes_first=ROUTES,
                          catch_all=False,
                          listener_options={"access_log": toml_string(cls.access_log),
                                            "access_log_format": '"$path $status $limit"'})

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.backend.stop()
        for name in os.listdir(cls.tmp):
            os.unlink(os.path.join(cls.tmp, name))
        os.rmdir(cls.tmp)

    def setUp(self):
        self.c = Connection(self.proxy.port)

    def tearDown(self):
        self.c.close()

    def logged(self, line):
        with open(self.access_log) as f:
            return line in f.read()

    def count(self, limit, result):
        return self.proxy.metric("portico_rate_limit_requests_total", limit=limit,
                                 result=result)

    def test_a_burst_passes_then_429_with_retry_after_and_the_ratelimit_fields(self):
        for _ in range(3):  # the one the rate allows, and the burst of two
            self.assertEqual(self.c.get("/strict/hello")[0], 200)
        status, fields = self.c.get("/strict/hello")
        self.assertEqual(status, 429)
        self.assertGreater(int(fields["retry-after"]), 50)  # about a minute: 1 r/m
        self.assertEqual(fields["ratelimit-policy"], '"strict";q=1;w=60')
        self.assertTrue(fields["ratelimit"].startswith('"strict";r=0;t='), fields)
        self.assertEqual(self.count("strict", "limited"), 1)
        self.assertEqual(self.count("strict", "allowed"), 3)
        harness.wait_until(lambda: self.logged("/strict/hello 429 strict 429"),
                           what="the access log line")
        stats = json.loads(self.proxy.admin("/stats.json"))  # the dashboard's
        table = next(t for t in stats["tables"] if t["title"] == "limits")
        row = next(r for r in table["rows"] if r[0] == "strict")
        self.assertEqual(dict(zip(table["columns"], row))["refused"], 1)

    def test_at_three_times_the_rate_for_ten_seconds_the_accepted_count_holds(self):
        accepted, sent, start = 0, 0, time.monotonic()
        first = last = None
        while True:
            due = start + sent / 300.0  # 300 r/s offered: three times the limit
            now = time.monotonic()
            if due > now:
                time.sleep(due - now)  # pacing the client, not waiting on the proxy
            if due - start >= 10:
                break
            t = time.monotonic()
            first = first or t
            status = self.c.get("/steady/hello")[0]
            last = t
            self.assertIn(status, (200, 429))
            accepted += status == 200
            sent += 1
        expected = 100 * (last - first) + 50
        print(f"\nrate limit accuracy: {accepted} accepted of {sent} sent in "
              f"{last - first:.2f} s; rate x t + burst = {expected:.0f} "
              f"({100 * (accepted - expected) / expected:+.2f} %)")
        self.assertLessEqual(abs(accepted - expected), 0.02 * expected)

    def test_without_nodelay_a_burst_waits_its_turn(self):
        results = []

        def one():
            c = Connection(self.proxy.port)
            results.append(c.get("/queued/hello")[0])
            c.close()

        start = time.monotonic()
        threads = [threading.Thread(target=one) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        elapsed = time.monotonic() - start
        self.assertEqual(results, [200] * 6)
        self.assertEqual(self.count("queued", "delayed"), 5)
        self.assertGreaterEqual(elapsed, 0.45)  # the fifth waited 0.5 s for its turn
        harness.wait_until(lambda: self.logged("/queued/hello 200 queued delayed"),
                           what="the access log line")

    def test_a_header_keys_the_budget_and_a_request_without_it_is_not_counted(self):
        for key in ("a", "b", "c"):
            self.assertEqual(self.c.get("/keyed/hello", {"X-Api-Key": key})[0], 200)
            self.assertEqual(self.c.get("/keyed/hello", {"X-Api-Key": key})[0], 429)
        for _ in range(3):
            self.assertEqual(self.c.get("/keyed/hello")[0], 200)

    def test_a_flood_of_spoofed_keys_stays_within_the_table(self):
        rss = self.proxy.rss_kib()
        before = self.proxy.metric("portico_rate_limit_evictions_total", limit="keyed")
        for i in range(5000):  # each key limited at once, five times the table's 1024 slots
            self.assertEqual(self.c.get("/keyed/hello", {"X-Api-Key": f"k{i}"})[0], 200)
        self.assertGreater(self.proxy.metric("portico_rate_limit_evictions_total",
                                             limit="keyed"), before + 3000)
        self.assertLess(self.proxy.rss_kib() - rss, 8 * 1024)

    def test_exempt_clients_and_dry_runs_are_not_refused(self):
        for _ in range(4):
            status, fields = self.c.get("/exempt/hello")
            self.assertEqual(status, 200)
            self.assertTrue(fields["ratelimit"].startswith('"dry";'), fields)
        self.assertEqual(self.count("exempt", "allowed") + self.count("exempt", "limited"), 0)
        self.assertEqual(self.count("dry", "dry_run"), 3)
        self.assertEqual(self.count("dry", "allowed"), 1)


class RateLimitBehindAProxy(unittest.TestCase):
    """X-Forwarded-For picks the key only when the peer is a trusted proxy."""

    def test_only_a_trusted_proxy_says_who_the_client_is(self):
        backend = harness.Backend(workers=1, unix=True)
        self.addCleanup(backend.stop)
        for trusted, statuses in (("[]", [200, 429, 429]),
                                  ('["127.0.0.1"]', [200, 200, 200])):
            proxy = Proxy([f"unix:{backend.sock_path}"], workers=1, routes_first=TRUSTING,
                          catch_all=False, server_options={"trusted_proxies": trusted})
            try:
                c = Connection(proxy.port)
                got = [c.get("/hello", {"X-Forwarded-For": f"203.0.113.{i}"})[0]
                       for i in range(3)]
                c.close()
                self.assertEqual(got, statuses, trusted)
            finally:
                proxy.stop()


if __name__ == "__main__":
    unittest.main()
