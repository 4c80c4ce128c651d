"""deploy/Containerfile installs the Debian package, so the image has every library the binaries
need by the package's own Depends (dpkg-shlibdeps reads them from the binaries; checked by
test_debian_package); test_container_image builds the image and runs it (label container, by
hand). Checked here on every run: the health check, the user and the default configuration,
and that configuration run: its admin port answers probes and scrapes and refuses a purge."""
import os
import re
import subprocess
import unittest

import harness
from proxy_harness import start_example


def post(port, path):
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("POST", path)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CONTAINERFILE = os.path.join(ROOT, "deploy", "Containerfile")
BINARIES = [os.path.join(harness.BUILD_DIR, "proxy", "portico"), harness.BACKEND]


class Container(unittest.TestCase):
    def setUp(self):
        with open(CONTAINERFILE) as f:
            self.text = f.read()

    def test_the_image_is_the_package(self):
        # apt installs the package built from this tree, and with it what it depends on: no
        # list of libraries kept by hand.
        self.assertRegex(self.text, r"(?m)^COPY build-package/portico_\*\.deb /tmp/$")
        self.assertRegex(self.text, r"apt-get install -y --no-install-recommends /tmp/portico_\*\.deb")
        self.assertRegex(self.text, r'(?m)^ENTRYPOINT \["/usr/sbin/portico"\]$')

    def test_health_check_user_and_configuration(self):
        self.assertRegex(self.text, r"(?m)^USER (?!0\b|root\b)\d+")
        self.assertRegex(self.text, r"(?m)^HEALTHCHECK .*\n\s*CMD .*/dev/tcp/127\.0\.0\.1/9901.*/healthz")
        self.assertIn("COPY deploy/container.toml /etc/portico/portico.toml", self.text)
        config = os.path.join(ROOT, "deploy", "container.toml")
        r = subprocess.run([BINARIES[0], "-T", "-c", config], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        # The orchestrator probes the admin port from outside the container.
        self.assertIn("address = '0.0.0.0:9901'", r.stdout)

    def test_the_admin_port_serves_only_its_read_only_paths(self):
        # Probes and scrapes reach it from outside the container; a purge from any peer, the
        # container's loopback included, is refused until a token or control socket is set up.
        config_path = os.path.join(ROOT, "deploy", "container.toml")
        with open(config_path) as f:
            config = f.read()
        ports = start_example(self, config)
        for path in ("/healthz", "/readyz", "/metrics", "/status", "/stats.json", "/"):
            self.assertEqual(harness.http_get(ports[9901], path)[0], 200, path)
        status, body = post(ports[9901], "/cache/purge?url=http%3A%2F%2Fa%2Fb")
        self.assertEqual(status, 403, body)
        # How an operator allows it is written beside the setting.
        for way in ("token_file =", "control_socket =", "control_socket_mode =",
                    "Authorization: Bearer"):
            self.assertIn(way, config)

    def test_the_health_check_command_works(self):
        backend = harness.Backend(workers=1, unix=True)
        self.addCleanup(backend.stop)
        from proxy_harness import Proxy
        proxy = Proxy([f"unix:{backend.sock_path}"], workers=1)
        self.addCleanup(proxy.stop)
        cmd = re.search(r'"-c", "(.*?)"\]', self.text.split("HEALTHCHECK", 1)[1]).group(1)
        cmd = cmd.replace("\\\\", "\\").replace("9901", str(proxy.admin_port))
        self.assertEqual(subprocess.run(["/bin/bash", "-c", cmd], timeout=10).returncode, 0)
        dead = cmd.replace(str(proxy.admin_port), str(harness.free_port()))
        self.assertNotEqual(subprocess.run(["/bin/bash", "-c", dead], timeout=10,
                                           stderr=subprocess.DEVNULL).returncode, 0)


if __name__ == "__main__":
    unittest.main()
