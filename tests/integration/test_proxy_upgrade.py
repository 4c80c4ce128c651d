"""SIGUSR2 binary upgrade, as nginx's: the running process starts its program file again (the
binary an operator has just installed over it) with the listening sockets inherited; once
the new process serves, the old one drains and exits. Under wrk (HTTP/1.1), h2load --h1 and
an h2c load that retries what a GOAWAY says was not processed, no request fails, the pid
changes, and /status is answered by the new process. A new binary that cannot start leaves
the old one serving."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import unittest

import harness
import load_clients
from harness import wait_until
from proxy_harness import PORTICO, Proxy, toml_string


class Upgrade(unittest.TestCase):
    def setUp(self):
        self.backend = harness.Backend(workers=2, unix=True)
        self.addCleanup(self.backend.stop)
        self.tmp = tempfile.mkdtemp(prefix="portico-upgrade-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.binary = os.path.join(self.tmp, "portico")
        shutil.copy(PORTICO, self.binary)
        self.pid_file = os.path.join(self.tmp, "portico.pid")
        self.proxy = Proxy([f"unix:{self.backend.sock_path}"], workers=2, binary=self.binary,
                           server_options={"pid_file": toml_string(self.pid_file),
                                           "grace_period": 20})
        self.addCleanup(self.stop_all)

    def stop_all(self):
        # The new process is the old one's child, in its process group: the harness's stop
        # (TERM to the pid it started, then KILL to the group) ends both.
        new_pid = self.pid_in_file()
        if new_pid and new_pid != self.proxy.pid and harness.pid_alive(new_pid):
            os.kill(new_pid, signal.SIGTERM)
            wait_until(lambda: not harness.pid_alive(new_pid), timeout=30, what="the new one gone")
        self.proxy.stop()

    def pid_in_file(self):
        try:
            with open(self.pid_file) as f:
                return int(f.read())
        except (FileNotFoundError, ValueError):
            return None

    def status(self):
        return json.loads(self.proxy.admin("/status"))

    def test_upgrade_under_load_fails_no_request(self):
        old_pid = self.proxy.pid
        url = f"http://127.0.0.1:{self.proxy.port}/hello"
        h1 = load_clients.wrk(url, 300)  # ended below, once the upgrade is over
        self.addCleanup(h1.stop)
        h1b = load_clients.h2load(url, 200000, 8, 1, "--h1")
        self.addCleanup(h1b.stop)
        h2 = load_clients.H2Load(self.proxy.port)
        self.addCleanup(h2.stop)
        wait_until(lambda: self.status()["requests"] > 2000 and h2.total() > 200, timeout=30,
                   what="load flowing")
        self.assertTrue(h1b.running(), "h2load ended before the upgrade began")
        os.kill(old_pid, signal.SIGUSR2)
        wait_until(lambda: "upgrade: pid" in self.proxy.read_log(), timeout=30,
                   what="the new process serving")
        new_pid = int(re.search(r"upgrade: pid (\d+) serves", self.proxy.read_log()).group(1))
        self.assertNotEqual(new_pid, old_pid)
        self.assertEqual(self.proxy.process.proc.wait(timeout=30), 0)  # the old one drained
        self.assertEqual(self.pid_in_file(), new_pid)
        status = self.status()
        self.assertEqual(status["pid"], new_pid)
        self.assertTrue(status["version"])
        before = h2.total()
        wait_until(lambda: h2.total() > before + 500, timeout=30, what="h2c on the new process")
        r2 = h2.stop()
        running, r1 = h1.interrupt()
        r1b = h1b.result()
        self.assertTrue(running, f"wrk ended before the upgrade was over:\n{r1['out']}")
        self.assertEqual(r1["failed"], 0, r1["out"])
        self.assertEqual(r1b["failed"], 0, r1b["out"])
        self.assertEqual(r1b["ok"], 200000, r1b["out"])
        self.assertEqual(r2["failed"], 0, r2)
        self.assertGreater(r2["goaways"], 0, r2)  # the old process did drain its connections
        # Served by the new process alone from here on.
        self.assertEqual(harness.http_get(self.proxy.port)[0], 200)
        self.assertTrue(harness.pid_alive(new_pid))

    def test_a_new_process_that_fails_leaves_the_old_ones_socket_files(self):
        # The old process listens on a unix socket too; the new one inherits it, then fails
        # on a listener the file now adds whose port is taken. It must not take the socket
        # file (the old process still listens on it) nor the pid file with it.
        sock_path = os.path.join(self.tmp, "p.sock")
        with open(self.proxy.config_path, "a") as f:
            f.write(f'\n[[listener]]\naddress = "unix:{sock_path}"\n')
        self.proxy.stop()
        self.proxy = Proxy([f"unix:{self.backend.sock_path}"], workers=2, binary=self.binary,
                           server_options={"pid_file": toml_string(self.pid_file)},
                           extra_config=f'[[listener]]\naddress = "unix:{sock_path}"\n')
        wait_until(lambda: harness.unix_socket_open(sock_path), what="the unix listener")
        busy = socket.socket()
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        self.addCleanup(busy.close)
        with open(self.proxy.config_path, "a") as f:
            f.write(f'\n[[listener]]\naddress = "127.0.0.1:{busy.getsockname()[1]}"\n')
        os.kill(self.proxy.pid, signal.SIGUSR2)
        wait_until(lambda: "before it was ready; still serving" in self.proxy.read_log(),
                   what="the failed upgrade")
        self.assertTrue(os.path.exists(sock_path))
        self.assertTrue(harness.unix_socket_open(sock_path))
        self.assertEqual(self.pid_in_file(), self.proxy.pid)

    def test_a_binary_that_cannot_start_leaves_the_old_one_serving(self):
        os.remove(self.binary)
        with open(self.binary, "w") as f:
            f.write("#!/bin/sh\necho 'new binary: broken' >&2\nexit 3\n")
        os.chmod(self.binary, 0o755)
        r = subprocess.run([PORTICO, "-s", "upgrade", "--pid-file", self.pid_file],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        wait_until(lambda: "exited with status 3 before it was ready; still serving"
                   in self.proxy.read_log(), what="the failed upgrade reported")
        self.assertIsNone(self.proxy.process.proc.poll())
        self.assertEqual(self.status()["pid"], self.proxy.pid)
        self.assertEqual(harness.http_get(self.proxy.port)[0], 200)
        # And a later upgrade, to a binary that works, still can.
        os.remove(self.binary)
        shutil.copy(PORTICO, self.binary)
        os.kill(self.proxy.pid, signal.SIGUSR2)
        self.assertEqual(self.proxy.process.proc.wait(timeout=30), 0)
        self.assertNotEqual(self.status()["pid"], self.proxy.pid)


if __name__ == "__main__":
    unittest.main()
