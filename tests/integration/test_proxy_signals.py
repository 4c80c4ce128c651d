"""Signals an nginx operator sends, by kill or by `portico -s` (through [server] pid_file):
USR1 after logrotate's rename reopens the access logs (the lines before go to the renamed
file, the lines after to a new one, none lost); HUP with a broken file says what is wrong and
serves on. Reloads proper are test_proxy_reload's, upgrades (USR2) test_proxy_upgrade's."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import unittest

import harness
import load_clients
from harness import wait_until
from proxy_clients import curl
from proxy_harness import Proxy, toml_string


def lines(path):
    try:
        with open(path) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


class Signals(unittest.TestCase):
    def setUp(self):
        self.backend = harness.Backend(workers=1, unix=True)
        self.addCleanup(self.backend.stop)
        self.tmp = tempfile.mkdtemp(prefix="portico-signals-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.log = os.path.join(self.tmp, "access.log")
        self.pid_file = os.path.join(self.tmp, "portico.pid")
        self.proxy = Proxy([f"unix:{self.backend.sock_path}"], workers=2,
                           listener_options={"access_log": toml_string(self.log)},
                           server_options={"pid_file": toml_string(self.pid_file)})
        self.addCleanup(self.proxy.stop)

    def signal(self, sig):
        os.kill(self.proxy.process.pid, sig)

    def test_usr1_after_a_rename_reopens_the_access_log(self):
        for i in range(3):
            self.assertEqual(curl(self.proxy, "h1", f"/hello?before={i}").status, 200)
        wait_until(lambda: len(lines(self.log)) == 3, what="three lines before the rotation")
        rotated = self.log + ".1"
        os.rename(self.log, rotated)  # logrotate's rename, then its postrotate signal
        self.signal(signal.SIGUSR1)
        wait_until(lambda: os.path.exists(self.log), what="the access log opened anew")
        for i in range(2):
            self.assertEqual(curl(self.proxy, "h2c", f"/hello?after={i}").status, 200)
        wait_until(lambda: len(lines(self.log)) == 2, what="two lines in the new file")
        self.assertTrue(all("before=" in l for l in lines(rotated)), lines(rotated))
        self.assertEqual(len(lines(rotated)), 3)
        self.assertTrue(all("after=" in l for l in lines(self.log)), lines(self.log))
        self.assertIn("reopened 1 access log(s)", self.proxy.process.read_log())

    def test_usr1_under_load_loses_no_line(self):
        # Longer than any run of the scenario, and ended by it: no race with the rotations.
        load = load_clients.wrk(f"http://127.0.0.1:{self.proxy.port}/hello", 300, c=16)
        self.addCleanup(load.stop)
        wait_until(lambda: len(lines(self.log)) > 1000, timeout=30, what="lines logged")
        rotated = []
        for i in range(3):  # three rotations while the load runs
            rotated.append(f"{self.log}.{i + 1}")
            os.rename(self.log, rotated[-1])
            self.signal(signal.SIGUSR1)
            wait_until(lambda: self.proxy.process.read_log().count("reopened 1 access log") > i,
                       what=f"reopen {i + 1}")
            wait_until(lambda: len(lines(self.log)) > 100, timeout=30, what="the new file used")
        running, result = load.interrupt()
        self.assertTrue(running, f"the load ended before the rotations: {result['out']}")
        self.assertEqual(result["failed"], 0, result["out"])
        # The count once every connection of the load is closed: requests wrk sent just
        # before it ended can still be read after it has, and a count taken then falls short
        # of the lines for good (the flake run of 2026-12-03 failed so, once in 20).
        status = lambda: json.loads(harness.http_get(self.proxy.admin_port, "/status")[1])
        wait_until(lambda: status()["client_connections"] == 0,
                   what="the load's connections closed")
        served = status()["requests"]
        logged = lambda: sum(len(lines(p)) for p in rotated + [self.log])
        # Each worker writes what it holds within a second: every request is in some file.
        try:
            wait_until(lambda: logged() == served, timeout=5, what=f"{served} lines in all")
        except AssertionError as e:
            raise AssertionError(f"{e}: {logged()} lines for {served} requests") from None
        self.assertGreaterEqual(served, result["total"])

    def test_hup_with_errors_keeps_the_running_configuration(self):
        self.signal(signal.SIGHUP)
        wait_until(lambda: "every worker serves generation 2" in self.proxy.process.read_log(),
                   what="the valid file applied")
        with open(self.proxy.config_path, "a") as f:
            f.write("\n[server]\nworkers = \"two\"\n")
        self.signal(signal.SIGHUP)
        wait_until(lambda: "has errors; still serving" in self.proxy.process.read_log(),
                   what="the errors verdict")
        self.assertRegex(self.proxy.process.read_log(),
                         r"reload: \S+portico\.toml:\d+:\d+: ")
        self.assertIsNone(self.proxy.process.proc.poll())
        self.assertEqual(curl(self.proxy, "h1", "/hello").status, 200)

    def portico_s(self, *args):
        return subprocess.run([os.path.join(harness.BUILD_DIR, "proxy", "portico"), *args],
                              capture_output=True, text=True, timeout=30)

    def test_dash_s_through_the_pid_file(self):
        with open(self.pid_file) as f:
            self.assertEqual(int(f.read()), self.proxy.process.pid)
        r = self.portico_s("-s", "reopen", "-c", self.proxy.config_path)
        self.assertEqual(r.returncode, 0, r.stderr)
        wait_until(lambda: "reopened 1 access log(s)" in self.proxy.process.read_log(),
                   what="the reopen -s asked for")
        bad = self.portico_s("-s", "restart", "-c", self.proxy.config_path)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("one of stop, quit, reopen, reload, upgrade", bad.stderr)
        r = self.portico_s("-s", "quit", "--pid-file", self.pid_file)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.proxy.process.proc.wait(timeout=30), 0)
        self.assertFalse(os.path.exists(self.pid_file))  # removed at exit
        gone = self.portico_s("-s", "quit", "--pid-file", self.pid_file)
        self.assertEqual(gone.returncode, 1)
        self.assertIn("is portico running?", gone.stderr)


if __name__ == "__main__":
    unittest.main()
