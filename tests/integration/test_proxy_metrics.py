"""The admin endpoint: /metrics passes promtool and counts what was sent, by protocol and
status class; /healthz; /readyz fails from the moment draining starts; /status is JSON."""
import json
import re
import signal
import socket
import subprocess
import time
import threading
import unittest
import urllib.request

import harness
from proxy_clients import curl
from proxy_harness import Proxy


def get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


sample = harness.metric_sample


class ProxyMetrics(unittest.TestCase):
    def setUp(self):
        harness.need("promtool", "curl")
        self.backend = harness.Backend(workers=2, unix=True)
        self.addCleanup(self.backend.stop)
        self.proxy = Proxy([f"unix:{self.backend.sock_path}"], workers=2)
        self.addCleanup(self.proxy.stop)

    def test_exposition_is_valid_and_counts_requests(self):
        for _ in range(7):
            self.assertEqual(curl(self.proxy, "h1", "/hello").status, 200)
        for _ in range(5):
            self.assertEqual(curl(self.proxy, "h2c", "/status/404").status, 404)
        for _ in range(3):
            self.assertEqual(curl(self.proxy, "h1", "/delay?ms=200").status, 200)
        status, text = get(self.proxy.admin_port, "/metrics")
        self.assertEqual(status, 200)
        check = subprocess.run(["promtool", "check", "metrics"], input=text, text=True,
                               capture_output=True)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        listener = f"127.0.0.1:{self.proxy.port}"
        ok = sample(text, "portico_requests_total", listener=listener, protocol="h1", code="200",
                    answered_by="upstream")
        missing = sample(text, "portico_requests_total", protocol="h2c", code="404",
                         answered_by="upstream")
        self.assertEqual((ok, missing), (10, 5))
        self.assertGreaterEqual(sample(text, "portico_client_connections_accepted_total"), 15)
        self.assertGreater(sample(text, "process_max_fds"), 0)
        self.assertLess(abs(sample(text, "process_start_time_seconds") - time.time()), 300)
        count = sample(text, "portico_request_duration_seconds_count", route="*/")
        self.assertEqual(count, 15)
        # The three 200 ms delays sit above the 100 ms bound (far above what the others take,
        # even on a loaded machine).
        above = (sample(text, "portico_upstream_first_byte_seconds_count", cluster="app") -
                 sample(text, "portico_upstream_first_byte_seconds_bucket", cluster="app",
                        le="0.1"))
        self.assertEqual(above, 3)
        self.assertGreaterEqual(sample(text, "portico_upstream_connect_seconds_count",
                                       cluster="app"), 1)

    def test_health_ready_status(self):
        self.assertEqual(get(self.proxy.admin_port, "/healthz"), (200, "ok\n"))
        self.assertEqual(get(self.proxy.admin_port, "/readyz")[0], 200)
        curl(self.proxy, "h1", "/hello")
        status, body = get(self.proxy.admin_port, "/status")
        self.assertEqual(status, 200)
        doc = json.loads(body)
        self.assertEqual(doc["workers"], 2)
        self.assertEqual(doc["clusters"][0]["name"], "app")
        self.assertGreaterEqual(doc["requests"], 1)
        # A request in flight keeps the proxy draining (not exited) while /readyz says 503.
        done = threading.Event()

        def slow():
            curl(self.proxy, "h1", "/delay?ms=1500")
            done.set()

        t = threading.Thread(target=slow)
        t.start()
        harness.wait_until(lambda: get(self.proxy.admin_port, "/status")[1].find(
            '"client_connections":1') >= 0, what="the slow request in flight")
        self.proxy.process.proc.send_signal(signal.SIGTERM)
        harness.wait_until(lambda: get(self.proxy.admin_port, "/readyz")[0] == 503,
                           what="/readyz failing while draining")
        self.assertEqual(get(self.proxy.admin_port, "/healthz")[0], 200)
        t.join(timeout=20)
        self.assertTrue(done.is_set())
        self.assertEqual(self.proxy.process.proc.wait(timeout=20), 0)


class ConnectionMetrics(unittest.TestCase):
    def test_connections_by_protocol_and_tls_handshakes(self):
        backend = harness.Backend(workers=1, unix=True)
        self.addCleanup(backend.stop)
        proxy = Proxy([f"unix:{backend.sock_path}"], workers=1, tls=True)
        self.addCleanup(proxy.stop)
        self.assertEqual(curl(proxy, "h2-tls", "/hello").status, 200)
        self.assertEqual(curl(proxy, "h1-tls", "/hello").status, 200)
        with socket.create_connection(("127.0.0.1", proxy.tls_port)) as s:
            s.sendall(b"GET / HTTP/1.1\r\n\r\n")  # plain HTTP on the TLS port: a failed handshake
            self.assertTrue(s.recv(100).startswith(b"HTTP/1.1 400 "))  # nginx's clear-text 400
        # An h2c connection held open shows in the gauge while it lives.
        held = socket.create_connection(("127.0.0.1", proxy.port))
        self.addCleanup(held.close)
        held.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        text = harness.wait_until(
            lambda: (lambda t: t if sample(t, "portico_client_connections", protocol="h2",
                                           tls="false") == 1 else None)(
                get(proxy.admin_port, "/metrics")[1]),
            what="the h2c connection in the gauge")
        self.assertEqual(sample(text, "portico_tls_handshakes_total", result="ok"), 2)
        self.assertGreaterEqual(sample(text, "portico_tls_handshakes_total", result="failed"), 1)
        self.assertEqual(sample(text, "portico_h2_streams_active"), 0)


class QueueMetrics(unittest.TestCase):
    def test_queue_depth_and_wait_move_when_connections_are_short(self):
        backend = harness.Backend(workers=2, unix=True)
        self.addCleanup(backend.stop)
        # One connection for the whole proxy, four requests of 300 ms: three wait in the proxy.
        proxy = Proxy([f"unix:{backend.sock_path}"], workers=1,
                      cluster_options={"max_connections": 1, "queue_timeout": 10})
        self.addCleanup(proxy.stop)
        results = []
        threads = [threading.Thread(target=lambda: results.append(
            curl(proxy, "h1", "/delay?ms=300").status)) for _ in range(4)]
        for t in threads:
            t.start()
        depth = harness.wait_until(
            lambda: sample(get(proxy.admin_port, "/metrics")[1], "portico_upstream_queue_depth",
                           cluster="app") or None, what="a queue")
        self.assertGreaterEqual(depth, 1)
        text = get(proxy.admin_port, "/metrics")[1]
        self.assertEqual(sample(text, "portico_upstream_connections", state="busy"), 1)
        for t in threads:
            t.join(timeout=30)
        self.assertEqual(results, [200] * 4)
        text = get(proxy.admin_port, "/metrics")[1]
        self.assertEqual(sample(text, "portico_upstream_queue_depth", cluster="app"), 0)
        self.assertEqual(sample(text, "portico_upstream_queue_wait_seconds_count", cluster="app"), 4)
        # The last in line waited for three others: at least 0.5 s, beyond the 0.5 s bound.
        waited_long = (sample(text, "portico_upstream_queue_wait_seconds_count", cluster="app") -
                       sample(text, "portico_upstream_queue_wait_seconds_bucket", cluster="app",
                              le="0.5"))
        self.assertGreaterEqual(waited_long, 1)


if __name__ == "__main__":
    unittest.main()
