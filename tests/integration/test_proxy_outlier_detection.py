"""A cluster's outlier_detection (Envoy's): an endpoint answering 503 in a row is ejected for
every worker at once, comes back on its own after base_ejection_time, and is ejected again for
twice as long; 500s in a row count as 5xx, not as gateway errors; no more than
max_ejection_percent of the endpoints are out at once; an endpoint whose success rate is far
below the others' is ejected by the interval's sweep; one flapping every second is out while it
fails; with every endpoint ejected, requests
still go to them (panic mode, as with health checks). Metrics, /status, the dashboard and the
error log say so."""
import http.client
import json
import time
import unittest

import harness
from proxy_harness import Proxy
from scripted_origin import ScriptedOrigin


def get(port, path="/"):
    """A GET on a fresh connection (the workers take turns): (status, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read().decode()
    finally:
        conn.close()


class OutlierDetection(unittest.TestCase):
    def start(self, behaviours, outlier, lb="round_robin"):
        self.origins = [ScriptedOrigin(name, b) for name, b in behaviours]
        for o in self.origins:
            self.addCleanup(o.stop)
        self.proxy = Proxy([o.endpoint for o in self.origins], workers=2,
                           cluster_options={"lb": f'"{lb}"', "outlier_detection": outlier})
        self.addCleanup(self.proxy.stop)

    def ejected(self, origin):
        return self.proxy.metric("portico_upstream_endpoint_ejected", cluster="app",
                                 endpoint=origin.endpoint)

    def ejections(self, origin, reason):
        return self.proxy.metric("portico_upstream_ejections_total", cluster="app",
                                 endpoint=origin.endpoint, reason=reason)

    def test_gateway_errors_in_a_row_eject_for_every_worker_and_it_comes_back(self):
        # No interval ends within the test: a whole interval in service without a failure would
        # forgive the first ejection, and the second would then last 1.5 s, not 3, whenever the
        # requests come slower than the interval (an ASan build on a busy machine).
        self.start([("bad", lambda n: 503), ("good1", lambda n: 200), ("good2", lambda n: 200)],
                   "{ consecutive_gateway_errors = 3, base_ejection_time = 1.5, interval = 60 }")
        bad = self.origins[0]
        harness.wait_until(lambda: get(self.proxy.port)[0] and self.ejected(bad) == 1,
                           what="the bad endpoint ejected")
        self.assertLessEqual(bad.requests, 4)  # three in a row, and one another worker had sent
        seen = bad.requests
        statuses = [get(self.proxy.port)[0] for _ in range(30)]  # both workers pass it over
        self.assertEqual(statuses, [200] * 30)
        self.assertEqual(bad.requests, seen)
        self.assertEqual(self.ejections(bad, "consecutive_gateway_errors"), 1)
        status = json.loads(self.proxy.admin("/status"))
        endpoint = next(e for e in status["clusters"][0]["endpoints"]
                        if e["address"] == bad.endpoint)
        self.assertTrue(endpoint["ejected"])
        stats = json.loads(self.proxy.admin("/stats.json"))
        table = next(t for t in stats["tables"] if t["title"] == "cluster app")
        self.assertEqual(next(r for r in table["rows"] if r[0] == bad.endpoint)[1], "ejected")
        self.assertIn(f"endpoint {bad.endpoint} ejected for 1.5 s", self.proxy.read_log())
        # Back on its own once the ejection ends; still failing, out again for twice as long.
        harness.wait_until(lambda: get(self.proxy.port)[0] and
                           self.ejections(bad, "consecutive_gateway_errors") == 2,
                           timeout=15, what="a second ejection")
        self.assertGreater(bad.requests, seen)
        harness.wait_until(lambda: "ejected for 3 s (consecutive_gateway_errors; ejection 2)"
                           in self.proxy.read_log(), what="the second ejection's line")
        self.assertIn(f"endpoint {bad.endpoint} back from its ejection", self.proxy.read_log())

    def test_500s_count_as_5xx_and_no_more_than_the_percent_are_out(self):
        self.start([("bad1", lambda n: 500), ("bad2", lambda n: 500), ("good1", lambda n: 200),
                    ("good2", lambda n: 200)],
                   "{ consecutive_5xx = 2, consecutive_gateway_errors = 2, "
                   "base_ejection_time = 30, max_ejection_percent = 25 }")
        for _ in range(40):
            get(self.proxy.port)
            self.assertLessEqual(sum(self.ejected(o) for o in self.origins), 1)
        bad1, bad2 = self.origins[0], self.origins[1]
        self.assertEqual(self.ejected(bad1) + self.ejected(bad2), 1)  # one of four: 25 %
        self.assertEqual(self.ejections(bad1, "consecutive_5xx") +
                         self.ejections(bad2, "consecutive_5xx"), 1)
        self.assertEqual(self.ejections(bad1, "consecutive_gateway_errors") +
                         self.ejections(bad2, "consecutive_gateway_errors"), 0)

    def test_a_success_rate_far_below_the_others_is_ejected_by_the_sweep(self):
        # Four endpoints always answer; one fails four requests in five (never twice... in a
        # row of more than four: consecutive ejections are off here).
        behaviours = [(f"good{i}", lambda n: 200) for i in range(4)]
        behaviours.append(("flaky", lambda n: 200 if n % 5 == 0 else 500))
        self.start(behaviours,
                   "{ consecutive_5xx = 0, consecutive_gateway_errors = 0, interval = 1, "
                   "success_rate_minimum_hosts = 5, success_rate_request_volume = 10, "
                   "success_rate_stdev = 1.0, base_ejection_time = 30 }")
        flaky = self.origins[4]

        def load():
            for _ in range(25):
                get(self.proxy.port)
            return self.ejections(flaky, "success_rate") >= 1

        harness.wait_until(load, timeout=30, what="the flaky endpoint ejected by success rate")
        for o in self.origins[:4]:
            self.assertEqual(self.ejected(o), 0)
        seen = flaky.requests
        self.assertEqual({get(self.proxy.port)[0] for _ in range(20)}, {200})
        self.assertEqual(flaky.requests, seen)

    def test_an_endpoint_flapping_every_second_is_taken_out_while_it_fails(self):
        # 503 through every even second, 200 through every odd one: ejected in its bad
        # seconds, back in its good ones; the clients see far fewer errors than it gives.
        self.start([("flapping", lambda n: 503 if int(time.time()) % 2 == 0 else 200),
                    ("good1", lambda n: 200), ("good2", lambda n: 200)],
                   "{ consecutive_gateway_errors = 2, base_ejection_time = 0.5, "
                   "max_ejection_time = 1, interval = 0.2 }")
        flapping = self.origins[0]
        statuses = []
        end = time.monotonic() + 5  # the load's length: five of its periods' halves
        while time.monotonic() < end:
            statuses.append(get(self.proxy.port)[0])
        ejections = self.ejections(flapping, "consecutive_gateway_errors")
        self.assertGreaterEqual(ejections, 2)
        errors = statuses.count(503)
        print(f"\nflapping endpoint: {errors} errors of {len(statuses)} requests, "
              f"{ejections:.0f} ejections")
        # Without ejection a third of the requests would meet its bad half: about 1 in 6.
        # With it, each ejection costs the errors in a row that make it (two; three when the
        # other worker had one under way), and a return into a bad second as many again.
        self.assertLessEqual(errors, 3 * ejections + 3, f"{errors} of {len(statuses)}")
        self.assertLess(errors, len(statuses) / 8, f"{errors} of {len(statuses)}")
        self.assertEqual(set(statuses), {200, 503})
        self.assertIn("back from its ejection", self.proxy.read_log())

    def test_with_every_endpoint_ejected_requests_still_go_to_them(self):
        self.start([("bad1", lambda n: 503), ("bad2", lambda n: 503)],
                   "{ consecutive_gateway_errors = 1, base_ejection_time = 30, "
                   "max_ejection_percent = 100 }")
        harness.wait_until(lambda: get(self.proxy.port)[0] and
                           all(self.ejected(o) for o in self.origins),
                           what="both endpoints ejected")
        status, body = get(self.proxy.port)
        self.assertEqual(status, 503)
        self.assertRegex(body, r"^bad[12] 503")  # the origin's answer: panic mode, not refused


if __name__ == "__main__":
    unittest.main()
