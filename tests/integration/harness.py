"""Starting and stopping the real binaries for integration tests.

Every server a test starts listens on a loopback port picked here (or a unix socket in a
temporary directory), is waited for by connecting to it (never by sleeping), and is stopped by
its PID when the test ends.
"""
import atexit
import contextlib
import fcntl
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

BUILD_DIR = os.environ.get(
    "PORTICO_BUILD_DIR",
    os.path.join(os.path.dirname(__file__), "..", "..", "build"))
BACKEND = os.path.join(BUILD_DIR, "backend", "portico-backend")
PYTHON = "/usr/bin/python3"  # python3-h2 imports only here


# Ports are picked below the kernel's ephemeral range, which every connect() and bind-to-0 of
# every test beside this one draws from (a pick from that range was taken by a client's
# source port before the server bound it), and each is reserved across the suite's processes
# by a lock held until this process exits. bench/lib/servers.py picks from 20000 up.
PORT_RANGE = (12000, 20000)
_PORT_LOCKS = os.path.join(tempfile.gettempdir(), "portico-test-ports")
_held_ports = {}
_port_rng = random.Random()


def free_port():
    """A TCP and UDP port on 127.0.0.1 nobody listens on, reserved for this process."""
    os.makedirs(_PORT_LOCKS, exist_ok=True)
    for _ in range(2000):
        port = _port_rng.randrange(*PORT_RANGE)
        if port in _held_ports:
            continue
        lock = os.open(os.path.join(_PORT_LOCKS, str(port)), os.O_WRONLY | os.O_CREAT, 0o666)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock)
            continue
        if _bindable(port):
            _held_ports[port] = lock
            return port
        os.close(lock)
    raise AssertionError(f"no free port in {PORT_RANGE}")


def _bindable(port):
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        with socket.socket(socket.AF_INET, kind) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers bind
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


def dead_endpoint(test):
    """A loopback port that refuses connections for the whole test: bound but never listening,
    and held, so that no test running beside this one can take it over."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    test.addCleanup(s.close)
    return f"127.0.0.1:{s.getsockname()[1]}"


# ss's state names, as the callers know them from /proc/net/tcp.
_TCP_STATES = {"ESTAB": "01", "SYN-SENT": "02", "SYN-RECV": "03", "FIN-WAIT-1": "04",
               "FIN-WAIT-2": "05", "TIME-WAIT": "06", "UNCONN": "07", "CLOSE-WAIT": "08",
               "LAST-ACK": "09", "LISTEN": "0A", "CLOSING": "0B"}


def tcp_sockets(local_port=None, remote_port=None):
    """The IPv4 TCP sockets with that local or remote port: (state, tx_queue, rx_queue) each,
    state as /proc/net/tcp writes it ("01" established, "0A" listening). For a listening socket
    rx_queue is the length of its accept queue.

    Asked of the kernel through ss (sock_diag, filtered in the kernel), not read from
    /proc/net/tcp: a read of that file resumes its walk of the socket table page by page, so
    while other sockets come and go it repeats and skips rows (80 established connections
    counted as up to 101 here), and a count taken from it is wrong."""
    cond = []
    if local_port is not None:
        cond.append(f"sport = :{local_port}")
    if remote_port is not None:
        cond.append(f"dport = :{remote_port}")
    out = []
    text = subprocess.run(["ss", "-Htan4"] + ([" and ".join(cond)] if cond else []),
                          check=True, capture_output=True, text=True).stdout
    for line in text.splitlines():
        state, rx, tx = line.split()[:3]
        out.append((_TCP_STATES[state], int(tx), int(rx)))
    return out


def sanitized_build():
    """Whether the build under test is the ASan+UBSan one, whose allocator (redzones, a
    quarantine, no trimming) makes memory figures its own."""
    cache = os.path.join(os.environ["PORTICO_BUILD_DIR"], "CMakeCache.txt")
    with open(cache) as f:
        return re.search(r"^PORTICO_SANITIZE:BOOL=(ON|TRUE|1)$", f.read(), re.M) is not None


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


def pid_alive(pid):
    """True while pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def stop_process(pid):
    """SIGSTOP, returning once every thread of pid has stopped: kill(2) returns before they
    have, and one still running may yet read (and answer) what the test meant to leave unread."""
    os.kill(pid, signal.SIGSTOP)

    def stopped():
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] not in ("T", "t", "Z", "X"):
                        return False
            except FileNotFoundError:
                pass  # a thread that has exited
        return True
    wait_until(stopped, what=f"process {pid} stopped")


