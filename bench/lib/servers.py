"""The servers a suite measures: how each one is configured, started, checked and stopped.

Every server runs from a config written into the run's temporary directory (templates in
bench/peers/), listens on free 127.0.0.1 ports, is pinned to the server CPU with taskset (which
execs the program, so the PID we hold is the server's own master), runs in a session of its own
and is stopped by that PID (then its process group, in case a worker was left behind).
"""
import http.client
import os
import shutil
import signal
import socket
import string
import subprocess
import time

from . import procstat

PEERS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "peers")


class BenchError(Exception):
    """A server or client did not behave: the run stops with this message."""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def render(template_name, dest_dir, **values):
    """Fills bench/peers/<template_name> with values and writes it into dest_dir."""
    with open(os.path.join(PEERS_DIR, template_name)) as f:
        text = string.Template(f.read()).substitute(**{k: str(v) for k, v in values.items()})
    path = os.path.join(dest_dir, template_name)
    with open(path, "w") as f:
        f.write(text)
    return path


def first_line(argv):
    """The first non-empty line a version command prints (stdout or stderr), or 'not found'."""
    if shutil.which(argv[0]) is None and not os.path.exists(argv[0]):
        return "not found"
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unknown ({e})"
    for line in (out.stdout + "\n" + out.stderr).splitlines():
        if line.strip():
            return line.strip()
    return "unknown"


class RunningServer:
    """One started server: its master PID, its URLs, and how to stop it."""

    def __init__(self, spec, argv, workdir, ports, cpu):
        self.spec = spec
        self.workdir = workdir
        self.ports = ports
        self.log_path = os.path.join(workdir, f"{spec.name}.log")
        if cpu is not None:
            argv = ["taskset", "-c", str(cpu)] + argv
        self.argv = argv
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, cwd=workdir,
                                     start_new_session=True)

    @property
    def pid(self):
        return self.proc.pid

    def url(self, protocol, path="/"):
        port = self.ports.get(protocol)
        return None if port is None else f"http://127.0.0.1:{port}{path}"

    def log_tail(self, lines=20):
        self._log.flush()
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def wait_ready(self, timeout):
        """Waits for every port to accept and for the expected number of worker processes."""
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise BenchError(f"{self.spec.name} exited with {self.proc.returncode}:\n"
                                 f"{self.log_tail()}")
            ports_up = all(port_open(p) for p in self.ports.values())
            workers = len(procstat.tree(self.pid)) - 1
            if ports_up and workers >= self.spec.expected_children:
                return
            if time.monotonic() > deadline:
                raise BenchError(f"{self.spec.name} not ready after {timeout}s (ports up: "
                                 f"{ports_up}, workers: {workers}):\n{self.log_tail()}")
            time.sleep(0.02)

    def check(self, path, expect_body):
        """One HTTP/1.1 GET on the h1 port: the server answers 200 with the expected body."""
        port = self.ports["h1"]
        deadline = time.monotonic() + 10
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", path)
                resp = conn.getresponse()
                body = resp.read()
                conn.close()
                break
            except OSError as e:
                # A preforked server may still be loading its app in the worker.
                if time.monotonic() > deadline:
                    raise BenchError(f"{self.spec.name}: GET {path} failed: {e}") from e
                time.sleep(0.05)
        if resp.status != 200 or (expect_body is not None and body != expect_body):
            raise BenchError(f"{self.spec.name}: GET {path} gave {resp.status} {body[:200]!r}")

    def stop(self, timeout=15):
        if self.proc.poll() is None:
            try:
                os.kill(self.pid, signal.SIGTERM)
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
        # The process group is the session we started: it holds only this server's processes.
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.proc.poll() is None:
            self.proc.wait(timeout=5)
        self._log.close()


class ServerSpec:
    """What a suite needs to know about one server.

    name: the row label. programs: what must be on PATH (a missing one stops the run).
    protocols: {"h1", "h2c"} and which it cannot serve (with the reason, shown as n/a).
    apps: the workload apps it serves ("hello", "counter-shm", ...).
    expected_children: worker processes to wait for before the server counts as ready.
    """

    name = "?"
    programs = ()
    protocols = ("h1",)
    apps = ("hello",)
    expected_children = 0
    not_applicable = {}  # workload key or protocol -> reason

    def __init__(self, workers=1):
        self.workers = workers

    def missing_programs(self):
        return [p for p in self.programs if shutil.which(p) is None and not os.path.exists(p)]

    def unavailable(self):
        """None, or why this server cannot run at all here (its row then reads n/a)."""
        return None

    def supports(self, workload):
        return (self.unavailable() is None and workload.protocol in self.protocols
                and workload.app in self.apps)

    def why_not(self, workload):
        if self.unavailable():
            return self.unavailable()
        return (self.not_applicable.get(workload.key) or self.not_applicable.get(workload.protocol)
                or self.not_applicable.get(workload.app) or "not supported")

    def version(self):
        return "?"

    def describe(self):
        """One line for the report: how this server was configured."""
        return ""

    def start(self, workdir, cpu):
        raise NotImplementedError


