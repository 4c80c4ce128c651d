"""portico's command line: -t checks a configuration and reports every error as
FILE:LINE:COL; --version; a bad listener address fails start-up loudly."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import harness
from proxy_harness import PORTICO

REPO = os.path.join(os.path.dirname(__file__), "..", "..")


def run(*args):
    return subprocess.run([PORTICO, *args], capture_output=True, text=True, timeout=30)


class ProxyConfig(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="portico-config-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def write(self, text):
        path = os.path.join(self.tmp, "p.toml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_minimal_form_from_the_issue_is_valid(self):
        path = self.write("""[server]
workers = 2                          # worker threads; default: one per core

[[listener]]
address = "127.0.0.1:8080"           # HTTP/1.1 and h2c (prior knowledge and Upgrade) on one port

[admin]
address = "127.0.0.1:9901"

[[cluster]]
name = "app"
endpoints = ["unix:/dev/shm/app.sock"]   # or "127.0.0.1:9000", or "backend.example:80" (c-ares)

[[route]]
path_prefix = "/"
cluster = "app"
""")
        r = run("-t", "-c", path)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_values_that_cannot_be_meant_are_errors_not_a_crash(self):
        # On 8ea07b8 the 20-digit port ended -t on an uncaught std::stoi exception (SIGABRT).
        path = self.write("""[server]
keepalive_timeout = nan
request_id_header = "X-Request-Id"

[[listener]]
address = "127.0.0.1:8080"

[[listener]]
address = "*:8080"

[[cluster]]
name = "app"
endpoints = ["127.0.0.1:12345678901234567890", "http://app:80"]

[[route]]
cluster = "app"
""")
        r = run("-t", "-c", path)
        self.assertEqual(r.returncode, 1, r.stderr)
        for where, what in (("2:21", "keepalive_timeout"), ("3:21", "lower-case"),
                            ("9:11", "cannot share a socket"), ("13:14", "not 1 to 65535"),
                            ("13:48", "is a URL")):
            self.assertRegex(r.stderr, rf"p\.toml:{where}: .*{what}")

    def test_shipped_examples(self):
        # Issue 22, item 9: edge.toml failed -t for want of its certificates, which
        # conf/make-certificates.sh now makes beside a copy of it.
        examples = sorted(os.path.join(REPO, "conf", f) for f in os.listdir(
            os.path.join(REPO, "conf")) if f.endswith(".toml"))
        examples.append(os.path.join(REPO, "deploy", "container.toml"))
        self.assertGreaterEqual(len(examples), 3, examples)
        for example in examples:
            copy = os.path.join(self.tmp, os.path.basename(example))
            shutil.copy(example, copy)
            made = subprocess.run(["sh", os.path.join(REPO, "conf", "make-certificates.sh"),
                                   os.path.join(self.tmp, "certs")],
                                  capture_output=True, text=True, timeout=120)
            self.assertEqual(made.returncode, 0, made.stderr)
            r = run("-t", "-c", copy)
            self.assertEqual(r.returncode, 0, f"{example}: {r.stderr}")
            self.assertIn("is valid", r.stdout)

    def test_the_sidecars_health_check_passes_on_portico_backend(self):
        # conf/sidecar.toml tells you to run portico-backend behind it, and checked /healthz,
        # which portico-backend answered 404.
        with open(os.path.join(REPO, "conf", "sidecar.toml")) as f:
            path = re.search(r'health_check = \{ path = "([^"]+)"', f.read()).group(1)
        backend = harness.Backend(workers=1)
        self.addCleanup(backend.stop)
        status, body = harness.http_get(backend.port, path)
        self.assertEqual(status, 200, body)

    def test_every_error_with_position(self):
        path = self.write("""[server]
workers = "many"

[[listener]]
address = "localhost"

[[cluster]]
name = "app"
endpoints = []

[[route]]
cluster = "nope"
""")
        r = run("-t", "-c", path)
        self.assertEqual(r.returncode, 1)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(lines.pop(), f"portico: configuration {path} test failed")
        self.assertGreaterEqual(len(lines), 4, r.stderr)
        for line in lines:
            self.assertRegex(line, r"^" + re.escape(path) + r":\d+:\d+: .+")
        self.assertTrue(any(l.startswith(f"{path}:2:") for l in lines), r.stderr)
        self.assertTrue(any(l.startswith(f"{path}:5:") for l in lines), r.stderr)
        self.assertTrue(any("nope" in l for l in lines), r.stderr)

    def test_syntax_error(self):
        path = self.write("[[listener]\naddress = 1\n")
        r = run("-t", "-c", path)
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stderr, re.escape(path) + r":1:\d+: ")

    def test_missing_file(self):
        r = run("-t", "-c", os.path.join(self.tmp, "absent.toml"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("absent.toml:1:1:", r.stderr)

    def test_version(self):
        r = run("--version")
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^portico \d+\.\d+\.\d+")

    def test_port_in_use_fails_start(self):
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen(1)
            port = s.getsockname()[1]
            path = self.write(f"""[[listener]]
address = "127.0.0.1:{port}"
[[cluster]]
name = "app"
endpoints = ["127.0.0.1:1"]
[[route]]
cluster = "app"
""")
            r = subprocess.run([PORTICO, "-c", path], capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 1)
            self.assertIn(str(port), r.stderr)


if __name__ == "__main__":
    unittest.main()
