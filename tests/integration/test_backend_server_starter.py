"""portico-backend under Server::Starter (Debian's libserver-starter-perl): the listening socket
comes from start_server through SERVER_STARTER_PORT, and a HUP to start_server replaces the
whole backend (a new master next to the old, which then stops gracefully) without a failed
request."""
import http.client
import os
import shutil
import signal
import tempfile
import unittest

import harness
from harness import BACKEND, Hammer, Process, free_port, port_open, wait_until

HELLO = b"hello world\n"


class ServerStarterTest(unittest.TestCase):
    def setUp(self):
        harness.need("start_server")
        self.tmp = tempfile.mkdtemp(prefix="portico-starter-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.port = free_port()
        self.status = os.path.join(self.tmp, "status")
        self.starter = Process(["start_server", f"--port=127.0.0.1:{self.port}",
                                f"--status-file={self.status}", "--interval=1", "--",
                                BACKEND, "--workers", "2"],
                               os.path.join(self.tmp, "starter.log"))
        self.addCleanup(self.starter.stop)
        wait_until(lambda: self.starter.proc.poll() is not None or
                   self.starter.read_log().count("started 2 workers") >= 1,
                   what="the backend under start_server")
        self.assertIsNone(self.starter.proc.poll(), self.starter.read_log())
        # start_server records the generation once it has watched it live for --interval.
        wait_until(lambda: len(self.generations()) == 1, what="start_server's status file")

    def generations(self):
        try:
            with open(self.status) as f:
                return [line.split(":") for line in f.read().split()]
        except FileNotFoundError:
            return []

    def test_serves_on_the_inherited_socket(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        self.addCleanup(conn.close)
        conn.request("GET", "/hello")
        self.assertEqual(conn.getresponse().read(), HELLO)
        log = self.starter.read_log()
        self.assertIn(f"listening on 127.0.0.1:{self.port}", log)
        [(gen, pid)] = self.generations()
        self.assertEqual(gen, "1")
        # TERM to start_server stops the backend gracefully and releases the port.
        self.assertEqual(self.starter.stop(), 0)
        self.assertIn("stopped", self.starter.read_log())
        self.assertFalse(port_open("127.0.0.1", self.port))

    def test_hup_restarts_without_failed_requests(self):
        [(_, first)] = self.generations()
        with Hammer(self.port, threads=6) as h:
            wait_until(lambda: h.count() >= 100, timeout=20, what="load to start")
            os.kill(self.starter.pid, signal.SIGHUP)
            # A second backend starts beside the first, then the first stops gracefully.
            wait_until(lambda: (g := self.generations()) and len(g) == 1 and g[0][0] == "2",
                       timeout=20, what="generation 2 alone")
            [(_, second)] = self.generations()
            self.assertNotEqual(first, second)
            served = h.count()
            wait_until(lambda: h.count() >= served + 100, timeout=20,
                       what="the new backend to serve")
            h.stop()
        self.assertEqual(h.failures, [])
        self.assertEqual(h.retried, 0)
        log = self.starter.read_log()
        self.assertIn(f"old worker {first} died, status:0", log)
        self.assertFalse(harness.pid_alive(int(first)))


if __name__ == "__main__":
    unittest.main()
