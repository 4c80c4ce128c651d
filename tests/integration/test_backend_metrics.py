"""portico-backend's --admin: /metrics sums every worker's requests by app and status class
(through the master's shared memory), passes promtool, counts worker restarts by cause (crash,
max_requests, hup) without losing a dead worker's counts, and shows busy and idle workers;
/healthz answers; other paths and methods do not."""
import http.client
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import unittest

import harness
from harness import Backend, port_open, read_http1_response, wait_until

HELLO = b"hello world\n"
APPS = {"hello", "counter", "echo", "status", "delay", "bytes", "headers", "static", "not_found"}


def get(port, path, method="GET", timeout=10):
    """One request on a fresh connection: (status, headers, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path)
        resp = conn.getresponse()
        return resp.status, dict((k.lower(), v) for k, v in resp.getheaders()), resp.read()
    finally:
        conn.close()


sample = harness.metric_sample


class AdminBackend(Backend):
    """A backend with --admin on a fresh loopback port of its own."""

    def __init__(self, *args, workers=2, unix=False):
        self.admin_port = harness.free_port()
        super().__init__("--admin", f"127.0.0.1:{self.admin_port}", *args, workers=workers,
                         unix=unix)
        if not port_open("127.0.0.1", self.admin_port):  # bound before any worker was forked
            log = self.read_log()
            self.stop()
            raise AssertionError(f"no admin port: {log}")

    def scrape(self):
        status, headers, body = get(self.admin_port, "/metrics")
        assert status == 200, (status, body)
        assert headers["content-type"].startswith("text/plain; version=0.0.4"), headers
        return body.decode()

    def value(self, name, **labels):
        return sample(self.scrape(), name, **labels)

    def requests(self, app, status_class):
        return self.value("portico_backend_requests_total", app=app, status_class=status_class)

    def restarts(self, cause):
        return self.value("portico_backend_worker_restarts_total", cause=cause)

    def worker_states(self):
        text = self.scrape()
        return (sample(text, "portico_backend_workers", state="busy"),
                sample(text, "portico_backend_workers", state="idle"))


def send(port, path, n, expect_status):
    """n requests, half on fresh connections and half on one keep-alive connection, so that
    both workers are likely to serve some."""
    keep = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        for i in range(n):
            if i % 2:
                keep.request("GET", path)
                resp = keep.getresponse()
                status = resp.status
                resp.read()
            else:
                status = get(port, path)[0]
            assert status == expect_status, (path, status)
    finally:
        keep.close()


class MetricsTest(unittest.TestCase):
    def setUp(self):
        self.b = AdminBackend(workers=2)
        self.addCleanup(self.b.stop)

    def send_known_mix(self):
        send(self.b.port, "/hello", 7, 200)
        send(self.b.port, "/status/503", 3, 503)
        send(self.b.port, "/status/204", 2, 204)
        send(self.b.port, "/no/such/app", 4, 404)
        send(self.b.port, "/counter?id=metrics", 5, 200)
        send(self.b.port, "/status/x", 1, 400)
        send(self.b.port, "/delay?ms=60", 2, 200)

    def test_counts_by_app_and_status_class(self):
        self.send_known_mix()
        text = self.b.scrape()
        expected = {
            ("hello", "2xx"): 7, ("hello", "4xx"): 0, ("hello", "5xx"): 0,
            ("status", "5xx"): 3, ("status", "2xx"): 2, ("status", "4xx"): 1,
            ("not_found", "4xx"): 4, ("not_found", "2xx"): 0,
            ("counter", "2xx"): 5, ("delay", "2xx"): 2, ("echo", "2xx"): 0,
        }
        got = {k: sample(text, "portico_backend_requests_total", app=k[0], status_class=k[1])
               for k in expected}
        self.assertEqual(got, expected)
        hist = "portico_backend_request_duration_seconds"
        for app, n in (("hello", 7), ("status", 6), ("not_found", 4), ("counter", 5),
                       ("delay", 2), ("bytes", 0)):
            self.assertEqual(sample(text, hist + "_count", app=app), n, app)
            self.assertEqual(sample(text, hist + "_bucket", app=app, le="+Inf"), n, app)
        # The two delays took at least their 60 ms each; a hello takes far less than 60 ms.
        self.assertGreaterEqual(sample(text, hist + "_sum", app="delay"), 0.12)
        self.assertLess(sample(text, hist + "_sum", app="hello"), 0.42)
        self.assertEqual(sample(text, "portico_backend_workers_configured"), 2)
        self.assertEqual(sample(text, "portico_backend_workers", state="busy") +
                         sample(text, "portico_backend_workers", state="idle"), 2)
        self.assertEqual(sample(text, "portico_backend_build_info"), 1)
        for cause in ("crash", "max_requests", "hup"):
            self.assertEqual(sample(text, "portico_backend_worker_restarts_total", cause=cause),
                             0, cause)
        # Labels come from the fixed set of apps, never from the request.
        self.assertEqual(set(re.findall(r'app="([^"]*)"', text)), APPS)

    def test_promtool_accepts_the_exposition(self):
        harness.need("promtool")
        self.send_known_mix()
        text = self.b.scrape()
        check = subprocess.run(["promtool", "check", "metrics"], input=text, text=True,
                               capture_output=True)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)

    def test_healthz_and_other_paths(self):
        status, _, body = get(self.b.admin_port, "/healthz")
        self.assertEqual((status, body), (200, b"ok\n"))
        self.assertEqual(get(self.b.admin_port, "/nope")[0], 404)
        status, headers, _ = get(self.b.admin_port, "/metrics", method="POST")
        self.assertEqual(status, 405)
        self.assertEqual(headers["allow"], "GET, HEAD")
        status, headers, body = get(self.b.admin_port, "/metrics", method="HEAD")
        self.assertEqual((status, body), (200, b""))
        self.assertGreater(int(headers["content-length"]), 1000)
        # A client that sends half a request and goes silent holds up neither the other
        # clients nor the master's supervision.
        with socket.create_connection(("127.0.0.1", self.b.admin_port), timeout=10) as slow:
            slow.sendall(b"GET /metr")
            self.assertEqual(get(self.b.admin_port, "/healthz")[0], 200)
            victim = self.b.worker_pids()[0]
            os.kill(victim, signal.SIGKILL)
            wait_until(lambda: self.b.restarts("crash") == 1, what="the crash counted")
            # ...and is answered 408 at the admin's 5 s header deadline, then closed (the
            # server core's answer; the master's own poll() server dropped it unanswered).
            slow.settimeout(15)
            got = b""
            while chunk := slow.recv(4096):
                got += chunk
            self.assertTrue(got.startswith(b"HTTP/1.1 408 "), got[:80])

    def test_admin_speaks_the_strict_http1_of_the_server_core(self):
        # One HTTP stack: bare LF line ends, which the master's own parser took, are refused
        # as everywhere else; a query string is no part of the path.
        out, closed = harness.exchange_raw(self.b.admin_port,
                                           b"GET /healthz HTTP/1.1\nHost: x\n\n")
        self.assertEqual([r.status for r in out], [400])
        self.assertTrue(closed)
        status, _, body = get(self.b.admin_port, "/healthz?probe=1")
        self.assertEqual((status, body), (200, b"ok\n"))

    def test_busy_and_idle_workers(self):
        self.assertEqual(self.b.worker_states(), (0, 2))
        with socket.create_connection(("127.0.0.1", self.b.port), timeout=10) as s:
            s.sendall(b"GET /delay?ms=60000 HTTP/1.1\r\nHost: x\r\n\r\n")
            busy, idle = wait_until(lambda: (w := self.b.worker_states())[0] >= 1 and w,
                                    what="a busy worker")
            self.assertEqual((busy, idle), (1, 1))
            # The client resets the connection: the request ends unanswered (counted as
            # 4xx, like nginx's 499) and the worker is idle again.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        wait_until(lambda: self.b.worker_states() == (0, 2), what="both workers idle")
        self.assertEqual(self.b.requests("delay", "4xx"), 1)
        self.assertEqual(self.b.requests("delay", "2xx"), 0)
        # A request answered later is busy until its answer.
        with socket.create_connection(("127.0.0.1", self.b.port), timeout=10) as s:
            f = s.makefile("rb")
            s.sendall(b"GET /delay?ms=2500 HTTP/1.1\r\nHost: x\r\n\r\n")
            wait_until(lambda: self.b.worker_states()[0] == 1, what="a busy worker")
            resp = read_http1_response(f)
            self.assertEqual((resp.status, resp.body), (200, HELLO))
            f.close()
        wait_until(lambda: self.b.worker_states() == (0, 2), what="both workers idle")
        self.assertEqual(self.b.requests("delay", "2xx"), 1)


class OtherAppsTest(unittest.TestCase):
    def tmp(self):
        d = tempfile.mkdtemp(prefix="portico-metrics-")
        self.addCleanup(shutil.rmtree, d, True)
        return d

    def test_h2c_streams_and_streaming_apps(self):
        harness.need("nghttp")  # curl 7.88.1 cannot reuse an h2c prior-knowledge connection
        b = AdminBackend(workers=2)
        self.addCleanup(b.stop)
        # One connection, the streams multiplexed (nghttp drops a repeated URI: each differs).
        urls = ([f"{b.url}/hello?{i}" for i in range(3)] +
                [f"{b.url}/status/404?{i}" for i in range(2)] + [f"{b.url}/bytes?n=300000"])
        out = subprocess.run(["nghttp", "-n", "-s", *urls], capture_output=True, text=True,
                             timeout=30)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        body = os.path.join(self.tmp(), "body")
        with open(body, "wb") as f:
            f.write(b"x" * 5000)
        out = subprocess.run(["nghttp", "-d", body, f"{b.url}/echo"], capture_output=True,
                             timeout=30)
        self.assertEqual((out.returncode, out.stdout), (0, b"x" * 5000), out.stderr)
        # An HTTP/2 stream closes a moment after its last frame is written: poll.
        wait_until(lambda: (b.requests("hello", "2xx"), b.requests("status", "4xx"),
                            b.requests("bytes", "2xx"), b.requests("echo", "2xx")) ==
                   (3, 2, 1, 1), what="the h2c requests counted")
        wait_until(lambda: b.worker_states() == (0, 2), what="both workers idle")

    def test_static_files(self):
        root = self.tmp()
        os.mkdir(os.path.join(root, "dir"))
        with open(os.path.join(root, "a.txt"), "w") as f:
            f.write("a\n")
        with open(os.path.join(root, "big.bin"), "wb") as f:
            f.write(b"b" * 1_000_000)  # streamed, not cached
        b = AdminBackend("--document-root", root, workers=1)
        self.addCleanup(b.stop)
        self.assertEqual(get(b.port, "/a.txt")[0], 200)
        self.assertEqual(len(get(b.port, "/big.bin")[2]), 1_000_000)
        self.assertEqual(get(b.port, "/missing")[0], 404)
        self.assertEqual(get(b.port, "/dir")[0], 301)
        self.assertEqual(get(b.port, "/hello")[0], 200)  # the apps come first
        wait_until(lambda: (b.requests("static", "2xx"), b.requests("static", "3xx"),
                            b.requests("static", "4xx"), b.requests("not_found", "4xx")) ==
                   (2, 1, 1, 0), what="static files counted")
        self.assertEqual(b.requests("hello", "2xx"), 1)


class RestartsTest(unittest.TestCase):
    def test_crash_counted_and_the_dead_workers_counts_kept(self):
        b = AdminBackend(workers=2)
        self.addCleanup(b.stop)
        send(b.port, "/hello", 10, 200)
        self.assertEqual(b.requests("hello", "2xx"), 10)
        for victim in b.worker_pids():  # each worker's slot is reused by its replacement
            os.kill(victim, signal.SIGKILL)
            b.wait_log(f"worker {victim} killed by signal 9")
        wait_until(lambda: b.restarts("crash") == 2, what="two crashes counted")
        wait_until(lambda: len(b.worker_pids()) == 2, timeout=20, what="workers respawned")
        self.assertEqual(b.requests("hello", "2xx"), 10)  # counters never go down
        send(b.port, "/hello", 5, 200)
        self.assertEqual(b.requests("hello", "2xx"), 15)
        self.assertEqual((b.restarts("hup"), b.restarts("max_requests")), (0, 0))

    def test_hup_counted_once_per_replaced_worker(self):
        b = AdminBackend(workers=2)
        self.addCleanup(b.stop)
        send(b.port, "/hello", 4, 200)
        old = set(b.worker_pids())
        b.signal(signal.SIGHUP)
        wait_until(lambda: b.restarts("hup") == 2, what="the HUP counted")
        wait_until(lambda: not (set(b.worker_pids()) & old), what="old workers gone")
        b.signal(signal.SIGHUP)
        wait_until(lambda: b.restarts("hup") == 4, what="the second HUP counted")
        self.assertEqual((b.restarts("crash"), b.restarts("max_requests")), (0, 0))
        self.assertEqual(b.requests("hello", "2xx"), 4)
        send(b.port, "/hello", 2, 200)
        self.assertEqual(b.requests("hello", "2xx"), 6)
        self.assertEqual(b.worker_states(), (0, 2))

    def test_max_requests_counted(self):
        b = AdminBackend("--max-requests", "3", workers=1)
        self.addCleanup(b.stop)
        for _ in range(7):
            self.assertEqual(get(b.port, "/hello")[0], 200)
        # Workers 1 and 2 retired after 3 requests each; worker 3 has served 1.
        wait_until(lambda: b.restarts("max_requests") == 2, what="two retirements counted")
        self.assertEqual(b.requests("hello", "2xx"), 7)
        self.assertEqual((b.restarts("crash"), b.restarts("hup")), (0, 0))

    def test_ttou_is_not_a_restart(self):
        b = AdminBackend(workers=3)
        self.addCleanup(b.stop)
        b.signal(signal.SIGTTOU)
        b.wait_log("workers: 2")
        wait_until(lambda: len(b.worker_pids()) == 2, what="one worker fewer")
        wait_until(lambda: sum(b.worker_states()) == 2, what="two workers in the gauges")
        text = b.scrape()
        self.assertEqual(sample(text, "portico_backend_workers_configured"), 2)
        for cause in ("crash", "max_requests", "hup"):
            self.assertEqual(sample(text, "portico_backend_worker_restarts_total", cause=cause),
                             0, cause)


class AdminAddressTest(unittest.TestCase):
    def test_admin_port_taken_is_an_error_at_start(self):
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            out = subprocess.run([harness.BACKEND, "--listen", f"127.0.0.1:{harness.free_port()}",
                                  "--workers", "1", "--admin", f"127.0.0.1:{port}"],
                                 capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("admin address", out.stderr)
        self.assertNotIn("worker", out.stderr)  # nothing was forked

    def test_help_lists_admin(self):
        out = subprocess.run([harness.BACKEND, "--help"], capture_output=True, text=True,
                             timeout=30)
        self.assertEqual(out.returncode, 0)
        self.assertIn("--admin HOST:PORT", out.stdout)


if __name__ == "__main__":
    unittest.main()
