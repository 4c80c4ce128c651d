"""The servers a suite measures: how each one is configured, started, checked and stopped.

Every server runs from a config written into the run's temporary directory (templates in
bench/peers/), listens on free 127.0.0.1 ports, is pinned to the server CPU with taskset (which
execs the program, so the PID we hold is the server's own master), runs in a session of its own
and is stopped by that PID (then its process group, in case a worker was left behind).
"""
import http.client
import os
import random
import re
import shutil
import signal
import socket
import string
import subprocess
import time
from dataclasses import dataclass

from . import procstat

PEERS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "peers")

HELLO = b"hello world\n"
# The backend suite's static file: the same bytes in every server's document root.
STATIC_PATH = "/static.txt"
STATIC_BODY = b"static file, 25 bytes ok\n"
assert len(STATIC_BODY) == 25


class BenchError(Exception):
    """A server or client did not behave: the run stops with this message."""


class ServerCrashed(BenchError):
    """A server died during a measurement: recorded in the report, and the run goes on."""


# Listen ports come from below the kernel's ephemeral range (32768-60999 by default), where
# other programs' "bind to port 0" picks cannot land: on a shared machine a test suite that
# picks a free port the usual way, between our pick and our server's bind, could get the same
# port, and with SO_REUSEPORT (Portico's listeners) both binds succeed and our clients' SYNs
# get split between two servers. Each port is handed out once per run.
PORT_RANGE = (20000, 32000)
_handed_out = set()
_rng = random.Random()


def free_port():
    for _ in range(1000):
        port = _rng.randrange(*PORT_RANGE)
        if port in _handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise BenchError(f"no free port in {PORT_RANGE}")


def port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
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


def endpoint_open(endpoint):
    """endpoint: a TCP port on 127.0.0.1 (int) or a unix socket path (str)."""
    return unix_socket_open(endpoint) if isinstance(endpoint, str) else port_open(endpoint)


class UnixHTTPConnection(http.client.HTTPConnection):
    """http.client over a unix socket (the check request of an origin on a unix socket)."""

    def __init__(self, path, timeout=5):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