def continue_process(pid):
    os.kill(pid, signal.SIGCONT)


def http_get(port, path="/hello", timeout=10):
    """One GET on a fresh connection to 127.0.0.1:port: (status, body)."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def metric_sample(text, name, **labels):
    """The value of the first sample of family name (with these labels among its own) in a
    Prometheus text exposition; 0 when there is none."""
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            if all(f'{k}="{v}"' in line for k, v in labels.items()):
                return float(line.rsplit(" ", 1)[1])
    return 0.0


def cpu_seconds(pid):
    """User plus system CPU time of process pid so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Http1Response:
    def __init__(self, status, reason, version, headers, body):
        self.status, self.reason, self.version = status, reason, version
        self.headers = headers  # list of (lower-case name, value)
        self.body = body

    def header(self, name, default=None):
        for n, v in self.headers:
            if n == name:
                return v
        return default

    def __repr__(self):
        return f"<{self.version} {self.status} {self.headers} {self.body[:80]!r}>"


def read_to_eof(sock):
    """Everything the peer sends until its FIN."""
    got = b""
    while True:
        data = sock.recv(65536)
        if not data:
            return got
        got += data


def read_http1_response(f, head_request=False):
    """Reads one HTTP/1.x response from a binary file object (socket.makefile("rb")), body
    framed by content-length, chunked or EOF. Returns None at a clean EOF before any byte."""
    line = f.readline()
    if not line:
        return None
    if not line.endswith(b"\r\n"):
        raise AssertionError(f"bad status line {line!r}")
    version, status, reason = (line[:-2].decode("latin1").split(" ", 2) + [""])[:3]
    headers = []
    while True:
        line = f.readline()
        if not line.endswith(b"\r\n"):
            raise AssertionError(f"truncated header section at {line!r}")
        if line == b"\r\n":
            break
        name, _, value = line[:-2].decode("latin1").partition(":")
        headers.append((name.strip().lower(), value.strip()))
    resp = Http1Response(int(status), reason, version, headers, b"")
    code = resp.status
    if head_request or 100 <= code < 200 or code in (204, 304):
        return resp
    if "chunked" in resp.header("transfer-encoding", ""):
        body = bytearray()
        while True:
            size = int(f.readline().split(b";")[0], 16)
            if size == 0:
                while f.readline() not in (b"\r\n", b""):
                    pass  # trailers
                break
            body += f.read(size)
            if f.read(2) != b"\r\n":
                raise AssertionError("bad chunk framing")
        resp.body = bytes(body)
    elif resp.header("content-length") is not None:
        n = int(resp.header("content-length"))
        resp.body = f.read(n)
        if len(resp.body) != n:
            raise AssertionError(f"body truncated at {len(resp.body)} of {n} bytes")
    else:
        resp.body = f.read()
    return resp


@contextlib.contextmanager
def connection(port, timeout=5.0, host="127.0.0.1"):
    """A client socket and a buffered reader on it, both closed on exit (a socket with a live
    makefile() reader stays open after its own close())."""
    s = socket.create_connection((host, port), timeout=timeout)
    f = s.makefile("rb")
    try:
        yield s, f
    finally:
        f.close()
        s.close()


