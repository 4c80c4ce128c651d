"""Signals an nginx operator sends: USR1 after logrotate's rename reopens the access logs (the
lines before go to the renamed file, the lines after to a new one, none lost); USR2 and HUP,
not carried out yet, are said so on stderr and leave the proxy serving, never killed."""
import os
import signal
import tempfile
import unittest

import harness
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
        self.log = os.path.join(self.tmp, "access.log")
        self.proxy = Proxy([f"unix:{self.backend.sock_path}"], workers=2,
                           listener_options={"access_log": toml_string(self.log)})
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

    def test_usr2_and_hup_do_not_kill_it(self):
        for sig, said in ((signal.SIGUSR2, "ignoring USR2"), (signal.SIGHUP, "ignoring HUP")):
            self.signal(sig)
            wait_until(lambda: said in self.proxy.process.read_log(), what=said)
            self.assertIsNone(self.proxy.process.proc.poll())
            self.assertEqual(curl(self.proxy, "h1", "/hello").status, 200)


if __name__ == "__main__":
    unittest.main()