def http_get(endpoint, path, timeout=5):
    """One GET on a TCP port or unix socket path: (status, body)."""
    if isinstance(endpoint, str):
        conn = UnixHTTPConnection(endpoint, timeout)
    else:
        conn = http.client.HTTPConnection("127.0.0.1", endpoint, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def make_certificate(directory, rsa=False):
    """A self-signed certificate for localhost, ECDSA P-256 (or RSA-2048): (cert, key, cert+key
    in one file)."""
    kind = "rsa" if rsa else "ec"
    cert = os.path.join(directory, f"bench-{kind}-cert.pem")
    key = os.path.join(directory, f"bench-{kind}-key.pem")
    both = os.path.join(directory, f"bench-{kind}-cert-key.pem")
    newkey = ["-newkey", "rsa:2048"] if rsa else ["-newkey", "ec", "-pkeyopt",
                                                  "ec_paramgen_curve:prime256v1"]
    proc = subprocess.run(
        ["openssl", "req", "-x509", *newkey,
         "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        capture_output=True, text=True)
    if proc.returncode != 0:
        raise BenchError(f"openssl req failed: {proc.stderr}")
    with open(both, "w") as out:
        for path in (cert, key):
            with open(path) as f:
                out.write(f.read())
    return TlsFiles(cert, key, both)


@dataclass(frozen=True)
class TlsFiles:
    cert: str
    key: str
    cert_and_key: str  # HAProxy's `crt` wants both in one PEM


def render(template_name, dest_dir, **values):
    """Fills bench/peers/<template_name> with values and writes it into dest_dir."""
    with open(os.path.join(PEERS_DIR, template_name)) as f:
        text = string.Template(f.read()).substitute(**{k: str(v) for k, v in values.items()})
    path = os.path.join(dest_dir, template_name)
    with open(path, "w") as f:
        f.write(text)
    return path


def write_docroot(directory, files):
    """A document root inside directory: {name: bytes} written as files; returns its path."""
    root = os.path.join(directory, "docroot")
    os.makedirs(root, exist_ok=True)
    for name, body in files.items():
        with open(os.path.join(root, name), "wb") as f:
            f.write(body)
    return root


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


UDP_PORTS = ("h3",)  # RunningServer.ports keys that are UDP ports (HTTP/3 over QUIC)


class RunningServer:
    """One started server: its master PID, its endpoints, and how to stop it.

    ports: protocol ("h1", "h2c", "tls") -> TCP port on 127.0.0.1 (int) or unix socket path;
    "h3" -> a UDP port on 127.0.0.1.
    """

    def __init__(self, spec, argv, workdir, ports, cpu, env=None):
        self.spec = spec
        self.name = spec.name
        self.workdir = workdir
        self.ports = ports
        self.log_path = os.path.join(workdir, f"{spec.name}.log".replace(" ", "_"))
        if cpu is not None:
            argv = ["taskset", "-c", str(cpu)] + argv
        self.argv = argv
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, cwd=workdir,
                                     start_new_session=True,
                                     env=None if env is None else {**os.environ, **env})

    @property
    def pid(self):
        return self.proc.pid

    def tree(self):
        """The PIDs whose CPU time and memory count as this server's."""
        return procstat.tree(self.pid)

    def exited(self):
        """None while running, else a message with the exit status and the log tail."""
        if self.proc.poll() is None:
            return None
        return f"{self.name} exited with {self.proc.returncode}:\n{self.log_tail()}"

    def wait_exit(self, timeout):
        """Waits up to timeout for the server to exit (a crashing server is still dumping its
        core when its clients already see refused connections); True if it has exited."""
        try:
            self.proc.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False

    def url(self, protocol, path="/"):
        port = self.ports.get(protocol)
        if port is None or isinstance(port, str):
            return None
        scheme = "https" if protocol == "tls" else "http"
        return f"{scheme}://127.0.0.1:{port}{path}"

    def log_tail(self, lines=20):
        self._log.flush()
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def wait_ready(self, timeout):
        """Waits for every endpoint to accept and for the expected number of worker processes.

        UDP endpoints (UDP_PORTS) cannot be probed by connecting: the h3 workloads' check
        request waits for them (runner.check_h3)."""
        deadline = time.monotonic() + timeout
        while True:
            if self.exited():
                raise BenchError(self.exited())
            ports_up = all(endpoint_open(p) for k, p in self.ports.items() if k not in UDP_PORTS)
            workers = len(procstat.tree(self.pid)) - 1
            if ports_up and workers >= self.spec.expected_children:
                return
            if time.monotonic() > deadline:
                raise BenchError(f"{self.name} not ready after {timeout}s (ports up: "
                                 f"{ports_up}, workers: {workers}):\n{self.log_tail()}")
            time.sleep(0.02)

    def check(self, path, expect_body=None, expect_re=None, expect_len=None):
        """One HTTP/1.1 GET on the h1 endpoint: 200 and the expected body; returns the body."""
        endpoint = self.ports["h1"]
        deadline = time.monotonic() + 10
        while True:
            try:
                status, body = http_get(endpoint, path)
                break
            except OSError as e:
                # A preforked server may still be loading its app in the worker.
                if time.monotonic() > deadline:
                    raise BenchError(f"{self.name}: GET {path} failed: {e}") from e
                time.sleep(0.05)
        wrong = (status != 200 or (expect_body is not None and body != expect_body)
                 or (expect_re is not None and not re.fullmatch(expect_re, body))
                 or (expect_len is not None and len(body) != expect_len))
        if wrong:
            raise BenchError(f"{self.name}: GET {path} gave {status} ({len(body)} bytes) "
                             f"{body[:200]!r}\n{self.log_tail()}")
        return body

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
    protocols: {"h1", "h2c", "tls"} and which it cannot serve (with the reason, shown as n/a).
    apps: the workload apps it serves ("hello", "counter-shm", "counter-mc", "bytes", "idle").
    expected_children: worker processes to wait for before the server counts as ready.
    only_workloads: when set, the server runs only these workload keys (others read n/a).
    """

    name = "?"
    programs = ()
    protocols = ("h1",)
    apps = ("hello",)
    expected_children = 0
    not_applicable = {}  # workload key, kind, protocol or app -> reason
    only_workloads = None
    peer = True  # False: shown beside the peers, never the best peer a ratio divides by
    floor = False  # True: the floor row, what the "÷ floor" column divides by

    def __init__(self, workers=1):
        self.workers = workers

    def missing_programs(self):
        return [p for p in self.programs if shutil.which(p) is None and not os.path.exists(p)]

    def unavailable(self):
        """None, or why this server cannot run at all here (its row then reads n/a)."""
        return None

    def supports(self, workload):
        if self.only_workloads is not None and workload.key not in self.only_workloads:
            return False
        return (self.unavailable() is None and workload.protocol in self.protocols
                and workload.app in self.apps and workload.key not in self.not_applicable
                and workload.kind not in self.not_applicable)

    def why_not(self, workload):
        if self.unavailable():
            return self.unavailable()
        if self.only_workloads is not None and workload.key not in self.only_workloads:
            return "not measured on this workload"
        return (self.not_applicable.get(workload.key) or self.not_applicable.get(workload.kind)
                or self.not_applicable.get(workload.protocol)
                or self.not_applicable.get(workload.app) or "not supported")

    def version(self):
        return "?"

    def describe(self):
        """One line for the report: how this server was configured."""
        return ""

    def start(self, workdir, cpu, workload=None):
        raise NotImplementedError


def git_version(repo_dir, binary):
    if repo_dir is None:
        return binary
    rev = subprocess.run(["git", "-C", repo_dir, "rev-parse", "--short=12", "HEAD"],
                         capture_output=True, text=True).stdout.strip() or "unknown"
    dirty = subprocess.run(["git", "-C", repo_dir, "status", "--porcelain",
                            "--untracked-files=no"], capture_output=True, text=True).stdout.strip()
    return f"git {rev}{' + uncommitted changes' if dirty else ''} ({binary})"


class PorticoBackend(ServerSpec):
    """portico-backend serving its own apps: h1 and h2c on one TCP port, or on a unix socket.

    The counter store is shm, or the shared memcached (`memcached` = (host, port), set by the
    suite) for the counter-mc workload, or for every workload when store="memcached".
    """

    name = "portico-backend"
    protocols = ("h1", "h2c")
    apps = ("hello", "counter-shm", "counter-mc", "bytes", "static")

    def __init__(self, binary, workers=1, repo_dir=None, extra_args=(), listen="tcp",
                 store="shm", name=None, static=False):
        super().__init__(workers)
        self.binary = binary
        self.extra_args = list(extra_args)
        self.programs = (binary,)
        self.repo_dir = repo_dir
        self.expected_children = workers
        self.listen = listen  # "tcp" (127.0.0.1, a free port) or "unix" (a socket in workdir)
        self.store = store
        self.memcached = None  # (host, port), set by the suite when it runs a memcached
        self.static = static  # --document-root with the static file (the backend suite)
        if not static:
            self.apps = tuple(a for a in self.apps if a != "static")
        if name:
            self.name = name

    def version(self):
        return git_version(self.repo_dir, self.binary)

    def _store_arg(self, workload):
        if self.store == "memcached" or (workload is not None and workload.app == "counter-mc"):
            if self.memcached is None:
                raise BenchError(f"{self.name}: no memcached for the counter store")
            return "memcached://{}:{}".format(*self.memcached)
        return "shm"

    def describe(self):
        store = "memcached://(shared)" if self.store == "memcached" else "shm (memcached:// for counter-mc)"
        root = ["--document-root", "DIR"] if self.static else []
        args = " ".join(["--workers", str(self.workers), "--store", store] + self.extra_args
                        + root)
        where = "a unix socket" if self.listen == "unix" else "one TCP port"
        static = (f"; DIR{STATIC_PATH} is the {len(STATIC_BODY)}-byte static file"
                  if self.static else "")
        return f"`{args}`, HTTP/1.1 and h2c on {where}{static}"

    def start(self, workdir, cpu, workload=None):
        if self.listen == "unix":
            endpoint = os.path.join(workdir, "backend.sock")
            listen = f"unix:{endpoint}"
        else:
            endpoint = free_port()
            listen = f"127.0.0.1:{endpoint}"
        argv = [self.binary, "--listen", listen, "--workers", str(self.workers),
                "--store", self._store_arg(workload)] + self.extra_args
        if self.static:
            root = write_docroot(workdir, {STATIC_PATH[1:]: STATIC_BODY})
            argv += ["--document-root", root]
        return RunningServer(self, argv, workdir, {"h1": endpoint, "h2c": endpoint}, cpu)


class NginxReturn(ServerSpec):
    """nginx answering `return 200 "hello world\\n"` itself (bench/peers/nginx-hello.conf)."""

    name = "nginx"
    programs = ("nginx",)
    protocols = ("h1", "h2c")
    apps = ("hello", "static")
    not_applicable = {"counter-shm": "no counter app", "counter-mc": "no counter app"}

    def __init__(self, workers=1):
        super().__init__(workers)
        self.expected_children = workers

    def version(self):
        return first_line(["nginx", "-v"]).replace("nginx version: ", "")

    def describe(self):
        return (f"`return 200`, worker_processes {self.workers}, access_log off, "
                "keepalive_requests 1e8; h2c on a second port (`listen ... http2`); "
                f"{STATIC_PATH} from a document root (`location =`, `root`)")

    def start(self, workdir, cpu, workload=None):
        port, h2c_port = free_port(), free_port()
        root = write_docroot(workdir, {STATIC_PATH[1:]: STATIC_BODY})
        conf = render("nginx-hello.conf", workdir, prefix=workdir, port=port, h2c_port=h2c_port,
                      workers=self.workers, docroot=root, static_path=STATIC_PATH)
        argv = ["nginx", "-p", workdir, "-c", conf, "-g", "daemon off;"]
        return RunningServer(self, argv, workdir, {"h1": port, "h2c": h2c_port}, cpu)


class Starman(ServerSpec):
    """starman (Perl PSGI, preforked) running bench/peers/app.psgi (hello; counter on memcached).

    listen "tcp" (127.0.0.1, a free port) or "unix" (a socket in workdir).
    """

    name = "starman"
    programs = ("starman",)
    protocols = ("h1",)
    apps = ("hello", "counter-mc")
    not_applicable = {"h2c": "no HTTP/2", "counter-shm": "no shm counter store",
                      "static": "app.psgi serves no files"}

    def __init__(self, workers=1, listen="tcp"):
        super().__init__(workers)
        self.expected_children = workers
        self.listen = listen
        self.memcached = None  # (host, port), set by the suite

    def version(self):
        v = subprocess.run(["perl", "-MStarman", "-e", "print $Starman::VERSION"],
                           capture_output=True, text=True).stdout.strip()
        perl = subprocess.run(["perl", "-e", "print $^V"], capture_output=True,
                              text=True).stdout.strip()
        return f"Starman {v or '?'} (perl {perl or '?'})"

    def describe(self):
        return (f"`--workers {self.workers}`, keep-alive on (its default), --max-requests 1e8 "
                "(Net::Server counts connections); one connection at a time per worker; "
                "counter: memcached text protocol over one socket per worker (pure Perl)")

    def start(self, workdir, cpu, workload=None):
        if self.listen == "unix":
            endpoint = os.path.join(workdir, "starman.sock")
            listen = endpoint  # starman: a path without a colon is a unix socket
        else:
            endpoint = free_port()
            listen = f"127.0.0.1:{endpoint}"
        app = os.path.join(workdir, "app.psgi")
        shutil.copy(os.path.join(PEERS_DIR, "app.psgi"), app)
        env = {}
        if self.memcached:
            env["BENCH_MEMCACHED"] = "{}:{}".format(*self.memcached)
        argv = ["starman", "--listen", listen, "--workers", str(self.workers),
                "--max-requests", "100000000", app]
        return RunningServer(self, argv, workdir, {"h1": endpoint}, cpu, env=env)


class Memcached(ServerSpec):
    """memcached for the counter workloads: shared by the run, not measured."""

    name = "memcached"
    programs = ("memcached",)

    def version(self):
        return first_line(["memcached", "-V"])

    def describe(self):
        return "`-t 1 -m 64`, 127.0.0.1, a free port; one for the whole suite"

    def start(self, workdir, cpu, workload=None):
        port = free_port()
        argv = ["memcached", "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-m", "64",
                "-t", "1", "-c", "4096"]
        if os.geteuid() == 0:
            argv += ["-u", "root"]  # memcached refuses root without naming a user
        return RunningServer(self, argv, workdir, {"mc": port}, cpu)


class HitFloor(ServerSpec):
    """bench/floor/hit_floor.c: what a cache hit over HTTP/1.1 costs the kernel alone (a fixed
    head, then the body by sendfile from a memory file; no HTTP beyond finding the blank line).
    Not a cache and not a peer: the limit any cache can approach, shown beside them."""

    name = "floor (sendfile)"
    peer = False
    programs = ("cc",)
    protocols = ("h1",)
    apps = ("bytes",)

    def __init__(self, repo_dir):
        super().__init__(1)
        self.source = os.path.join(repo_dir, "bench", "floor", "hit_floor.c")

    def version(self):
        return "bench/floor/hit_floor.c, " + first_line(["cc", "--version"])

    def describe(self):
        return ("one thread, epoll, keep-alive: a fixed head with MSG_MORE, then the body by "
                "sendfile from a memfd; built with cc -O2 at the start of each measurement")

    def start(self, workdir, cpu, workload=None):
        binary = os.path.join(workdir, "hit_floor")
        subprocess.run(["cc", "-O2", "-o", binary, self.source], check=True)
        port = free_port()
        return RunningServer(self, [binary, str(port)], workdir, {"h1": port}, cpu)