def exchange_raw(port, data, timeout=5.0, responses=1, host="127.0.0.1", wait_close=True):
    """Sends data on a fresh connection and reads up to `responses` responses. Returns
    (responses, closed): closed is True when the server closed the connection afterwards
    (None without wait_close, for a connection the server keeps open)."""
    with connection(port, timeout, host) as (s, f):
        s.sendall(data)
        out = []
        for _ in range(responses):
            r = read_http1_response(f)
            if r is None:
                break
            out.append(r)
        if not wait_close:
            return out, None
        try:
            closed = f.read(1) == b""
        except ConnectionResetError:
            closed = True  # closed abortively, but closed
        except socket.timeout:
            closed = False
        return out, closed


SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


# UBSan's vptr check reads the vtable only after probing it through a pipe(); with every file
# descriptor taken the probe fails and a live object is reported as having an "invalid vptr".
# Its memory "cannot be printed" when the dump's own probe fails too; when another thread has
# freed a descriptor in between, the dump is printed, showing a vptr into the binary. A test
# that exhausts descriptors on purpose may pass either.
UBSAN_FD_EXHAUSTION = (r"[^\n]*runtime error: [^\n]* address 0x[0-9a-f]+ which does not point "
                       r"to an object of type [^\n]*\n"
                       r"[^\n]*note: object has invalid vptr\n"
                       r"(?:<memory cannot be printed>\n"
                       r"|[ 0-9a-f]+\n\s*\^~*\n\s*invalid vptr\n)"
                       r"(?:\s+#\d+[^\n]*\n)*")


def check_sanitizer_log(text, what, ignore=()):
    """Fails the test when a sanitizer reported anything in a server's log (an ASan+UBSan
    build reports into stderr, which the harness sends to the log); ignore: patterns of
    reports known to be false (UBSAN_FD_EXHAUSTION)."""
    for pattern in ignore:
        text = re.sub(pattern, "", text)
    for mark in SANITIZER_MARKS:
        if mark in text:
            start = text.index(mark)
            report = text[max(0, start - 200):start + 3000]
            raise AssertionError(f"{what}: sanitizer report:\n{report}")


# Every server a test started, in its own session: those still running when the test process
# ends (a setUpClass that failed after starting one never reaches its tearDownClass) are killed
# then, with their process groups, rather than left to hold ports and confuse later tests.
_started = []


def started(proc):
    """Registers a server's Popen for that last resort; returns it."""
    _started.append(proc)
    return proc


@atexit.register
def _kill_leftovers():
    for proc in _started:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()


class Process:
    """Any helper server (memcached, start_server) run for a test, stopped by its PID."""

    def __init__(self, cmd, log_path, env=None, ignore_reports=(), cwd=None):
        self.log_path = log_path
        self.ignore_reports = ignore_reports
        self.log = open(log_path, "w")
        self.proc = started(subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                             env=env, start_new_session=True, cwd=cwd))

    @property
    def pid(self):
        return self.proc.pid

    def read_log(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def stop(self, sig=signal.SIGTERM, timeout=20):
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, sig)
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        if not self.log.closed:
            self.log.close()
        if os.path.exists(self.log_path):
            with open(self.log_path, errors="replace") as f:
                check_sanitizer_log(f.read(), self.proc.args[0], self.ignore_reports)
        return self.proc.returncode


