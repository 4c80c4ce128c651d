"""deploy/Containerfile's runtime stage installs every shared library the two binaries need: the
packages are derived here from `ldd` and `dpkg -S`, so a new dependency that the image lacks
(as libprometheus-cpp-core1.0 once was) fails this test rather than the container's start. The
image itself is not built here: this machine has no registry to pull debian:12 from and no
container daemon. The health check, the user and the default configuration are checked, and that
configuration run: its admin port answers probes and scrapes and refuses a purge."""
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
# In the debian:12 image already (apt needs them).
BASE = {"libc6", "libgcc-s1", "libstdc++6"}


def packages_of_libraries():
    needed = {}
    for b in BINARIES:
        out = subprocess.run(["ldd", b], capture_output=True, text=True, check=True).stdout
        for path in re.findall(r"=> (\S+) \(", out):
            real = os.path.realpath(path)
            owner = None
            for candidate in (real, path, path.replace("/lib/", "/usr/lib/", 1)):
                r = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
                if r.returncode == 0:
                    owner = r.stdout.split(":", 1)[0]
                    break
            needed.setdefault(owner, []).append(path)
    return needed


def depends_closure(packages):
    """The packages and everything they depend on, as apt would install."""
    seen, todo = set(), list(packages)
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        r = subprocess.run(["dpkg-query", "-W", "-f", "${Depends},${Pre-Depends}", p],
                           capture_output=True, text=True)
        for dep in re.split(r"[,|]", r.stdout):
            name = dep.strip().split(" ")[0].split(":")[0]
            if name:
                todo.append(name)
    return seen


def runtime_packages(text):
    runtime = text.split("FROM debian:12", 2)[2]
    install = re.search(r"apt-get install -y --no-install-recommends(.*?)&&\s*\\?\s*rm",
                        runtime, re.S).group(1)
    return set(install.replace("\\", " ").split())


class Container(unittest.TestCase):
    def setUp(self):
        with open(CONTAINERFILE) as f:
            self.text = f.read()

    def test_the_runtime_stage_has_every_library_ldd_finds(self):
        needed = packages_of_libraries()
        self.assertNotIn(None, needed, f"libraries no package owns: {needed.get(None)}")
        listed = runtime_packages(self.text)
        have = depends_closure(listed) | BASE
        # A sanitizer build (CI runs the suite under ASan+UBSan too) links its runtimes; the
        # image is built without them.
        sanitizers = ("libasan", "libubsan", "liblsan", "libtsan")
        missing = {p: libs for p, libs in needed.items()
                   if p not in have and not p.startswith(sanitizers)}
        self.assertEqual(missing, {}, f"add to the runtime stage's apt-get install: {missing}")

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