class PorticoBackend(ServerSpec):
    """portico-backend serving its own apps: h1 and h2c on one port."""

    name = "portico-backend"
    protocols = ("h1", "h2c")
    apps = ("hello", "counter-shm")

    def __init__(self, binary, workers=1, repo_dir=None, extra_args=()):
        super().__init__(workers)
        self.binary = binary
        self.extra_args = list(extra_args)
        self.programs = (binary,)
        self.repo_dir = repo_dir
        self.expected_children = workers

    def version(self):
        if self.repo_dir is None:
            return self.binary
        rev = subprocess.run(["git", "-C", self.repo_dir, "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True).stdout.strip() or "unknown"
        dirty = subprocess.run(["git", "-C", self.repo_dir, "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True,
                               text=True).stdout.strip()
        return f"git {rev}{' + uncommitted changes' if dirty else ''} ({self.binary})"

    def describe(self):
        args = " ".join(["--workers", str(self.workers), "--store", "shm"] + self.extra_args)
        return f"`{args}`, HTTP/1.1 and h2c on one port"

    def start(self, workdir, cpu):
        port = free_port()
        argv = [self.binary, "--listen", f"127.0.0.1:{port}", "--workers", str(self.workers),
                "--store", "shm"] + self.extra_args
        return RunningServer(self, argv, workdir, {"h1": port, "h2c": port}, cpu)


class NginxReturn(ServerSpec):
    """nginx answering `return 200 "hello world\\n"` itself (bench/peers/nginx-hello.conf)."""

    name = "nginx"
    programs = ("nginx",)
    protocols = ("h1", "h2c")
    apps = ("hello",)
    not_applicable = {"counter-shm": "no counter app"}

    def __init__(self, workers=1):
        super().__init__(workers)
        self.expected_children = workers

    def version(self):
        return first_line(["nginx", "-v"]).replace("nginx version: ", "")

    def describe(self):
        return (f"`return 200`, worker_processes {self.workers}, access_log off, "
                "keepalive_requests 1e8; h2c on a second port (`listen ... http2`)")

    def start(self, workdir, cpu):
        port, h2c_port = free_port(), free_port()
        conf = render("nginx-hello.conf", workdir, prefix=workdir, port=port, h2c_port=h2c_port,
                      workers=self.workers)
        argv = ["nginx", "-p", workdir, "-c", conf, "-g", "daemon off;"]
        return RunningServer(self, argv, workdir, {"h1": port, "h2c": h2c_port}, cpu)


class Starman(ServerSpec):
    """starman (Perl PSGI, preforked) running bench/peers/hello.psgi."""

    name = "starman"
    programs = ("starman",)
    protocols = ("h1",)
    apps = ("hello",)
    not_applicable = {"h2c": "no HTTP/2", "counter-shm": "no counter app"}

    def __init__(self, workers=1):
        super().__init__(workers)
        self.expected_children = workers

    def version(self):
        v = subprocess.run(["perl", "-MStarman", "-e", "print $Starman::VERSION"],
                           capture_output=True, text=True).stdout.strip()
        perl = subprocess.run(["perl", "-e", "print $^V"], capture_output=True,
                              text=True).stdout.strip()
        return f"Starman {v or '?'} (perl {perl or '?'})"

    def describe(self):
        return (f"`--workers {self.workers}`, keep-alive on (its default), --max-requests 1e8 "
                "(Net::Server counts connections); one connection at a time per worker")

    def start(self, workdir, cpu):
        port = free_port()
        app = os.path.join(workdir, "hello.psgi")
        shutil.copy(os.path.join(PEERS_DIR, "hello.psgi"), app)
        argv = ["starman", "--listen", f"127.0.0.1:{port}", "--workers", str(self.workers),
                "--max-requests", "100000000", app]
        return RunningServer(self, argv, workdir, {"h1": port}, cpu)
