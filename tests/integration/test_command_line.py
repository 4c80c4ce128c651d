"""Both binaries' command lines, as an nginx user types them: getopt_long errors that name the
option, -v and -V (every library's version), and portico -T, the effective configuration with
every default filled in, which loads again to the same configuration."""
import os
import shutil
import subprocess
import tempfile
import tomllib
import unittest

import harness

PORTICO = os.path.join(harness.BUILD_DIR, "proxy", "portico")

CONFIG = """
[[listener]]
address = "127.0.0.1:18080"

[[cluster]]
name = "app"
endpoints = ["unix:/tmp/app.sock", "127.0.0.1:9000"]
protocol = "h2c"

[[route]]
host = "api.example"
cluster = "app"

[server]
trusted_proxies = ["10.0.0.0/8", "2001:db8::/32"]
keepalive_timeout = 15
"""


def run(*args):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=30)


class CommandLineTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="portico-cli-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.config = os.path.join(self.tmp, "portico.toml")
        with open(self.config, "w") as f:
            f.write(CONFIG)

    def test_a_missing_value_is_named(self):
        r = run(PORTICO, "-c")
        self.assertEqual(r.returncode, 2)
        self.assertIn("option requires an argument -- 'c'", r.stderr)
        r = run(harness.BACKEND, "--workers")
        self.assertEqual(r.returncode, 2)
        self.assertIn("option '--workers' requires an argument", r.stderr)

    def test_unknown_options_and_bad_values(self):
        self.assertEqual(run(PORTICO, "-x").returncode, 2)
        r = run(PORTICO, "-c", self.config, "stray")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unexpected argument 'stray'", r.stderr)
        r = run(harness.BACKEND, "--nope")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unrecognized option '--nope'", r.stderr)
        r = run(harness.BACKEND, "--workers=many")
        self.assertEqual(r.returncode, 2)
        self.assertIn("bad value for --workers: 'many'", r.stderr)

    def test_versions(self):
        for binary, name, libs in (
                (PORTICO, "portico",
                 ("nghttp2", "OpenSSL", "libev", "llhttp", "c-ares", "toml++", "prometheus-cpp")),
                (harness.BACKEND, "portico-backend",
                 ("nghttp2", "OpenSSL", "libev", "llhttp", "prometheus-cpp"))):
            with self.subTest(binary=name):
                short = run(binary, "--version")
                self.assertEqual(short.returncode, 0, short.stderr)
                self.assertRegex(short.stdout, rf"^{name} \d+\.\d+\.\d+\n$")
                full = run(binary, "-V")
                self.assertEqual(full.returncode, 0, full.stderr)
                lines = dict(line.split(": ", 1) for line in full.stdout.splitlines()[1:])
                self.assertIn("build type", lines)
                self.assertRegex(lines["compiler"], r"^(g\+\+|clang) \d+")
                for lib in libs:
                    self.assertRegex(lines.get(lib, ""), r"\d+\.\d+", f"{lib} in {full.stdout}")

    def test_dump_config_fills_defaults_and_loads_again(self):
        r = run(PORTICO, "-T", "-c", self.config)
        self.assertEqual(r.returncode, 0, r.stderr)
        dumped = tomllib.loads(r.stdout)
        # What was written, and the defaults of what was not.
        self.assertEqual(dumped["server"]["keepalive_timeout"], 15)
        self.assertEqual(dumped["server"]["header_timeout"], 30)
        self.assertEqual(dumped["server"]["trusted_proxies"], ["10.0.0.0/8", "2001:db8::/32"])
        self.assertEqual(dumped["cluster"][0]["protocol"], "h2c")
        self.assertEqual(dumped["cluster"][0]["connect_timeout"], 5)
        self.assertEqual(dumped["cluster"][0]["endpoints"],
                         ["unix:/tmp/app.sock", "127.0.0.1:9000"])
        self.assertEqual(dumped["route"][0], {"host": "api.example", "path_prefix": "/",
                                              "cluster": "app", "websocket": False,
                                              "upgrade_timeout": 300, "internal": False})
        self.assertEqual(dumped["cluster"][0]["lb"], "least_request")
        self.assertEqual(dumped["admin"]["address"], "127.0.0.1:9901")
        self.assertEqual(dumped["metrics"]["route_series_limit"], 1000)
        # Loaded again, it is the same configuration: the second dump matches the first.
        again = os.path.join(self.tmp, "dumped.toml")
        with open(again, "w") as f:
            f.write(r.stdout)
        self.assertEqual(run(PORTICO, "-t", "-c", again).returncode, 0)
        r2 = run(PORTICO, "-T", "-c", again)
        self.assertEqual(r2.stdout.split("\n", 1)[1], r.stdout.split("\n", 1)[1])

    def test_dump_config_of_a_bad_file_is_its_errors(self):
        with open(self.config, "a") as f:
            f.write("\n[server]\nworkers = -3\n")
        r = run(PORTICO, "-T", "-c", self.config)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, "")
        self.assertRegex(r.stderr, r"portico\.toml:\d+:\d+: ")


if __name__ == "__main__":
    unittest.main()
