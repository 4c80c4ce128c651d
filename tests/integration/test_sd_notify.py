"""systemd's Type=notify protocol, with a fake NOTIFY_SOCKET: portico says READY=1 (with a
STATUS=) once its workers run, feeds WATCHDOG=1 at half of WATCHDOG_USEC, and says STOPPING=1
on TERM; on HUP it says RELOADING=1 with MONOTONIC_USEC, then READY=1 once every worker
serves the new configuration; after a USR2 upgrade the old process names the new one
(MAINPID=) and says nothing more about stopping, since the service goes on; portico-backend says READY=1, RELOADING=1 with MONOTONIC_USEC on HUP and READY=1 when
the new workers are forked, and STOPPING=1 on TERM."""
import os
import signal
import shutil
import socket
import tempfile
import time
import unittest

import harness
from proxy_harness import Proxy


class FakeSystemd:
    def __init__(self, abstract=False):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if abstract:
            name = f"portico-test-notify-{os.getpid()}-{time.monotonic_ns()}"
            self.sock.bind("\0" + name)
            self.path = "@" + name
        else:
            self.path = os.path.join(tempfile.mkdtemp(prefix="portico-notify-"), "notify")
            self.sock.bind(self.path)
        self.sock.settimeout(10)

    def close(self):
        self.sock.close()
        if not self.path.startswith("@"):
            shutil.rmtree(os.path.dirname(self.path), ignore_errors=True)

    def next(self):
        return self.sock.recv(4096).decode()

    def wait_for(self, state):
        """Messages until one carrying state (a line such as READY=1); returns that message."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            msg = self.next()
            if state in msg.split("\n"):
                return msg
        raise AssertionError(f"no {state}")


class Notify(unittest.TestCase):
    def test_portico_ready_watchdog_stopping(self):
        backend = harness.Backend(workers=1, unix=True)
        self.addCleanup(backend.stop)
        systemd = FakeSystemd()
        self.addCleanup(systemd.close)
        env = {**os.environ, "NOTIFY_SOCKET": systemd.path, "WATCHDOG_USEC": "400000"}
        proxy = Proxy([f"unix:{backend.sock_path}"], workers=2, env=env)
        self.addCleanup(proxy.stop)
        ready = systemd.wait_for("READY=1")
        self.assertIn("STATUS=serving with 2 workers", ready)
        start = time.monotonic()
        for _ in range(3):
            systemd.wait_for("WATCHDOG=1")
        self.assertLess(time.monotonic() - start, 2)  # every 0.2 s, not once in a while
        os.kill(proxy.process.pid, signal.SIGTERM)
        stopping = systemd.wait_for("STOPPING=1")
        self.assertIn("STATUS=draining", stopping)

    def test_portico_reloading_and_upgrade(self):
        backend = harness.Backend(workers=1, unix=True)
        self.addCleanup(backend.stop)
        systemd = FakeSystemd()
        self.addCleanup(systemd.close)
        env = {**os.environ, "NOTIFY_SOCKET": systemd.path}
        proxy = Proxy([f"unix:{backend.sock_path}"], workers=2, env=env)
        self.addCleanup(proxy.stop)
        systemd.wait_for("READY=1")
        os.kill(proxy.process.pid, signal.SIGHUP)
        reloading = systemd.wait_for("RELOADING=1")
        stamp = int(next(l for l in reloading.split("\n") if l.startswith("MONOTONIC_USEC="))
                    .split("=")[1])
        self.assertLess(abs(stamp / 1e6 - time.clock_gettime(time.CLOCK_MONOTONIC)), 5)
        self.assertIn("(generation 2)", systemd.wait_for("READY=1"))
        os.kill(proxy.process.pid, signal.SIGUSR2)
        handed = systemd.wait_for("READY=1")
        new_pid = int(next(l for l in handed.split("\n") if l.startswith("MAINPID="))
                      .split("=")[1])
        self.assertNotEqual(new_pid, proxy.process.pid)
        self.assertEqual(proxy.process.proc.wait(timeout=30), 0)
        self.assertTrue(harness.pid_alive(new_pid))
        systemd.sock.setblocking(False)
        since = []
        try:
            while True:
                since.append(systemd.next())
        except BlockingIOError:
            pass
        systemd.sock.settimeout(10)
        self.assertFalse([m for m in since if "STOPPING=1" in m.split("\n")], since)
        os.kill(new_pid, signal.SIGTERM)  # the new process is the service now
        self.assertIn("STATUS=draining", systemd.wait_for("STOPPING=1"))
        harness.wait_until(lambda: not harness.pid_alive(new_pid), timeout=30,
                           what="the new process gone")

    def test_backend_ready_reloading_stopping(self):
        systemd = FakeSystemd(abstract=True)
        self.addCleanup(systemd.close)
        backend = harness.Backend(workers=1, env={**os.environ, "NOTIFY_SOCKET": systemd.path})
        self.addCleanup(backend.stop)
        systemd.wait_for("READY=1")
        os.kill(backend.pid, signal.SIGHUP)
        reloading = systemd.wait_for("RELOADING=1")
        stamp = int(next(l for l in reloading.split("\n") if l.startswith("MONOTONIC_USEC="))
                    .split("=")[1])
        self.assertLess(abs(stamp / 1e6 - time.clock_gettime(time.CLOCK_MONOTONIC)), 5)
        self.assertIn("STATUS=serving (generation 1)", systemd.wait_for("READY=1"))
        os.kill(backend.pid, signal.SIGTERM)
        systemd.wait_for("STOPPING=1")


if __name__ == "__main__":
    unittest.main()
