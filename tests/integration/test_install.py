"""cmake --install puts everything in its place under the prefix it is given: both binaries in
sbin (which run), their --help as text, the configuration (valid as installed), the example
configurations, logrotate, the man pages, the Prometheus files, and the systemd units naming
the installed binaries and configuration path, which systemd-analyze verifies and scores below
3.0 ("OK")."""
import os
import shutil
import subprocess
import tempfile
import unittest

import harness


class Install(unittest.TestCase):
    def test_install_under_a_prefix(self):
        prefix = tempfile.mkdtemp(prefix="portico-install-")
        self.addCleanup(shutil.rmtree, prefix, ignore_errors=True)
        r = subprocess.run(["cmake", "--install", harness.BUILD_DIR, "--prefix", prefix],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for binary in ("portico", "portico-backend"):
            path = os.path.join(prefix, "sbin", binary)
            v = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10)
            self.assertEqual(v.returncode, 0)
            self.assertTrue(v.stdout.startswith(binary + " "))
            with open(os.path.join(prefix, "share", "doc", "portico", binary + ".txt")) as f:
                self.assertIn("usage:", f.read())
            with open(os.path.join(prefix, "lib", "systemd", "system",
                                   binary + ".service")) as f:
                unit = f.read()
            self.assertNotRegex(unit, r"@[A-Z]+@")  # every placeholder filled in
            self.assertIn(f"ExecStart={path} ", unit)
        with open(os.path.join(prefix, "lib", "systemd", "system", "portico.service")) as f:
            self.assertIn(f"-c {prefix}/etc/portico/portico.toml", f.read())
        for f in ("share/doc/portico/examples/sidecar.toml", "share/doc/portico/examples/edge.toml",
                  "etc/portico/portico.toml", "etc/logrotate.d/portico",
                  "share/man/man8/portico.8.gz", "share/man/man5/portico.toml.5.gz",
                  "share/portico/prometheus/scrape.yml", "share/doc/portico/README.md"):
            self.assertTrue(os.path.isfile(os.path.join(prefix, f)), f)
        # The units as systemd reads them: no unknown key or bad value, and an exposure score
        # below 3.0 ("OK"), offline (no systemd need run here).
        units = os.path.join(prefix, "lib", "systemd", "system")
        for unit in ("portico.service", "portico-backend.service"):
            v = subprocess.run(["systemd-analyze", "verify", "--man=no", unit], cwd=units,
                               capture_output=True, text=True, timeout=60)
            self.assertEqual((v.returncode, v.stderr.strip()), (0, ""), unit)
            sec = subprocess.run(["systemd-analyze", "security", "--offline=yes",
                                  "--threshold=30", unit], cwd=units, capture_output=True,
                                 text=True, timeout=60)
            self.assertEqual(sec.returncode, 0, sec.stdout[-400:])
            self.assertRegex(sec.stdout, r"Overall exposure level for \S+: [0-2]\.\d OK")
            with open(os.path.join(units, unit)) as f:
                self.assertIn("Type=notify", f.read())
        # The configuration and the example are valid as installed.
        for conf in ("etc/portico/portico.toml", "share/doc/portico/examples/sidecar.toml"):
            t = subprocess.run([os.path.join(prefix, "sbin", "portico"), "-t", "-c",
                                os.path.join(prefix, conf)],
                               capture_output=True, text=True, timeout=10)
            self.assertEqual(t.returncode, 0, t.stderr)


if __name__ == "__main__":
    unittest.main()
