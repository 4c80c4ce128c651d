"""portico-backend's master: shared counters across workers, respawn after a crash, graceful
restart (HUP) and stop (TERM), immediate stop (INT), worker count changes (TTIN/TTOU), and
retirement after --max-requests."""
import http.client
import os
import re
import signal
import socket
import tempfile
import threading
import time
import unittest

import harness
from harness import (Backend, Hammer, connection, exchange_raw, pid_alive, read_http1_response,
                     wait_until)

HELLO = b"hello world\n"


def get(port, path, timeout=10):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def counter(port, key):
    status, body = get(port, f"/counter?id={key}")
    assert status == 200, (status, body)
    m = re.fullmatch(rb'\{"counter":(\d+)\}', body)
    assert m, body
    return int(m.group(1))


def port_closed(port):
    return not harness.port_open("127.0.0.1", port)


class InFlight:
    """A request that the worker has certainly read when start() returns: it is pipelined
    behind a /hello in one write, and the worker parses both in the same read before it
    answers the /hello."""

    def __init__(self, port, path):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=15)
        self.f = self.sock.makefile("rb")
        self.sock.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"
                          b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        first = read_http1_response(self.f)
        assert first.status == 200 and first.body == HELLO, first

    def finish(self):
        """The in-flight request's response, and whether the server closed afterwards."""
        try:
            resp = read_http1_response(self.f)
            closed = self.f.read(1) == b""
        finally:
            self.f.close()
            self.sock.close()
        return resp, closed


class CounterTest(unittest.TestCase):
    def test_200_parallel_clients_over_4_workers(self):
        with Backend(workers=4) as b:
            self.assertEqual(len(b.worker_pids()), 4)
            start = counter(b.port, "parallel")
            barrier = threading.Barrier(200)
            values, errors = [], []
            lock = threading.Lock()

            def client():
                try:
                    barrier.wait(timeout=20)
                    v = counter(b.port, "parallel")
                    with lock:
                        values.append(v)
                except Exception as e:  # noqa: BLE001 - reported below
                    with lock:
                        errors.append(repr(e))

            threads = [threading.Thread(target=client) for _ in range(200)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=60)
            self.assertEqual(errors, [])
            # Every increment landed exactly once: 200 distinct values, no gap, no repeat.
            self.assertEqual(sorted(values), list(range(start + 1, start + 201)))
            self.assertEqual(counter(b.port, "parallel"), start + 201)


class CrashTest(unittest.TestCase):
    def test_kill_9_worker_is_respawned_and_counter_intact(self):
        with Backend(workers=2) as b:
            for _ in range(5):
                last = counter(b.port, "crash")
            victim = b.worker_pids()[0]
            survivor = b.worker_pids()[1]
            os.kill(victim, signal.SIGKILL)
            b.wait_log(f"worker {victim} killed by signal 9")
            pids = wait_until(lambda: (p := b.worker_pids()) and len(p) == 2 and
                              victim not in p and p, what="a respawned worker")
            self.assertIn(survivor, pids)
            new = [p for p in pids if p != survivor][0]
            b.wait_log(f"worker {new} started")
            self.assertIn("respawning", b.read_log())
            # The count lives in the master's shared memory: the crash lost nothing.
            for i in range(1, 6):
                self.assertEqual(counter(b.port, "crash"), last + i)

    def test_workers_exit_when_the_master_dies(self):
        b = Backend(workers=2)
        self.addCleanup(b.stop)
        pids = b.worker_pids()
        os.kill(b.pid, signal.SIGKILL)
        b.proc.wait(timeout=10)
        wait_until(lambda: not any(pid_alive(p) for p in pids), timeout=10,
                   what="orphaned workers to exit")


