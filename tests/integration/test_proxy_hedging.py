"""Request hedging (issue 27, item 4): a request that may be retried and has no response head
within [[cluster]] hedge's delay is sent to a second endpoint as well; the first head wins and
the other try is cancelled. Hedges are retries to the budget. Two endpoints, one answering in
200 ms and one in 2 ms, requests landing on either at random: with hedging at 10 ms the p99
drops from 200 ms to about 10 ms + 2 ms."""
import unittest

import harness
from fake_origins import H2cOrigin
from load_clients import keep_alive_requests
from proxy_harness import Proxy
from scripted_origin import ScriptedOrigin


def timed_load(port, clients, each, method="GET"):
    """Latencies (seconds), statuses and bodies of clients x each requests on keep-alive
    connections."""
    results = keep_alive_requests(port, clients, each, method)
    return ([r[2] for r in results], [r[0] for r in results], [r[1] for r in results])


def p99(latencies):
    return sorted(latencies)[int(len(latencies) * 0.99) - 1]


class Hedging(unittest.TestCase):
    def start(self, slow, fast, **cluster):
        self.slow = ScriptedOrigin("slow", slow)
        self.fast = ScriptedOrigin("fast", fast)
        self.addCleanup(self.slow.stop)
        self.addCleanup(self.fast.stop)
        options = {"lb": '"random_two"'}
        options.update(cluster)
        self.proxy = Proxy([self.slow.endpoint, self.fast.endpoint], workers=1,
                           cluster_options=options)
        self.addCleanup(self.proxy.stop)

    def hedges(self, outcome):
        return self.proxy.metric("portico_upstream_hedges_total", cluster="app", outcome=outcome)

    def run_load(self, **cluster):
        self.start(lambda n: (200, 0.2), lambda n: (200, 0.002), **cluster)
        latencies, statuses, bodies = timed_load(self.proxy.port, 8, 50)
        self.assertEqual(statuses, [200] * 400)
        self.assertTrue(all(b in (b"slow 200\n", b"fast 200\n") for b in bodies))
        return p99(latencies), self.slow.requests + self.fast.requests

    def test_hedging_at_10_ms_cuts_the_p99_of_a_slow_endpoint(self):
        without, load_without = self.run_load()
        self.doCleanups()
        # A budget of every request in flight: each slow one may be hedged (the budget's bound
        # is test_hedges_are_bounded_by_the_retry_budget's).
        hedged, load = self.run_load(
            hedge="{ delay = 0.01 }",
            retry="{ budget_percent = 100, budget_min_concurrency = 1 }")
        won, lost, failed = self.hedges("won"), self.hedges("lost"), self.hedges("failed")
        refused = self.proxy.metric("portico_upstream_overflow_total", cluster="app",
                                    breaker="retry_budget")
        print(f"\n400 GETs, 8 clients: p99 {without * 1000:.0f} ms without hedging, "
              f"{hedged * 1000:.0f} ms hedged at 10 ms; origin requests {load_without} and "
              f"{load} (+{load / 400 - 1:.0%}); hedges won {won:.0f}, lost {lost:.0f}, "
              f"failed {failed:.0f}, refused by the budget {refused:.0f}")
        self.assertGreater(without, 0.19)
        # Under the slow endpoint's 200 ms: its tail was cut by hedges. (Quiet, it is 13-18 ms;
        # CI, building the ASan tree beside the suite, once saw 127 ms.)
        self.assertLess(hedged, 0.15)
        self.assertEqual(load_without, 400)
        # Each hedge at most one more request. Not exactly one: a first try still waiting on its
        # connection when its hedge won never reached an origin.
        self.assertLessEqual(load, 400 + won + lost + failed)
        self.assertGreater(load, 400)
        self.assertGreater(won, 20)
        self.assertEqual(failed, 0)

    def test_a_hedge_and_its_first_try_answering_together_give_one_response(self):
        # The slow endpoint answers just as its hedge leaves: one response per request, whole,
        # and the other try cancelled (a double write would break the next response).
        self.start(lambda n: (200, 0.02), lambda n: (200, 0.001), hedge="{ delay = 0.02 }")
        latencies, statuses, bodies = timed_load(self.proxy.port, 1, 150)
        self.assertEqual(statuses, [200] * 150)
        self.assertTrue(all(b in (b"slow 200\n", b"fast 200\n") for b in bodies))
        made = self.hedges("won") + self.hedges("lost") + self.hedges("failed")
        self.assertGreater(made, 0)
        # A hedge cancelled while its connection was still opening never reached an origin.
        self.assertLessEqual(self.slow.requests + self.fast.requests, 150 + made)
        self.assertGreater(self.slow.requests + self.fast.requests, 150)

    def test_a_post_is_not_hedged(self):
        self.start(lambda n: (200, 0.3), lambda n: (200, 0.3), hedge="{ delay = 0.01 }")
        latencies, statuses, _ = timed_load(self.proxy.port, 1, 3, method="POST")
        self.assertEqual(statuses, [200] * 3)
        self.assertEqual(self.slow.requests + self.fast.requests, 3)
        self.assertEqual(self.hedges("won") + self.hedges("lost"), 0)

    def test_hedges_are_bounded_by_the_retry_budget(self):
        self.start(lambda n: (200, 0.05), lambda n: (200, 0.05), hedge="{ delay = 0.005 }",
                   retry="{ budget_percent = 10, budget_min_concurrency = 0 }")
        _, statuses, _ = timed_load(self.proxy.port, 4, 10)
        self.assertEqual(statuses, [200] * 40)
        self.assertEqual(self.slow.requests + self.fast.requests, 40)  # 10% of 4 in flight: 0
        self.assertGreater(self.proxy.metric("portico_upstream_overflow_total", cluster="app",
                                             breaker="retry_budget"), 0)

    def test_a_failed_first_try_leaves_the_hedge_to_answer(self):
        # The slow endpoint resets after 50 ms, by when its hedge is on its way: the hedge's
        # answer is the client's, and no third try is made.
        self.start(lambda n: ("reset", 0.05), lambda n: (200, 0.1), lb='"round_robin"',
                   hedge="{ delay = 0.01 }")
        _, statuses, bodies = timed_load(self.proxy.port, 1, 4)
        self.assertEqual(statuses, [200] * 4)
        self.assertEqual(set(bodies), {b"fast 200\n"})


class HedgingOverH2c(unittest.TestCase):
    def test_the_losing_try_is_reset_on_its_h2c_connection(self):
        slow, fast = H2cOrigin(), H2cOrigin()
        slow.hold_all = True
        for o in (slow, fast):
            self.addCleanup(o.stop)
        self.addCleanup(slow.release.set)
        proxy = Proxy([slow.endpoint, fast.endpoint], workers=1, cluster_options={
            "protocol": '"h2c"', "lb": '"round_robin"', "hedge": "{ delay = 0.05 }"})
        self.addCleanup(proxy.stop)
        status, body = harness.http_get(proxy.port, "/x")[:2]  # round robin: the slow one first
        self.assertEqual((status, body), (200, b"ok\n"))
        self.assertEqual(proxy.metric("portico_upstream_hedges_total", cluster="app",
                                      outcome="won"), 1)
        slow.release.set()  # it answers now, on a stream the proxy has reset
        harness.wait_until(lambda: slow.resets == [1], what="RST_STREAM of the first try")
        self.assertEqual(harness.http_get(proxy.port, "/y")[:2], (200, b"ok\n"))


if __name__ == "__main__":
    unittest.main()
