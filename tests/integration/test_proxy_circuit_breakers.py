"""A cluster's circuit_breakers (Envoy's): past max_requests in flight a request is answered 503
at once with x-portico-overflow: max_requests; past max_pending waiting for a connection, 503
max_pending; past max_retries retries in flight, the error stands and no retry is made. Places
come back when requests end; refusals are counted per breaker and logged in the access log."""
import http.client
import os
import shutil
import tempfile
import threading
import time
import unittest

import harness
from proxy_harness import Proxy, toml_string
from scripted_origin import ScriptedOrigin


def get(port, path="/"):
    """(status, x-portico-overflow, seconds taken) of a GET on a fresh connection."""
    start = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        r.read()
        return r.status, r.getheader("x-portico-overflow"), time.monotonic() - start
    finally:
        conn.close()


def together(port, n):
    """n GETs at once: their results, in the order they finished."""
    results, lock = [], threading.Lock()

    def one():
        r = get(port)
        with lock:
            results.append(r)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


class CircuitBreakers(unittest.TestCase):
    def start(self, behaviour, breakers, **cluster):
        self.origin = ScriptedOrigin("slow", behaviour)
        self.addCleanup(self.origin.stop)
        tmp = tempfile.mkdtemp(prefix="portico-breakers-")
        self.addCleanup(shutil.rmtree, tmp, True)
        self.log = os.path.join(tmp, "access.log")
        options = {"circuit_breakers": breakers}
        options.update(cluster)
        self.proxy = Proxy([self.origin.endpoint], workers=1, cluster_options=options,
                           listener_options={"access_log": toml_string(self.log),
                                             "access_log_format": '"$status $limit"'})
        self.addCleanup(self.proxy.stop)

    def logged(self):
        with open(self.log) as f:
            return f.read()

    def counted(self, breaker):
        return self.proxy.metric("portico_upstream_overflow_total", cluster="app",
                                 breaker=breaker)

    def test_past_max_requests_a_request_is_refused_at_once(self):
        self.start(lambda n: (200, 1.0), "{ max_requests = 2 }")
        results = together(self.proxy.port, 5)
        refused = [r for r in results if r[0] == 503]
        self.assertEqual(sorted(r[0] for r in results), [200, 200, 503, 503, 503])
        for status, overflow, seconds in refused:
            self.assertEqual(overflow, "max_requests")
            self.assertLess(seconds, 0.9)  # at once, not after the slow origin's second
        self.assertEqual(self.origin.requests, 2)
        self.assertEqual(self.counted("max_requests"), 3)
        # The places came back with the requests' ends.
        self.assertEqual(self.proxy.metric("portico_upstream_breaker_open", cluster="app",
                                           breaker="max_requests"), 0)
        self.assertEqual(get(self.proxy.port)[0], 200)
        harness.wait_until(lambda: "503 breaker max_requests" in self.logged(),
                           what="the access log line")

    def test_past_max_pending_a_request_is_refused_at_once(self):
        # One connection to the origin: one request on it, one waiting, the third refused.
        self.start(lambda n: (200, 1.0), "{ max_pending = 1 }", max_connections="1")
        results = together(self.proxy.port, 3)
        self.assertEqual(sorted(r[0] for r in results), [200, 200, 503])
        refused = next(r for r in results if r[0] == 503)
        self.assertEqual(refused[1], "max_pending")
        self.assertLess(refused[2], 0.9)
        self.assertEqual(self.counted("max_pending"), 1)

    def test_past_max_retries_the_error_stands_without_a_retry(self):
        # Every attempt waits 1 s and is reset: the four first attempts fail together, one of
        # them may retry (and fails again), the other three are 502 with no retry.
        self.start(lambda n: ("reset", 1.0), "{ max_retries = 1 }")
        results = together(self.proxy.port, 4)
        self.assertEqual([r[0] for r in results], [502] * 4)
        self.assertEqual(self.origin.requests, 5)
        self.assertEqual(self.counted("max_retries"), 3)
        harness.wait_until(lambda: self.logged().count("502 breaker max_retries") == 3,
                           what="the access log lines")


if __name__ == "__main__":
    unittest.main()
