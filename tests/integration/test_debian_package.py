"""The Debian package, as an operator meets it: CPack builds it from this build tree, lintian
finds no error and no warning in it, dpkg installs it on this machine, the installed
configuration passes `portico -t`, the installed binaries serve a request (portico in front of
portico-backend, as the packaged configuration has them, on ports this test picks), `man`
finds the pages, and a purge leaves nothing behind.

The test installs into the machine's own /usr and /etc: it runs in the optimised build's stage
only (label package), and it refuses to start over a portico package it did not install."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import harness

SBIN = "/usr/sbin"
CONFFILE = "/etc/portico/portico.toml"
SHIPPED = [
    "/usr/sbin/portico", "/usr/sbin/portico-backend", CONFFILE, "/etc/logrotate.d/portico",
    "/lib/systemd/system/portico.service", "/lib/systemd/system/portico-backend.service",
    "/usr/share/man/man8/portico.8.gz", "/usr/share/man/man8/portico-backend.8.gz",
    "/usr/share/man/man5/portico.toml.5.gz", "/usr/share/portico/prometheus/portico-rules.yml",
    "/usr/share/doc/portico/copyright", "/usr/share/doc/portico/changelog.gz",
    "/usr/share/doc/portico/README.md",
]


def run(cmd, timeout=120, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


def installed():
    r = run(["dpkg-query", "-W", "-f=${Status}", "portico"])
    return r.returncode == 0 and "installed" in r.stdout and "not-installed" not in r.stdout


class DebianPackage(unittest.TestCase):
    def setUp(self):
        harness.need("cpack", "lintian", "dpkg", "man")
        self.assertFalse(installed(), "a portico package is installed already: this test "
                         "would replace it (dpkg --purge portico, then run again)")
        self.tmp = tempfile.mkdtemp(prefix="portico-deb-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def build_package(self):
        r = run(["cpack", "-G", "DEB", "--config",
                 os.path.join(harness.BUILD_DIR, "CPackConfig.cmake"), "-B", self.tmp],
                timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        debs = [f for f in os.listdir(self.tmp) if f.endswith(".deb")]
        self.assertEqual(len(debs), 1, debs)
        return os.path.join(self.tmp, debs[0])

    def test_build_lint_install_serve_purge(self):
        deb = self.build_package()
        info = run(["dpkg-deb", "-f", deb, "Package", "Version", "Depends"]).stdout
        self.assertIn("Package: portico", info)
        with open(os.path.join(os.path.dirname(__file__), "..", "..", "CMakeLists.txt")) as f:
            version = re.search(r"project\(portico VERSION (\S+)", f.read()).group(1)
        self.assertIn(f"Version: {version}", info)
        self.assertRegex(info, r"libnghttp2-14 ")  # dpkg-shlibdeps read the binaries
        # The changelog's version is the package's (lintian checks the rest of it).
        with open(os.path.join(os.path.dirname(__file__), "..", "..", "deploy", "debian",
                               "changelog")) as f:
            self.assertTrue(f.readline().startswith(f"portico ({version})"))
        contents = run(["dpkg-deb", "-c", deb]).stdout
        for path in SHIPPED:
            self.assertIn(" ." + path + "\n", contents, path)
        conffiles = run(["dpkg-deb", "-I", deb, "conffiles"]).stdout.split()
        self.assertEqual(sorted(conffiles), ["/etc/logrotate.d/portico", CONFFILE])

        lint = run(["lintian", "--tag-display-limit", "0", deb], timeout=300)
        tags = [l for l in lint.stdout.splitlines() if re.match(r"[EW]: ", l)]
        self.assertEqual(tags, [], lint.stdout + lint.stderr)

        r = run(["dpkg", "-i", deb], timeout=300)
        self.addCleanup(self.purge)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(installed())
        for path in SHIPPED:
            self.assertTrue(os.path.exists(path), path)
        self.assertEqual(run(["getent", "group", "portico"]).returncode, 0)
        self.assertEqual(run([os.path.join(SBIN, "portico"), "-v"]).stdout.split()[0], "portico")

        t = run([os.path.join(SBIN, "portico"), "-t", "-c", CONFFILE])
        self.assertEqual(t.returncode, 0, t.stdout + t.stderr)
        self.assertEqual(run(["man", "-w", "portico.toml"]).stdout.strip(),
                         "/usr/share/man/man5/portico.toml.5.gz")
        page = run(["man", "-P", "cat", "8", "portico"], env={**os.environ, "MANWIDTH": "80"})
        self.assertIn("reverse proxy and HTTP/2 terminator", page.stdout)

        self.serve_through_installed_binaries()

    def serve_through_installed_binaries(self):
        """The packaged configuration, with this test's ports and socket in place of
        127.0.0.1:8080, :9901 and /run/portico-backend."""
        sock = os.path.join(self.tmp, "app.sock")
        backend = harness.Process(
            [os.path.join(SBIN, "portico-backend"), "--listen", f"unix:{sock}", "--workers",
             "1"], os.path.join(self.tmp, "backend.log"))
        self.addCleanup(backend.stop)
        port, admin = harness.free_port(), harness.free_port()
        with open(CONFFILE) as f:
            conf = f.read()
        for packaged, here in (("127.0.0.1:8080", f"127.0.0.1:{port}"),
                               ("127.0.0.1:9901", f"127.0.0.1:{admin}"),
                               ("/run/portico-backend/app.sock", sock)):
            self.assertIn(packaged, conf)
            conf = conf.replace(packaged, here)
        path = os.path.join(self.tmp, "portico.toml")
        with open(path, "w") as f:
            f.write(conf)
        harness.wait_until(lambda: harness.unix_socket_open(sock), what="backend socket")
        proxy = harness.Process([os.path.join(SBIN, "portico"), "-c", path],
                                os.path.join(self.tmp, "portico.log"))
        self.addCleanup(proxy.stop)
        harness.wait_until(lambda: harness.port_open("127.0.0.1", port), what="portico")
        self.assertEqual(harness.http_get(port, "/hello"), (200, b"hello world\n"))
        self.assertEqual(harness.http_get(admin, "/healthz")[0], 200)
        proxy.stop()
        backend.stop()

    def purge(self):
        r = run(["dpkg", "--purge", "portico"], timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertFalse(installed())
        left = [p for p in SHIPPED + ["/etc/portico"] if os.path.exists(p)]
        self.assertEqual(left, [])


if __name__ == "__main__":
    unittest.main()
