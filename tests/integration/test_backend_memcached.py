"""portico-backend's counter app on a real memcached (--store memcached://HOST:PORT): counts
shared by all workers, a 503 with a JSON error while memcached is down (never a wrong number),
recovery when it comes back, and a memcached that stops answering never stalls the worker's
other requests (the client is non-blocking, on the worker's loop)."""
import http.client
import json
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
import unittest

import harness
from harness import Backend, Process, free_port, port_open, wait_until


class Memcached(Process):
    def __init__(self, port, log_path):
        cmd = ["memcached", "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-m", "16", "-t", "1"]
        if os.geteuid() == 0:
            cmd += ["-u", "root"]  # memcached refuses root without naming a user
        super().__init__(cmd, log_path)
        self.port = port
        try:
            wait_until(lambda: self.proc.poll() is not None or port_open("127.0.0.1", port),
                       what=f"memcached on port {port}")
            if self.proc.poll() is not None:
                raise AssertionError(f"memcached exited: {self.read_log()}")
        except BaseException:
            self.stop()
            raise

    def get(self, key):
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            s.sendall(b"get %s\r\n" % key.encode())
            data = b""
            while not data.endswith(b"END\r\n"):
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        lines = data.split(b"\r\n")
        return int(lines[1]) if lines[0].startswith(b"VALUE") else None


def counter(port, key, timeout=10):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", f"/counter?id={key}")
        resp = conn.getresponse()
        return resp.status, resp.getheader("content-type"), json.loads(resp.read())
    finally:
        conn.close()


class MemcachedStoreTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need("memcached")

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="portico-mc-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.mc_port = free_port()
        self.mc = self.start_memcached()
        self.backend = Backend("--store", f"memcached://127.0.0.1:{self.mc_port}", workers=4)
        self.addCleanup(self.backend.stop)

    def start_memcached(self):
        mc = Memcached(self.mc_port, os.path.join(self.tmp, f"mc{time.monotonic_ns()}.log"))
        self.addCleanup(mc.stop)
        return mc

    def test_counts_are_shared_by_all_workers(self):
        values, errors = [], []
        lock = threading.Lock()
        barrier = threading.Barrier(100)

        def client():
            try:
                barrier.wait(timeout=20)
                status, ctype, body = counter(self.backend.port, "shared")
                with lock:
                    values.append((status, ctype, body))
            except Exception as e:  # noqa: BLE001 - reported below
                with lock:
                    errors.append(repr(e))

        threads = [threading.Thread(target=client) for _ in range(100)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        self.assertEqual(errors, [])
        self.assertEqual({(s, c) for s, c, _ in values}, {(200, "application/json")})
        self.assertEqual(sorted(b["counter"] for _, _, b in values), list(range(1, 101)))
        # The count lives in memcached, under the documented key.
        self.assertEqual(self.mc.get("counter:shared"), 100)

    def test_memcached_down_answers_503_then_recovers(self):
        for i in range(1, 4):
            self.assertEqual(counter(self.backend.port, "outage")[2], {"counter": i})
        self.mc.stop()
        self.assertFalse(port_open("127.0.0.1", self.mc_port))
        # Every worker, on fresh connections: an error, quickly, never a number.
        for _ in range(12):
            t0 = time.monotonic()
            status, ctype, body = counter(self.backend.port, "outage")
            self.assertLess(time.monotonic() - t0, 3)
            self.assertEqual((status, ctype), (503, "application/json"), body)
            self.assertNotIn("counter", body)
            self.assertIn("counter store unavailable", body["error"])
        # The worker processes stayed up through the outage.
        self.assertEqual(len(self.backend.worker_pids()), 4)
        self.assertNotIn("respawning", self.backend.read_log())
        # memcached comes back (empty: it keeps nothing across a restart).
        self.mc = self.start_memcached()
        # Workers find it again within the client's retry time (1 s), each on its own:
        # until 12 answers in a row are numbers, a 503 may still come, but never a wrong number.
        answers = []

        def recovered():
            status, _, body = counter(self.backend.port, "outage")
            self.assertIn(status, (200, 503), body)
            answers.append(body.get("counter"))
            return len(answers) >= 12 and None not in answers[-12:]

        wait_until(recovered, timeout=15, what="every worker to count again")
        values = [v for v in answers if v is not None]
        self.assertEqual(values, list(range(values[0], values[0] + len(values))))
        self.assertEqual(values[0], 1)
        self.assertEqual(self.mc.get("counter:outage"), values[-1])


def unread_by(port):
    """Bytes waiting in the receive queues of port's accepted TCP connections: established, or
    closed by the other side (CLOSE-WAIT, "08"), where they stay unread all the same: the
    worker gives up after 1 s and closes, and a look that comes later still finds them."""
    return sum(rx for state, _, rx in harness.tcp_sockets(local_port=port)
               if state in ("01", "08"))


class StalledMemcached(unittest.TestCase):
    """memcached stopped (SIGSTOP: connected, silent): one worker, a counter request waiting
    on it, and a /hello on the same worker answered at once all the same."""

    def test_hello_is_not_held_by_a_waiting_counter(self):
        harness.need("memcached")
        tmp = tempfile.mkdtemp(prefix="portico-mc-")
        self.addCleanup(shutil.rmtree, tmp, True)
        port = free_port()
        mc = Memcached(port, os.path.join(tmp, "memcached.log"))
        self.addCleanup(mc.stop)
        backend = Backend("--store", f"memcached://127.0.0.1:{port}", workers=1)
        self.addCleanup(backend.stop)
        self.assertEqual(counter(backend.port, "stall")[2], {"counter": 1})  # connected
        harness.stop_process(mc.pid)
        self.addCleanup(os.kill, mc.pid, signal.SIGCONT)
        result = {}
        waiting = threading.Thread(target=lambda: result.update(c=counter(backend.port, "stall")))
        waiting.start()
        # The worker has sent its incr: it sits unread in the stopped memcached's socket.
        wait_until(lambda: unread_by(port) > 0, what="the incr waiting in memcached's socket")
        t0 = time.monotonic()
        status, body = harness.http_get(backend.port, "/hello", timeout=5)
        hello_took = time.monotonic() - t0
        waiting.join(timeout=10)
        self.assertEqual(status, 200)
        self.assertLess(hello_took, 0.5)  # a blocking client held the worker for its 1 s timeout
        status, _, body = result["c"]
        self.assertEqual(status, 503, body)  # the stalled memcached times out after 1 s
        self.assertIn("did not answer", body["error"])


if __name__ == "__main__":
    unittest.main()
