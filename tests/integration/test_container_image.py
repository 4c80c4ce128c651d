"""deploy/Containerfile built and run with podman, no registry needed: the base image is made
here (debootstrap --variant=minbase bookworm from Debian's archive, podman import), the image
installs the Debian package this build makes (apt brings its dependencies), and two containers
run from it as deploy/kubernetes has them: portico-backend on a unix socket in a shared volume,
portico in front of it with deploy/container.toml, its ports published on loopback. Checked:
requests pass through, /healthz and the image's HEALTHCHECK answer, both run as uid 65534 with a
read-only root filesystem, and SIGTERM drains: a request under way is answered, then the
container exits 0.

About three minutes, most of it debootstrap, and Debian's archive must be reachable: label
container, outside the default run (`ctest --test-dir build -L container`, README). With
PORTICO_CONTAINER_BASE=IMAGE an existing base image is used instead of a new one.

podman here needs runc (crun refuses this machine's hybrid cgroups) and rlimits no higher than
its own (it lowers RLIMIT_NPROC to 32768 for itself, and the sandbox has no CAP_SYS_RESOURCE)."""
import os
import resource
import shutil
import subprocess
import tempfile
import threading
import unittest
import uuid

import harness

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CONTAINERFILE = os.path.join(ROOT, "deploy", "Containerfile")


def run(cmd, timeout=600, check=True):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)}: {r.returncode}\n{r.stdout[-2000:]}\n"
                             f"{r.stderr[-2000:]}")
    return r


def runtime_options():
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nproc = min(resource.getrlimit(resource.RLIMIT_NPROC)[1], 32768)
    return ["--runtime", "runc", "--ulimit", f"nofile={nofile}:{nofile}",
            "--ulimit", f"nproc={nproc}:{nproc}"]


class ContainerImage(unittest.TestCase):
    def setUp(self):
        harness.need("podman", "runc", "debootstrap", "cpack")
        self.tmp = tempfile.mkdtemp(prefix="portico-image-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.tag = uuid.uuid4().hex[:12]

    def base_image(self):
        if os.environ.get("PORTICO_CONTAINER_BASE"):
            return os.environ["PORTICO_CONTAINER_BASE"]
        rootfs = os.path.join(self.tmp, "rootfs")
        run(["debootstrap", "--variant=minbase", "bookworm", rootfs,
             "http://deb.debian.org/debian"], timeout=900)
        name = f"localhost/portico-test-base:{self.tag}"
        tar = subprocess.Popen(["tar", "-C", rootfs, "-c", "."], stdout=subprocess.PIPE)
        with tar:
            r = subprocess.run(["podman", "import", "-", name], stdin=tar.stdout,
                               capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.addCleanup(run, ["podman", "rmi", "-f", name], check=False)
        shutil.rmtree(rootfs, ignore_errors=True)
        return name

    def build_image(self, base):
        context = os.path.join(self.tmp, "context")
        os.makedirs(os.path.join(context, "deploy"))
        shutil.copy(os.path.join(ROOT, "deploy", "container.toml"),
                    os.path.join(context, "deploy"))
        run(["cpack", "-G", "DEB", "--config",
             os.path.join(harness.BUILD_DIR, "CPackConfig.cmake"), "-B",
             os.path.join(context, "build-package")], timeout=300)
        image = f"localhost/portico-test:{self.tag}"
        run(["podman", "build", "--format", "docker", "--isolation", "chroot", "--network",
             "host", "--build-arg", f"BASE={base}", "-f", CONTAINERFILE, "-t", image, context],
            timeout=900)
        self.addCleanup(run, ["podman", "rmi", "-f", image], check=False)
        return image

    def start(self, name, args):
        self.addCleanup(run, ["podman", "rm", "-f", "-t", "0", name], check=False)
        run(["podman", "run", "-d", "--name", name, *runtime_options(), "--read-only", *args])

    def test_build_run_probe_and_drain(self):
        image = self.build_image(self.base_image())
        user = run(["podman", "image", "inspect", "--format", "{{.Config.User}}", image])
        self.assertEqual(user.stdout.strip(), "65534:65534")
        sockets = os.path.join(self.tmp, "sockets")
        os.makedirs(sockets)
        os.chmod(sockets, 0o777)  # the containers' user makes and opens the socket
        backend, proxy = f"portico-backend-{self.tag}", f"portico-{self.tag}"
        self.start(backend, ["--network", "none", "-v", f"{sockets}:/sockets",
                             "--entrypoint", "/usr/sbin/portico-backend", image,
                             "--listen", "unix:/sockets/app.sock:0666", "--workers", "2"])
        harness.wait_until(lambda: harness.unix_socket_open(os.path.join(sockets, "app.sock")),
                           timeout=30, what="portico-backend's socket")
        port, admin = harness.free_port(), harness.free_port()
        self.start(proxy, ["-v", f"{sockets}:/sockets", "-p", f"127.0.0.1:{port}:8080",
                           "-p", f"127.0.0.1:{admin}:9901", image])
        harness.wait_until(lambda: self.answers(port), timeout=30, what="portico in its container")

        self.assertEqual(harness.http_get(port, "/hello"), (200, b"hello world\n"))
        self.assertEqual(harness.http_get(admin, "/healthz")[0], 200)
        self.assertEqual(run(["podman", "healthcheck", "run", proxy], check=False).returncode, 0)
        for name in (backend, proxy):
            top = run(["podman", "top", name, "user", "comm"]).stdout.split("\n")[1:]
            users = {line.split()[0] for line in top if line.strip()}
            self.assertEqual(users, {"nobody"}, top)
            ro = run(["podman", "inspect", "--format", "{{.HostConfig.ReadonlyRootfs}}", name])
            self.assertEqual(ro.stdout.strip(), "true")
            touch = run(["podman", "exec", name, "touch", "/written"], check=False)
            self.assertNotEqual(touch.returncode, 0)
            self.assertIn("Read-only file system", touch.stderr)

        # SIGTERM: the request under way is answered, then the container exits 0.
        answer = {}
        slow = threading.Thread(target=lambda: answer.update(
            r=harness.http_get(port, "/delay?ms=2000", timeout=20)))
        slow.start()
        harness.wait_until(lambda: self.busy(admin) >= 1, timeout=10,
                           what="the slow request at the backend")
        run(["podman", "kill", "--signal", "TERM", proxy])
        slow.join(30)
        self.assertEqual(answer.get("r"), (200, b"hello world\n"))
        code = run(["podman", "wait", proxy], timeout=60).stdout.strip()
        self.assertEqual(code, "0")
        logs = run(["podman", "logs", proxy]).stderr + run(["podman", "logs", proxy]).stdout
        self.assertIn("graceful stop", logs)

    @staticmethod
    def answers(port):
        try:
            return harness.http_get(port, "/hello", timeout=2)[0] == 200
        except OSError:
            return False

    @staticmethod
    def busy(admin):
        """Upstream connections carrying a request, from the proxy's /metrics."""
        text = harness.http_get(admin, "/metrics", timeout=5)[1].decode()
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("portico_upstream_connections{") and 'state="busy"' in line)


if __name__ == "__main__":
    unittest.main()
