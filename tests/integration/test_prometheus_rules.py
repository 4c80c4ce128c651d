"""deploy/prometheus: the scrape configuration and the rules load (promtool check), the rules
do what their tests say (promtool test rules), and every metric the rules name is one that a
running portico exposes, so that a rename cannot leave an alert watching nothing."""
import os
import re
import subprocess
import unittest

import harness
from proxy_harness import Proxy

DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "deploy",
                                   "prometheus"))


def promtool(*args):
    return subprocess.run(["promtool", *args], cwd=DIR, capture_output=True, text=True,
                          timeout=60)


class PrometheusRules(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need("promtool")

    def test_config_and_rules_load(self):
        r = promtool("check", "config", "scrape.yml")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = promtool("check", "rules", "portico-rules.yml")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_rules_pass_their_tests(self):
        r = promtool("test", "rules", "portico-rules.test.yml")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("SUCCESS", r.stdout)

    def test_every_metric_the_rules_name_is_exposed(self):
        with open(os.path.join(DIR, "portico-rules.yml")) as f:
            rules = f.read()
        named = set(re.findall(r"\b((?:portico|process)_[a-z_]+)", rules))
        backend = harness.Backend(workers=1, unix=True)
        self.addCleanup(backend.stop)
        proxy = Proxy([f"unix:{backend.sock_path}"], workers=1)
        self.addCleanup(proxy.stop)
        harness.http_get(proxy.port, "/hello")
        text = harness.http_get(proxy.admin_port, "/metrics")[1].decode()
        exposed = set(re.findall(r"(?m)^# TYPE (\S+)", text))
        exposed |= {m + "_bucket" for m in exposed}
        self.assertEqual(named - exposed, set())


if __name__ == "__main__":
    unittest.main()