class Hammer:
    """Client threads sending requests in a loop until stopped, counting outcomes: for proving
    that a restart loses nothing. Half the threads keep their connection alive, half open a
    fresh one per request.

    A server may close an idle keep-alive connection at any moment (RFC 9112 9.3.1), so a
    request on a *reused* connection that fails before any response byte is retried once on a
    fresh connection, as curl, browsers and the proxy do (RFC 9110 9.2.2); such retries are
    counted in `retried`. Every other error, and any failure on a fresh connection, is a
    failure."""

    def __init__(self, port, threads=4, path="/hello", expect=b"hello world\n"):
        self.port, self.path, self.expect = port, path, expect
        self.ok = 0
        self.retried = 0
        self.failures = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(i,), daemon=True)
                         for i in range(threads)]

    def __enter__(self):
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        self._stop.set()
        for t in self._threads:
            t.join(timeout=30)

    def _one(self, conn, keep_alive):
        """One request; returns whether the connection may be reused."""
        conn.request("GET", self.path, headers={} if keep_alive else {"Connection": "close"})
        resp = conn.getresponse()
        body = resp.read()
        if resp.status != 200 or body != self.expect:
            raise AssertionError(f"got {resp.status} {body!r}")
        with self._lock:
            self.ok += 1
        return keep_alive and not resp.will_close

    def _run(self, index):
        import http.client
        keep_alive = index % 2 == 0
        conn, reused = None, False
        while not self._stop.is_set():
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
                    reused = False
                try:
                    alive = self._one(conn, keep_alive)
                except (http.client.RemoteDisconnected, ConnectionResetError,
                        BrokenPipeError):
                    # RemoteDisconnected means no status line arrived; a reset may have come
                    # mid-response, but /hello is idempotent either way.
                    if not reused:
                        raise
                    with self._lock:
                        self.retried += 1
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
                    reused = False
                    alive = self._one(conn, keep_alive)
                if alive:
                    reused = True
                else:
                    conn.close()
                    conn = None
            except Exception as e:  # noqa: BLE001 - every failure is counted and reported
                with self._lock:
                    self.failures.append(f"{'reused' if reused else 'fresh'}: {e!r}")
                if conn is not None:
                    conn.close()
                conn = None
        if conn is not None:
            conn.close()

    def count(self):
        with self._lock:
            return self.ok


def churning_starman(tmp, psgi_app, env=None, workers=4):
    """starman on a fresh loopback port, serving psgi_app (its text) with `workers` workers
    that close idle connections after 1 s and retire every 25 connections: an upstream that
    races its clients' keep-alive. Returns (process, port), the port open; the caller stops
    it."""
    app = os.path.join(tmp, "app.psgi")
    with open(app, "w") as f:
        f.write(psgi_app)
    port = free_port()
    starman = Process(["starman", "--listen", f"127.0.0.1:{port}", "--workers", str(workers),
                       "--keepalive-timeout", "1", "--max-requests", "25", app],
                      os.path.join(tmp, "starman.log"), env=env)
    try:
        wait_until(lambda: port_open("127.0.0.1", port), timeout=30, what="starman")
    except BaseException:
        starman.stop()
        raise
    return starman, port


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
        try:
            self.proc = started(subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                                 env=env, start_new_session=True))
        except BaseException:  # no binary (not built): leave no temporary directory behind
            self.log.close()
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise
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
        if self.log.closed:
            return self.final_log  # stopped: the temporary directory is gone
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def signal(self, sig):
        os.kill(self.proc.pid, sig)

    def wait_log(self, text, count=1, timeout=10):
        """Waits until text appears in the log at least count times."""
        return wait_until(lambda: self.read_log().count(text) >= count, timeout=timeout,
                          what=f"{text!r} x{count} in the backend log")

    def rss_kib(self):
        """RSS of the master and all its workers together."""
        total = 0
        for pid in [self.pid] + self.worker_pids():
            try:
                total += rss_kib(pid)
            except FileNotFoundError:
                pass
        return total

    # sig defaults to None, not signal.SIGTERM: in the class body "signal" is the method above.
    def stop(self, sig=None, timeout=30):
        """Stops the master (and so its workers); returns its exit code."""
        sig = signal.SIGTERM if sig is None else sig
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
        if not self.log.closed:
            self.final_log = self.read_log()
            self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
        check_sanitizer_log(self.final_log, "portico-backend")
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def need(*programs):
    """Fails the test unless each program is on PATH: deploy/install-deps.sh installs them
    all, and a test that skips for a missing tool would let a broken install pass."""
    missing = [p for p in programs if shutil.which(p) is None]
    if missing:
        raise AssertionError(f"missing programs (run deploy/install-deps.sh): {missing}")
