"""Client connections are bounded (issue 10, item 5): at [server] max_connections or a
listener's max_connections accepting pauses and the rest wait in the kernel's backlog, to be
served once a connection closes; out of file descriptors (ulimit -n 64) the acceptor backs off
instead of spinning on its level-triggered socket, logs it once per interval, answers a request
whose upstream connect finds no descriptor with 503 without holding the endpoint down, and
serves again once clients leave."""
import json
import os
import re
import select
import socket
import time
import unittest

import harness
from proxy_harness import Proxy










def wait_clients(proxy, n):
    harness.wait_until(lambda: json.loads(proxy.admin("/status"))["client_connections"] == n,
                       what=f"{n} connections accepted")


def backlog(port):
    """Connections waiting in the accept queue of the listening socket(s) on port."""
    return sum(rx for state, _, rx in harness.tcp_sockets(local_port=port) if state == "0A")


def accepted(port):
    """The server's ends of established connections on port that the proxy took: those in
    the accept queue are established too."""
    return sum(1 for state, _, _ in harness.tcp_sockets(local_port=port)
               if state == "01") - backlog(port)


def unanswered_request(test, port, close=False):
    """A connection with a request on it that waits in the backlog (the kernel queue says
    so, not a silence) and has had no answer: returned for the test to read it from later."""
    queued = backlog(port)
    waiting = socket.create_connection(("127.0.0.1", port), timeout=10)
    test.addCleanup(waiting.close)
    waiting.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n" +
                    (b"Connection: close\r\n" if close else b"") + b"\r\n")
    harness.wait_until(lambda: backlog(port) > queued, what="the connection in the backlog")
    no_answer_yet(test, [waiting])
    return waiting


def refused(proxy, reason):
    """Waits for the worker to count the connection it left in the backlog: it does so when
    the listening socket wakes it, which can come a moment after the kernel queued it."""
    harness.wait_until(lambda: proxy.metric("portico_client_connections_rejected_total",
                                            reason=reason) >= 1,
                       what=f"a connection refused for {reason}")


def no_answer_yet(test, clients):
    """Nothing has come back on any of clients, now (they wait in the backlog, which the
    proxy does not accept from while the test holds it at its limit)."""
    for c in clients:
        c.setblocking(False)
        with test.assertRaises(BlockingIOError):
            c.recv(1)
        c.setblocking(True)
        c.settimeout(10)


def open_idle(port, n):
    socks = []
    for _ in range(n):
        socks.append(socket.create_connection(("127.0.0.1", port), timeout=10))
    return socks


