"""Starting and stopping the real binaries for integration tests.

Every server a test starts listens on a loopback port picked here (or a unix socket in a
temporary directory), is waited for by connecting to it (never by sleeping), and is stopped by
its PID when the test ends.
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

BUILD_DIR = os.environ.get(
    "PORTICO_BUILD_DIR",
    os.path.join(os.path.dirname(__file__), "..", "..", "build"))
BACKEND = os.path.join(BUILD_DIR, "backend", "portico-backend")
PYTHON = "/usr/bin/python3"  # python3-h2 imports only here


def free_port():
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate, timeout=10.0, interval=0.01, what="condition"):
    """Polls predicate until it returns something truthy; fails the test after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def port_open(host, port):
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def unix_socket_open(path):
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(0.5)
            s.connect(path)
            return True
    except OSError:
        return False


def process_children(pid):
    """PIDs whose parent is pid (the backend master's workers)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except FileNotFoundError:
        return []


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Backend:
    """A portico-backend master on a fresh loopback port (and unix socket, if asked)."""

    def __init__(self, *args, workers=2, unix=False, env=None, extra_listen=()):
        self.port = free_port()
        self.tmp = tempfile.mkdtemp(prefix="portico-test-")
        self.sock_path = os.path.join(self.tmp, "app.sock") if unix else None
        self.log_path = os.path.join(self.tmp, "backend.log")
        cmd = [BACKEND, "--listen", f"127.0.0.1:{self.port}", "--workers", str(workers)]
        if self.sock_path:
            cmd += ["--listen", f"unix:{self.sock_path}:0666"]
        for extra in extra_listen:
            cmd += ["--listen", extra]
        cmd += list(args)
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=env, start_new_session=True)
        self.workers = workers
        try:
            wait_until(lambda: self.proc.poll() is not None or port_open("127.0.0.1", self.port),
                       what=f"portico-backend on port {self.port}")
            if self.proc.poll() is not None:
                raise AssertionError(f"portico-backend exited: {self.read_log()}")
            if self.sock_path:
                wait_until(lambda: unix_socket_open(self.sock_path), what="unix socket")
            wait_until(lambda: len(self.worker_pids()) >= workers, what="workers")
        except BaseException:
            self.stop()
            raise

    @property
    def pid(self):
        return self.proc.pid

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def worker_pids(self):
        return process_children(self.proc.pid)

    def read_log(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def signal(self, sig):
        os.kill(self.proc.pid, sig)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Stops the master (and so its workers); returns its exit code."""
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, sig)
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        # Workers left behind by a crashed master would hold the port: end the whole group.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def need(*programs):
    """Skips the test unless each program is on PATH (CI installs them all)."""
    missing = [p for p in programs if shutil.which(p) is None]
    if missing:
        if os.environ.get("CI"):
            raise AssertionError(f"missing programs in CI: {missing}")
        raise unittest.SkipTest(f"missing: {missing}")