class RestartTest(unittest.TestCase):
    def test_sighup_under_load_loses_no_request(self):
        with Backend(workers=2) as b, Hammer(b.port, threads=6) as h:
            wait_until(lambda: h.count() >= 100, timeout=20, what="load to start")
            for restart in range(1, 3):
                old = set(b.worker_pids())
                b.signal(signal.SIGHUP)
                b.wait_log("graceful restart", count=restart)
                wait_until(lambda: (p := set(b.worker_pids())) and len(p) == 2 and
                           not (p & old), timeout=20, what="old workers replaced")
                served = h.count()
                wait_until(lambda: h.count() >= served + 100, timeout=20,
                           what="the new workers to serve")
            h.stop()
            self.assertEqual(h.failures, [])
            # Idle keep-alive connections of old workers stay open for a grace period, so not
            # even a retry on a reused connection was needed.
            self.assertEqual(h.retried, 0)
            self.assertGreater(h.count(), 300)
        self.assertEqual(b.proc.returncode, 0)

    def test_sigterm_lets_in_flight_requests_complete(self):
        b = Backend("--keepalive-timeout", "20", workers=2)
        self.addCleanup(b.stop)
        inflight = [InFlight(b.port, "/delay?ms=600") for _ in range(6)]
        # A download already streaming on a keep-alive connection when TERM arrives.
        dl = http.client.HTTPConnection("127.0.0.1", b.port, timeout=15)
        self.addCleanup(dl.close)
        dl.request("GET", "/bytes?n=4000000")
        dl_resp = dl.getresponse()
        first = dl_resp.read(1000)
        t0 = time.monotonic()
        b.signal(signal.SIGTERM)
        b.wait_log("graceful stop")
        results = [f.finish() for f in inflight]
        rest = dl_resp.read()
        dl.close()
        self.assertEqual(len(first) + len(rest), 4000000)
        for resp, closed in results:
            self.assertEqual((resp.status, resp.body), (200, HELLO))
            self.assertEqual(resp.header("connection"), "close")
            self.assertTrue(closed)
        self.assertEqual(b.proc.wait(timeout=15), 0)
        # Neither the idle download connection (keep-alive 20 s) nor anything else held it up.
        self.assertLess(time.monotonic() - t0, 5)
        self.assertTrue(port_closed(b.port))
        self.assertIn("stopped", b.read_log())

    def test_repeated_signals_do_not_cut_draining_workers(self):
        b = Backend("--keepalive-timeout", "20", workers=1)
        self.addCleanup(b.stop)
        slow = InFlight(b.port, "/delay?ms=1500")
        for restart in (1, 2):  # each HUP sends TERM to every older worker again
            b.signal(signal.SIGHUP)
            b.wait_log(f"started (generation {restart})")
        b.signal(signal.SIGTERM)
        b.wait_log("graceful stop")
        # A restart or more workers asked for while stopping start nothing.
        b.signal(signal.SIGHUP)
        b.signal(signal.SIGTTIN)
        resp, closed = slow.finish()
        self.assertEqual((resp.status, resp.body), (200, HELLO))
        self.assertTrue(closed)
        t0 = time.monotonic()
        self.assertEqual(b.proc.wait(timeout=15), 0)
        self.assertLess(time.monotonic() - t0, 5)
        log = b.read_log()
        self.assertNotIn("generation 3", log)
        self.assertEqual(log.count("graceful restart"), 2)
        self.assertNotIn("killed by signal", log)

    def test_graceful_stop_not_held_by_a_client_gone_mid_body(self):
        # The client sends a head and part of a chunked body, reads the answer and closes.
        b = Backend("--graceful-timeout", "20", workers=1)
        self.addCleanup(b.stop)
        with connection(b.port, 5) as (s, f):
            s.sendall(b"POST /hello HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                      b"5\r\nhello\r\n")
            self.assertEqual(read_http1_response(f).status, 200)
        self.assertEqual(get(b.port, "/hello"), (200, HELLO))
        t0 = time.monotonic()
        self.assertEqual(b.stop(), 0)
        self.assertLess(time.monotonic() - t0, 5)

    def test_pid_file_written_and_removed(self):
        d = tempfile.mkdtemp(prefix="portico-pid-")
        self.addCleanup(os.rmdir, d)
        path = os.path.join(d, "backend.pid")
        b = Backend("--pid-file", path, workers=1)
        self.addCleanup(b.stop)
        with open(path) as f:
            self.assertEqual(int(f.read()), b.pid)
        self.assertEqual(b.stop(), 0)
        self.assertFalse(os.path.exists(path))

    def test_sigint_stops_at_once(self):
        b = Backend("--graceful-timeout", "30", workers=2)
        self.addCleanup(b.stop)
        pids = b.worker_pids()
        slow = InFlight(b.port, "/delay?ms=20000")
        t0 = time.monotonic()
        b.signal(signal.SIGINT)
        self.assertEqual(b.proc.wait(timeout=10), 0)
        self.assertLess(time.monotonic() - t0, 3)
        try:
            resp, _ = slow.finish()
        except ConnectionResetError:
            resp = None
        self.assertIsNone(resp)  # the in-flight request was cut, not waited for
        wait_until(lambda: not any(pid_alive(p) for p in pids), what="workers gone")
        self.assertTrue(port_closed(b.port))
        self.assertIn("immediate stop", b.read_log())


class WorkerCountTest(unittest.TestCase):
    def test_ttin_and_ttou(self):
        with Backend(workers=2) as b:
            b.signal(signal.SIGTTIN)
            b.wait_log("workers: 3")
            wait_until(lambda: len(b.worker_pids()) == 3, what="a third worker")
            b.signal(signal.SIGTTIN)
            b.wait_log("workers: 4")
            wait_until(lambda: len(b.worker_pids()) == 4, what="a fourth worker")
            four = set(b.worker_pids())
            b.signal(signal.SIGTTOU)
            b.wait_log("workers: 3")
            wait_until(lambda: len(b.worker_pids()) == 3, what="one worker fewer")
            self.assertLess(set(b.worker_pids()), four)  # retired, not replaced
            for n in (2, 1):  # one at a time: pending signals of one kind merge into one
                b.signal(signal.SIGTTOU)
                b.wait_log(f"workers: {n}")
            wait_until(lambda: len(b.worker_pids()) == 1, what="a single worker")
            # The last worker is never retired by TTOU.
            b.signal(signal.SIGTTOU)
            b.wait_log("workers: 1", count=2)
            b.signal(signal.SIGTTIN)
            b.wait_log("workers: 2", count=2)
            wait_until(lambda: len(b.worker_pids()) == 2, what="two workers again")
            self.assertEqual(get(b.port, "/hello"), (200, HELLO))
            self.assertNotIn("workers: 0", b.read_log())


class MaxRequestsTest(unittest.TestCase):
    def test_retiring_response_says_connection_close(self):
        with Backend("--max-requests", "5", workers=1) as b:
            first = b.worker_pids()
            with connection(b.port, 10) as (s, f):
                for i in range(1, 6):
                    s.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
                    r = read_http1_response(f)
                    self.assertEqual((r.status, r.body), (200, HELLO))
                    self.assertEqual(r.header("connection"), "close" if i == 5 else None, i)
                self.assertEqual(f.read(1), b"")
            b.wait_log("started (generation", count=2)
            wait_until(lambda: (p := b.worker_pids()) and p != first and len(p) == 1,
                       what="the retired worker replaced")
            self.assertNotIn("respawning", b.read_log())  # a retirement is not a crash
            # The replacement retires after its own 5 requests too, on fresh connections.
            second = b.worker_pids()
            closes = []
            for i in range(5):
                out, _ = exchange_raw(b.port, b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n",
                                      timeout=10, wait_close=False)
                closes.append(out[0].header("connection"))
            self.assertEqual(closes, [None] * 4 + ["close"])
            wait_until(lambda: (p := b.worker_pids()) and p != second and len(p) == 1,
                       what="the second worker replaced")

    def test_min_requests_jitter(self):
        # Each worker's limit is drawn from [3, 6]: several lifetimes, each inside the range,
        # and not all the same (8 equal draws of 4 values: 1 in 16384 by chance).
        with Backend("--min-requests", "3", "--max-requests", "6", workers=1) as b:
            lifetimes = []
            for _ in range(8):
                pids = b.worker_pids()
                with connection(b.port, 10) as (s, f):
                    for i in range(1, 8):
                        s.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
                        r = read_http1_response(f)
                        if r.header("connection") == "close":
                            break
                    self.assertEqual(r.header("connection"), "close")
                    self.assertEqual(f.read(1), b"")
                lifetimes.append(i)
                wait_until(lambda: (p := b.worker_pids()) and p != pids and len(p) == 1,
                           what="the retired worker replaced")
            self.assertTrue(all(3 <= n <= 6 for n in lifetimes), lifetimes)
            self.assertGreater(len(set(lifetimes)), 1, lifetimes)

if __name__ == "__main__":
    unittest.main()