class ConnectionLimits(unittest.TestCase):
    def setUp(self):
        self.backend = harness.Backend(workers=1)
        self.addCleanup(self.backend.stop)

    def test_a_client_that_has_not_spoken_yet_is_accepted_at_once(self):
        # Its connection is the proxy's from the handshake on: counted, limited and timed by
        # header_timeout. A listener that deferred the accept until the first bytes
        # (TCP_DEFER_ACCEPT) left it half-open in the kernel, where a burst of such clients
        # beyond the backlog (wrk -c8000) fell back to SYN cookies and hung ~1 in 10 for 2 s.
        proxy = Proxy([f"127.0.0.1:{self.backend.port}"], workers=1)
        self.addCleanup(proxy.stop)
        silent = open_idle(proxy.port, 5)
        self.addCleanup(lambda: [s.close() for s in silent])
        # On loopback the handshake is done when connect returns: nothing may wait half-open.
        self.assertEqual([s for s in harness.tcp_sockets(local_port=proxy.port) if s[0] == "03"],
                         [], "connections held half-open (SYN-RECV) by the kernel")
        wait_clients(proxy, 5)

    def test_max_connections_pauses_accepting_and_the_backlog_is_served_later(self):
        proxy = Proxy([f"127.0.0.1:{self.backend.port}"], workers=1,
                      server_options={"max_connections": 5})
        self.addCleanup(proxy.stop)
        idle = open_idle(proxy.port, 5)
        wait_clients(proxy, 5)
        # The sixth waits in the backlog: its request is not answered while the five stay.
        waiting = unanswered_request(self, proxy.port)
        refused(proxy, "max_connections")
        idle[0].close()
        f = waiting.makefile("rb")
        self.addCleanup(f.close)
        r = harness.read_http1_response(f)
        self.assertEqual((r.status, r.body), (200, b"hello world\n"))
        for s in idle[1:]:
            s.close()

    def test_buffer_memory_cap_pauses_accepting_until_buffers_drain(self):
        proxy = Proxy([f"127.0.0.1:{self.backend.port}"], workers=1,
                      server_options={"max_buffer_memory": 2 << 20})
        self.addCleanup(proxy.stop)
        readers = []
        for _ in range(12):  # each holds ~256 KiB of response it does not read
            s = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall(b"GET /bytes?n=100000000 HTTP/1.1\r\nHost: x\r\n\r\n")
            readers.append(s)
        # Well above the cap (the readers hold ~3.3 MB together), so that a block or two
        # coming and going cannot take the level under it while the test looks.
        harness.wait_until(
            lambda: proxy.metric("portico_buffer_bytes") >= 3 << 20,
            what="buffers above the cap")
        waiting = unanswered_request(self, proxy.port, close=True)
        refused(proxy, "buffer_memory")
        for s in readers:
            s.close()
        self.assertTrue(waiting.recv(100).startswith(b"HTTP/1.1 200 "))
        harness.wait_until(
            lambda: proxy.metric("portico_buffer_bytes") < 1 << 20,
            what="buffers given back")

    def test_listener_max_connections(self):
        proxy = Proxy([f"127.0.0.1:{self.backend.port}"], workers=1,
                      listener_options={"max_connections": 2})
        self.addCleanup(proxy.stop)
        idle = open_idle(proxy.port, 2)
        wait_clients(proxy, 2)
        waiting = unanswered_request(self, proxy.port, close=True)
        for s in idle:
            s.close()
        self.assertTrue(waiting.recv(100).startswith(b"HTTP/1.1 200 "))

    def test_fd_limit_sets_the_default_max_connections(self):
        # ulimit -n 64 and 80 clients: the limit leaves room for a few clients (each with an
        # upstream connection); the rest wait in the backlog, nothing spins or fails.
        proxy = Proxy([f"127.0.0.1:{self.backend.port}"], workers=1,
                      command_prefix=["prlimit", "--nofile=64:64"])
        self.addCleanup(proxy.stop)
        limit = int(re.search(r"max_connections (\d+) \(from the open-file limit 64",
                              proxy.read_log()).group(1))
        self.assertGreaterEqual(limit, 1)
        clients = open_idle(proxy.port, 80)
        try:
            wait_clients(proxy, limit)
            cpu, start = harness.cpu_seconds(proxy.pid), time.monotonic()
            time.sleep(2)  # a measuring window, not synchronisation
            used = harness.cpu_seconds(proxy.pid) - cpu
            self.assertLess(used, 0.3 * (time.monotonic() - start), f"{used} s of CPU in 2 s")
            for c in clients:
                c.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            answers = collect_answers(self, clients, limit)
            self.assertEqual(answers, [b"HTTP/1.1 200 OK"] * limit)
        finally:
            for s in clients:
                s.close()
        harness.wait_until(lambda: harness.http_get(proxy.port)[0] == 200, what="serving again")
        ep = json.loads(proxy.admin("/status"))["clusters"][0]["endpoints"][0]
        self.assertEqual((ep["health"], ep["connect_failures"]), ("up", 0))
        self.assertGreaterEqual(proxy.metric("portico_client_connections_rejected_total",
                                             reason="max_connections"), 1)
        self.assertNotIn("Too many open files", proxy.read_log())

    def test_out_of_file_descriptors(self):
        # max_connections set above what the descriptors allow: accept() meets EMFILE.
        env = dict(os.environ,
                   UBSAN_OPTIONS=os.environ.get("UBSAN_OPTIONS", "") + ":halt_on_error=0")
        proxy = Proxy([f"127.0.0.1:{self.backend.port}"], workers=1,
                      server_options={"max_connections": 1000},
                      command_prefix=["prlimit", "--nofile=64:64"], env=env,
                      ignore_reports=[harness.UBSAN_FD_EXHAUSTION])
        self.addCleanup(proxy.stop)
        clients = open_idle(proxy.port, 80)  # more than the proxy has descriptors for
        try:
            harness.wait_until(lambda: "Too many open files" in proxy.read_log(),
                               what="the proxy to run out of descriptors")
            # The acceptor backs off rather than spinning on a socket it cannot accept from.
            cpu, start = harness.cpu_seconds(proxy.pid), time.monotonic()
            time.sleep(2)  # a measuring window, not synchronisation
            used = harness.cpu_seconds(proxy.pid) - cpu
            self.assertLess(used, 0.3 * (time.monotonic() - start), f"{used} s of CPU in 2 s")
            # A request on a connection it did accept needs an upstream descriptor too: 503,
            # never 502 (the endpoint is fine). Those still in the backlog get nothing yet.
            for c in clients:
                c.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            took = accepted(proxy.port)  # (the admin endpoint has no descriptor to answer)
            self.assertGreaterEqual(took, 1)
            answers = collect_answers(self, clients, took)
            self.assertEqual(set(answers), {b"HTTP/1.1 503 Service Unavailable"})
        finally:
            for s in clients:
                s.close()
        # Once they are gone it serves again, and the endpoint was never held down.
        harness.wait_until(lambda: harness.http_get(proxy.port)[0] == 200, what="serving again")
        doc = json.loads(proxy.admin("/status"))
        ep = doc["clusters"][0]["endpoints"][0]
        self.assertEqual((ep["health"], ep["connect_failures"]), ("up", 0))
        text = proxy.admin("/metrics")
        self.assertGreaterEqual(harness.metric_sample(
            text, "portico_client_connections_rejected_total", reason="out_of_resources"), 1)
        # (and more: requests of the backlog's connections, accepted while the others close)
        self.assertGreaterEqual(harness.metric_sample(
            text, "portico_upstream_errors_total", kind="local_resources"), len(answers))
        # Logged once per interval, not once per failed accept.
        self.assertLess(proxy.read_log().count("Too many open files"), 10)


def collect_answers(test, clients, n):
    """The status lines of the n clients the proxy accepted, and none from the rest (in the
    backlog): counted, not taken from a silence."""
    answers, pending = [], list(clients)
    while len(answers) < n:
        ready = select.select(pending, [], [], 10)[0]
        if not ready:
            raise AssertionError(f"{len(answers)} answers of {n} within 10 s")
        for c in ready:
            answers.append(c.recv(100).split(b"\r\n")[0])
            pending.remove(c)
    no_answer_yet(test, pending)
    return answers


if __name__ == "__main__":
    unittest.main()
