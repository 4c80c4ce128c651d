"""Bytes left on an upstream connection never reach the next request (issue 9, defect 4). An
application that answers HEAD (or a 304) announcing a body and then sends one anyway, in a later
write, must not have those bytes read as the response of the request that gets the connection
next, even when that request was waiting and takes the connection straight from the finished
exchange. Such an answer's framing is in doubt: its connection is not reused."""
import json
import threading
import unittest

import harness
from fake_origins import Http1Origin
from proxy_harness import Proxy
from test_proxy_metrics import get


class ConnectionReuse(unittest.TestCase):
    def setUp(self):
        self.origin = Http1Origin()
        self.addCleanup(self.origin.stop)
        # One connection upstream: the second request waits for it.
        self.proxy = Proxy([self.origin.endpoint], workers=1,
                           cluster_options={"max_connections": 1, "queue_timeout": 30})
        self.addCleanup(self.proxy.stop)

    def queue_depth(self):
        doc = json.loads(get(self.proxy.admin_port, "/status")[1])
        return doc["clusters"][0]["endpoints"][0]["queue_depth"]

    def check(self, method):
        first = {}

        def send_first():
            with harness.connection(self.proxy.port, timeout=30) as (s, f):
                s.sendall(f"{method} /late-body HTTP/1.1\r\nHost: app\r\n\r\n".encode())
                first["r"] = [harness.read_http1_response(f, head_request=method == "HEAD")]

        t = threading.Thread(target=send_first)
        t.start()
        harness.wait_until(lambda: self.origin.count(method, "/late-body") == 1,
                           what="the first request upstream")
        second = {}
        t2 = threading.Thread(target=lambda: second.update(r=harness.exchange_raw(
            self.proxy.port, b"GET /next HTTP/1.1\r\nHost: app\r\n\r\n", timeout=30,
            wait_close=False)[0]))
        t2.start()
        harness.wait_until(lambda: self.queue_depth() == 1, what="the second request queued")
        self.origin.go.set()
        t.join(30)
        t2.join(30)
        self.assertEqual(first["r"][0].body, b"")
        r = second["r"][0]
        self.assertEqual((r.status, r.body), (200, b"ok\n"), r)
        self.assertEqual(self.origin.count("GET", "/next"), 1)

    def test_head_answer_with_a_late_body(self):
        self.check("HEAD")

    def test_304_with_a_late_body(self):
        self.check("GET")


if __name__ == "__main__":
    unittest.main()
