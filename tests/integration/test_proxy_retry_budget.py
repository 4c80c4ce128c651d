"""A cluster's retry settings (issue 27, item 3): retries = N tries made again, a retry budget
(Envoy's: retries in flight at most budget_percent of the cluster's requests in flight, never
fewer than budget_min_concurrency), a jittered exponential backoff between tries, a
per_try_timeout after which an idempotent request is tried again elsewhere, and on_status:
responses tried again as a reset is. What may be retried stays the retry policy's rule: a POST
is never sent twice."""
import collections
import http.client
import random
import time
import unittest

import harness
from load_clients import keep_alive_requests
from proxy_harness import Proxy
from scripted_origin import ScriptedOrigin


def request(port, method="GET", body=None):
    """(status, body, seconds) of one request on a fresh connection."""
    start = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, "/", body=body)
        r = conn.getresponse()
        return r.status, r.read(), time.monotonic() - start
    finally:
        conn.close()


class RetryBudget(unittest.TestCase):
    def start(self, behaviours, retry, workers=1, **cluster):
        origins = []
        for i, behaviour in enumerate(behaviours):
            origin = ScriptedOrigin(f"o{i}", behaviour)
            self.addCleanup(origin.stop)
            origins.append(origin)
        options = {"retry": retry}
        options.update(cluster)
        proxy = Proxy([o.endpoint for o in origins], workers=workers, cluster_options=options)
        self.addCleanup(proxy.stop)
        return proxy, origins

    def half_failing(self, retry):
        """2,000 GETs from 20 clients to an origin that resets half its requests (at random,
        each after 5 ms): (origin requests, statuses, retries counted, budget refusals)."""
        fails = random.Random(27)
        script = [fails.random() < 0.5 for _ in range(20000)]
        proxy, (origin,) = self.start(
            [lambda n: ("reset", 0.005) if script[n] else (200, 0.005)], retry)
        counts = collections.Counter(
            status for status, _, _ in keep_alive_requests(proxy.port, 20, 100))
        retried = proxy.metric("portico_upstream_errors_total", cluster="app", kind="retried")
        refused = proxy.metric("portico_upstream_overflow_total", cluster="app",
                               breaker="retry_budget")
        return origin.requests, counts, retried, refused

    def test_a_half_failing_origin_sees_retries_capped_at_the_budget(self):
        requests, counts, retried, refused = self.half_failing(
            "{ retries = 3, budget_percent = 20, budget_min_concurrency = 1 }")
        print(f"\nbudget 20%: {requests} origin requests for 2000 ({requests / 2000 - 1:+.1%}), "
              f"{retried:.0f} retries, {refused:.0f} refused by the budget, statuses {counts}")
        self.assertEqual(sum(counts.values()), 2000)
        self.assertEqual(requests, 2000 + retried)  # each retry is one more origin request
        self.assertGreater(refused, 0)
        self.assertGreater(retried, 100)  # the budget lets retries through...
        self.assertLessEqual(requests, 2000 * 1.25)  # ...but about 20% of the load, not 87%
        self.assertEqual(set(counts), {200, 502})

    def test_without_a_budget_the_same_origin_sees_its_load_nearly_double(self):
        requests, counts, retried, refused = self.half_failing("{ retries = 3 }")
        print(f"\nno budget: {requests} origin requests for 2000 ({requests / 2000 - 1:+.1%}), "
              f"{retried:.0f} retries, statuses {counts}")
        self.assertEqual(requests, 2000 + retried)
        self.assertEqual(refused, 0)
        # 1 + 1/2 + 1/4 + 1/8 of the requests: 1.875 times the load.
        self.assertGreater(requests, 2000 * 1.7)
        self.assertGreater(counts.get(200, 0), 2000 * 0.9)

    def test_retries_wait_a_jittered_backoff_below_its_ceiling(self):
        # Every odd request is reset: each GET is tried twice, the retry after a random wait
        # below backoff_base (its first retry's ceiling).
        proxy, (origin,) = self.start([lambda n: "reset" if n % 2 else 200],
                                      "{ backoff_base = 0.2, backoff_max = 0.4 }")
        for _ in range(10):
            status, _, _ = request(proxy.port)
            self.assertEqual(status, 200)
        arrivals = [t for t, _ in origin.arrivals]
        gaps = [arrivals[i + 1] - arrivals[i] for i in range(0, 20, 2)]
        print(f"\nbackoff waits: {', '.join(f'{g * 1000:.0f} ms' for g in gaps)}")
        self.assertLess(max(gaps), 0.2 + 0.1)
        # Ten waits drawn below 0.2 s add up to 1 s on average; below 0.25 s once in 400,000.
        self.assertGreater(sum(gaps), 0.25)
        self.assertGreater(max(gaps) - min(gaps), 0.01)  # drawn, not one fixed delay

    def test_each_retry_waits_longer_up_to_backoff_max(self):
        # Three resets, then an answer: waits below 0.1, 0.2 and 0.2 (backoff_max) seconds.
        proxy, (origin,) = self.start([lambda n: "reset" if n <= 3 else 200],
                                      "{ retries = 3, backoff_base = 0.1, backoff_max = 0.2 }")
        status, body, _ = request(proxy.port)
        self.assertEqual((status, body), (200, b"o0 200\n"))
        arrivals = [t for t, _ in origin.arrivals]
        self.assertEqual(len(arrivals), 4)
        for i, ceiling in enumerate([0.1, 0.2, 0.2]):
            self.assertLess(arrivals[i + 1] - arrivals[i], ceiling + 0.1, i)

    def test_past_retries_the_error_stands(self):
        proxy, (origin,) = self.start([lambda n: "reset"], "{ retries = 2, backoff_base = 0 }")
        status, _, _ = request(proxy.port)
        self.assertEqual(status, 502)
        self.assertEqual(origin.requests, 3)

    def test_a_try_past_per_try_timeout_is_made_again_on_another_endpoint(self):
        slow = lambda n: (200, 3)
        fast = lambda n: 200
        proxy, (a, b) = self.start([slow, fast], "{ per_try_timeout = 0.3, backoff_base = 0 }",
                                   lb='"round_robin"')
        results = [request(proxy.port) for _ in range(4)]
        for status, body, seconds in results:
            self.assertEqual((status, body), (200, b"o1 200\n"))
            self.assertLess(seconds, 1.5)  # not the slow endpoint's 3 s
        self.assertEqual(b.requests, 4)
        self.assertGreaterEqual(a.requests, 1)
        self.assertEqual(proxy.metric("portico_timeouts_total", kind="upstream_per_try"),
                         a.requests)

    def test_a_post_past_per_try_timeout_is_not_sent_twice(self):
        proxy, (origin,) = self.start([lambda n: (200, 2)], "{ per_try_timeout = 0.3 }")
        status, _, seconds = request(proxy.port, "POST", b"apply once")
        self.assertEqual(status, 504)
        self.assertLess(seconds, 1.5)
        harness.wait_until(lambda: origin.requests == 1, what="the POST at the origin")
        self.assertEqual(origin.requests, 1)
        self.assertEqual(proxy.metric("portico_timeouts_total", kind="upstream_per_try"), 1)

    def test_a_status_in_on_status_is_tried_again(self):
        proxy, (origin,) = self.start([lambda n: 503 if n == 1 else 200],
                                      "{ on_status = [503], backoff_base = 0 }")
        status, body, _ = request(proxy.port)
        self.assertEqual((status, body), (200, b"o0 200\n"))
        self.assertEqual(origin.requests, 2)
        self.assertEqual(proxy.metric("portico_upstream_retries_total", cluster="app",
                                      reason="idempotent"), 1)

    def test_a_post_answered_with_an_on_status_status_gets_that_answer(self):
        proxy, (origin,) = self.start([lambda n: 503 if n == 1 else 200],
                                      "{ on_status = [503], backoff_base = 0 }")
        status, body, _ = request(proxy.port, "POST", b"apply once")
        self.assertEqual((status, body), (503, b"o0 503\n"))
        self.assertEqual(origin.requests, 1)

    def test_the_last_try_answered_with_an_on_status_status_is_passed_on(self):
        proxy, (origin,) = self.start([lambda n: 503], "{ on_status = [503], retries = 2, "
                                      "backoff_base = 0 }")
        status, body, _ = request(proxy.port)
        self.assertEqual((status, body), (503, b"o0 503\n"))
        self.assertEqual(origin.requests, 3)


if __name__ == "__main__":
    unittest.main()
