"""The load generators, each run bounded in time: wrk (HTTP/1.1 keep-alive), h2load (h2c, h2
over TLS, a fixed request rate), portico-h3load (HTTP/3; bench/h3load, since Debian 12's h2load
is built without it), bench/lib/tls_conns.py (full and resumed TLS handshakes, one connection
after the other) and bench/lib/idle_h2.py (idle h2c connections held open).

A run returns what the client saw: requests completed, requests/s, p50/p99 latency, errors,
and the client's own CPU time (from wait4), which tells whether the client was the bottleneck.
"""
import json
import os
import re
import selectors
import sys
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field

from .servers import BenchError


@dataclass
class ClientResult:
    requests: int = 0  # responses completed in the window
    seconds: float = 0.0  # the client's own measured duration
    rps: float = 0.0
    p50_ms: float | None = None
    p99_ms: float | None = None
    p999_ms: float | None = None
    errors: int = 0
    error_detail: dict = field(default_factory=dict)
    client_cpu_s: float = 0.0
    wall_s: float = 0.0  # from just before the client started to just after it exited
    output: str = ""
    extra: dict = field(default_factory=dict)  # client-specific figures (connect time, TLS...)


@dataclass
class Load:
    """How hard to push: seconds (timed runs) or requests (counted runs, h2load only)."""
    connections: int = 100
    streams: int = 10  # h2 streams in flight per connection
    seconds: float = 10.0
    requests: int | None = None  # h2load -n instead of -D when set
    timeout_s: float = 2.0  # a response slower than this counts as a timeout error
    rps: int | None = None  # h2load --rps (requests per second per connection): a fixed rate
    h1: bool = False  # h2load --h1 (HTTP/1.1) instead of h2c


def _run_bounded(argv, cpu, limit_s, out_path):
    """Runs argv (pinned to cpu) with its output in out_path; returns (rc, cpu_s, wall_s).

    The client is killed if it outlives limit_s: every load run is bounded in time.
    """
    if cpu is not None:
        argv = ["taskset", "-c", str(cpu)] + argv
    with open(out_path, "w") as out:
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        timer = threading.Timer(limit_s, lambda: os.killpg(proc.pid, signal.SIGKILL))
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    with open(out_path, errors="replace") as f:
        text = f.read()
    if proc.returncode != 0:
        raise BenchError(f"{' '.join(argv)} exited with {proc.returncode}:\n{text[-2000:]}")
    return text, usage.ru_utime + usage.ru_stime, wall


_UNITS_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}


def _to_ms(value, unit):
    return float(value) * _UNITS_MS[unit]


def parse_wrk(text):
    r = ClientResult(output=text)
    m = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m|h)", text)
    if not m:
        raise BenchError(f"cannot read wrk's output:\n{text}")
    r.requests = int(m.group(1))
    r.seconds = _to_ms(m.group(2), m.group(3)) / 1e3
    m = re.search(r"Requests/sec:\s+([\d.]+)", text)
    r.rps = float(m.group(1)) if m else (r.requests / r.seconds if r.seconds else 0.0)
    for pct, attr in (("50", "p50_ms"), ("99", "p99_ms")):
        m = re.search(rf"^\s+{pct}%\s+([\d.]+)(us|ms|s|m|h)\s*$", text, re.M)
        if m:
            setattr(r, attr, _to_ms(m.group(1), m.group(2)))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if m:
        r.error_detail.update(connect=int(m.group(1)), read=int(m.group(2)),
                              write=int(m.group(3)), timeout=int(m.group(4)))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    if m:
        r.error_detail["non-2xx"] = int(m.group(1))
    r.errors = sum(r.error_detail.values())
    # Requests and req/s count good responses only (wrk's own Requests/sec includes errors).
    r.requests -= r.error_detail.get("non-2xx", 0)
    r.rps = r.requests / r.seconds if r.seconds else 0.0
    return r


def run_wrk(url, load, cpu, workdir, tag):
    """wrk, one thread, load.connections keep-alive connections for load.seconds."""
    seconds = max(1, round(load.seconds))  # wrk takes whole seconds
    argv = ["wrk", "-t1", f"-c{load.connections}", f"-d{seconds}s", "--latency",
            f"--timeout={max(1, round(load.timeout_s))}s", url]
    text, cpu_s, wall = _run_bounded(argv, cpu, seconds + 30,
                                     os.path.join(workdir, f"{tag}.wrk.txt"))
    r = parse_wrk(text)
    r.client_cpu_s, r.wall_s = cpu_s, wall
    return r


def _percentile(sorted_values, pct):
    if not sorted_values:
        return None
    k = min(len(sorted_values) - 1, max(0, round(pct / 100 * len(sorted_values)) - 1))
    return sorted_values[k]


def _h2load_stat_mean(text, label):
    """The mean column of h2load's "time for connect:" / "time to 1st byte:" lines, in ms."""
    m = re.search(rf"^{label}:\s+\S+\s+\S+\s+([\d.]+)(us|ms|s)\s", text, re.M)
    return _to_ms(m.group(1), m.group(2)) if m else None


def parse_h2load(text, log_path=None):
    r = ClientResult(output=text)
    m = re.search(r"finished in ([\d.]+)(us|ms|s|m|h), ([\d.]+) req/s", text)
    m2 = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                   r"(\d+) failed, (\d+) errored, (\d+) timeout", text)
    if not m or not m2:
        raise BenchError(f"cannot read h2load's output:\n{text}")
    r.seconds = _to_ms(m.group(1), m.group(2)) / 1e3
    # h2load's own req/s counts failed requests too: req/s here is succeeded ones only.
    r.requests = int(m2.group(4))
    r.rps = r.requests / r.seconds if r.seconds else float(m.group(3))
    r.error_detail.update(failed=int(m2.group(5)), timeout=int(m2.group(7)))
    m = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text)
    if m:
        r.error_detail["4xx/5xx"] = int(m.group(3)) + int(m.group(4))
    # "failed" already holds the 4xx/5xx responses (and, with them, any other failure).
    r.errors = max(r.error_detail["failed"],
                   r.error_detail.get("4xx/5xx", 0) + r.error_detail["timeout"])
    m = re.search(r"traffic: .*?\((\d+)\) total.*?\((\d+)\) data", text)
    if m:
        r.extra["bytes_total"] = int(m.group(1))
        r.extra["bytes_data"] = int(m.group(2))
    for label, key in (("time for connect", "connect_ms"), ("time to 1st byte", "ttfb_ms")):
        value = _h2load_stat_mean(text, label)
        if value is not None:
            r.extra[key] = value
    for label, key in (("TLS Protocol", "tls_protocol"), ("Cipher", "tls_cipher"),
                       ("Application protocol", "alpn")):
        m = re.search(rf"^{label}: (\S+)", text, re.M)
        if m:
            r.extra[key] = m.group(1)
    if log_path and os.path.exists(log_path):
        # --log-file: start time (us since epoch), status (-1: failed), response time (us).
        times = []
        with open(log_path) as f:
            for line in f:
                parts = line.split("\t")
                if len(parts) >= 3 and parts[1] != "-1":
                    times.append(int(parts[2]))
        times.sort()
        for pct, attr in ((50, "p50_ms"), (99, "p99_ms"), (99.9, "p999_ms")):
            v = _percentile(times, pct)
            setattr(r, attr, None if v is None else v / 1e3)
        if times:
            r.extra["max_ms"] = times[-1] / 1e3
    return r


def run_h2load(url, load, cpu, workdir, tag, latency=True):
    """h2load, one thread: h2c by prior knowledge (or --h1, or h2 over TLS for an https URL);
    timed (-D) or counted (-n); at a fixed rate per connection when load.rps is set."""
    argv = ["h2load", "-t1", f"-c{load.connections}", f"-m{load.streams}"]
    if load.h1:
        argv.append("--h1")
    if load.rps:
        argv.append(f"--rps={load.rps}")
    if load.requests:
        argv.append(f"-n{load.requests}")
        limit = 120
    else:
        seconds = max(1, round(load.seconds))
        argv.append(f"-D{seconds}")
        limit = seconds + 30
    log_path = os.path.join(workdir, f"{tag}.h2load.log") if latency else None
    if log_path:
        argv.append(f"--log-file={log_path}")
    argv.append(url)
    text, cpu_s, wall = _run_bounded(argv, cpu, limit, os.path.join(workdir, f"{tag}.h2load.txt"))
    r = parse_h2load(text, log_path)
    if log_path and os.path.exists(log_path):
        os.unlink(log_path)  # can be tens of MB
    r.client_cpu_s, r.wall_s = cpu_s, wall
    return r


H3_AUTHORITY_HOST = "localhost"  # Caddy's site is `https://localhost:PORT`: a host matcher
H3_TIMEOUT_S = 10  # portico-h3load --timeout: handshake, stall, and grace after -D


def parse_h3load(text):
    """portico-h3load's h2load-like lines: requests/s of 2xx responses, errors, latency."""
    r = ClientResult(output=text)
    m = re.search(r"finished in ([\d.]+)s, ([\d.]+) req/s", text)
    m2 = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                   r"(\d+) failed, (\d+) errored", text)
    if not m or not m2:
        raise BenchError(f"cannot read portico-h3load's output:\n{text}")
    r.seconds = float(m.group(1))
    r.requests = int(m2.group(4))  # 2xx only; its req/s counts the same
    r.extra["done"] = int(m2.group(3))  # responses of any status, and reset streams
    r.rps = r.requests / r.seconds if r.seconds else 0.0
    # "failed" = done - succeeded: non-2xx responses and reset streams ("errored") alike.
    r.error_detail.update(failed=int(m2.group(5)), errored=int(m2.group(6)))
    m = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text)
    if m:
        r.error_detail["4xx/5xx"] = int(m.group(3)) + int(m.group(4))
    m = re.search(r"connections: (\d+) handshakes, (\d+) failed(?:, the first: (.*))?", text)
    if m:
        r.error_detail["connections failed"] = int(m.group(2))
        r.extra["handshakes"] = int(m.group(1))
        if m.group(3):
            r.extra["first_failure"] = m.group(3).strip()
    r.errors = r.error_detail["failed"] + r.error_detail.get("connections failed", 0)
    m = re.search(r"traffic: (\d+) bytes of response bodies", text)
    if m:
        r.extra["bytes_data"] = int(m.group(1))
        r.extra["mb_s"] = int(m.group(1)) / 1e6 / r.seconds if r.seconds else None
    m = re.search(r"latency: p50 ([\d.]+) ms, p99 ([\d.]+) ms, max ([\d.]+) ms", text)
    if m and r.requests:
        r.p50_ms, r.p99_ms = float(m.group(1)), float(m.group(2))
        r.extra["max_ms"] = float(m.group(3))
    return r


def _h3load_argv(binary, port, path, shape, timeout_s=H3_TIMEOUT_S):
    """portico-h3load's command line; shape: -n/-c/-m/-D, each option and value apart (it
    does not take `-c100`)."""
    return [binary, *shape, "--path", path, "--authority", f"{H3_AUTHORITY_HOST}:{port}",
            "--timeout", f"{timeout_s:g}", f"127.0.0.1:{port}"]


def run_h3load(binary, port, path, load, cpu, workdir, tag):
    """portico-h3load (one thread): load.connections QUIC connections, load.streams requests in
    flight on each, for load.seconds (-D) or load.requests (-n). Requests in flight when the
    time is up get H3_TIMEOUT_S more; a run without a response for that long fails."""
    shape = ["-c", str(load.connections), "-m", str(load.streams)]
    if load.requests:
        shape += ["-n", str(load.requests)]
        limit = 120
    else:
        shape += ["-D", f"{load.seconds:g}"]
        limit = load.seconds + H3_TIMEOUT_S + 30
    text, cpu_s, wall = _run_bounded(_h3load_argv(binary, port, path, shape), cpu, limit,
                                     os.path.join(workdir, f"{tag}.h3load.txt"))
    r = parse_h3load(text)
    r.client_cpu_s, r.wall_s = cpu_s, wall
    return r


def h3_get(binary, port, path, workdir, timeout_s):
    """One HTTP/3 GET (portico-h3load -n 1), its handshake given timeout_s: (ClientResult,
    output), or (None, output) when no response came (a server whose UDP socket is not bound
    yet answers nothing)."""
    out = os.path.join(workdir, "h3-check.txt")
    try:
        text, _, _ = _run_bounded(_h3load_argv(binary, port, path, ["-n", "1"], timeout_s),
                                  None, timeout_s + 10, out)
    except BenchError as e:  # exit 1: no answer within timeout_s ("stalled")
        return None, str(e)
    r = parse_h3load(text)
    return (r if r.extra["done"] else None), text


def run_h2load_new_connections(url, connections, rate, cpu, workdir, tag):
    """h2load over TLS (ALPN h2): `connections` connections, each one full handshake and one
    GET, then closed; started at a fixed rate (rate per second, in batches every 10 ms).

    h2load never resumes a TLS session across its connections, so each is a full handshake.
    Returns the ClientResult; requests = connections completed, rps = connections/s achieved.
    """
    period_ms = 10
    per_period = max(1, round(rate * period_ms / 1000))
    argv = ["h2load", "-t1", f"-c{connections}", f"-n{connections}", "-m1",
            f"-r{per_period}", f"--rate-period={period_ms}ms", url]
    limit = connections / (per_period * 1000 / period_ms) + 30
    text, cpu_s, wall = _run_bounded(argv, cpu, limit, os.path.join(workdir, f"{tag}.h2load.txt"))
    r = parse_h2load(text)
    r.extra["offered_cps"] = per_period * 1000 / period_ms
    r.client_cpu_s, r.wall_s = cpu_s, wall
    return r


def run_tls_conns(port, seconds, reuse, cpu, workdir, tag, tls12=False):
    """bench/lib/tls_conns.py: TLS connections one after the other for `seconds`, each a GET /
    over HTTP/1.0 read to the end; full handshakes, or resumed sessions (reuse).

    requests = connections made; rps = connections per second; errors = connections that
    failed or did not get a 200.
    """
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tls_conns.py")
    argv = [sys.executable, script, str(port), f"--seconds={seconds:g}"]
    if reuse:
        argv.append("--reuse")
    if tls12:
        argv.append("--tls12")
    text, cpu_s, wall = _run_bounded(argv, cpu, seconds + 30,
                                     os.path.join(workdir, f"{tag}.tls.txt"))
    try:
        out = json.loads(text.strip().splitlines()[-1])
    except (ValueError, IndexError) as e:
        raise BenchError(f"cannot read tls_conns.py's output:\n{text}") from e
    r = ClientResult(output=text)
    r.requests = out["connections"] - out["errors"]
    r.seconds = out["seconds"]
    r.rps = out["connections"] / out["seconds"] if out["seconds"] else 0.0
    r.errors = out["errors"]
    r.error_detail["failed"] = out["errors"]
    n = out["connections"]
    r.extra["resumed_pct"] = 100 * out["resumed"] / n if n else None
    r.extra["bytes_per_conn"] = out["bytes"] / n if n else None
    r.client_cpu_s, r.wall_s = cpu_s, wall
    return r


class IdleClient:
    """bench/lib/idle_h2.py in a process of its own: opens COUNT h2c connections and holds them.

    start() -> the established line; check() -> (open, closed); close() ends it. Every wait is
    bounded; the process is killed if it outlives its limit.
    """

    SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "idle_h2.py")

    def __init__(self, port, count, cpu, workdir, tag, limit_s=180, get=None, tls=False):
        argv = [sys.executable, self.SCRIPT, "127.0.0.1", str(port), str(count)]
        if get:
            argv += ["--get", get]
        if tls:
            argv.append("--tls")
        if cpu is not None:
            argv = ["taskset", "-c", str(cpu)] + argv
        self.err_path = os.path.join(workdir, f"{tag}.idle.txt")
        self._err = open(self.err_path, "w")
        self.start_time = time.monotonic()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._err, text=True, start_new_session=True)
        self.timer = threading.Timer(limit_s, self._kill)
        self.timer.start()
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.proc.stdout, selectors.EVENT_READ)

    def _kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def _line(self, timeout):
        if not self.sel.select(timeout):
            raise BenchError(f"idle client: no answer within {timeout}s")
        line = self.proc.stdout.readline()
        if not line:
            self._err.flush()
            with open(self.err_path, errors="replace") as f:
                raise BenchError(f"idle client exited ({self.proc.wait()}):\n{f.read()[-2000:]}")
        return line.split()

    def established(self, timeout=150):
        """(ok, failed, seconds) once every connection is set up or failed."""
        w = self._line(timeout)
        if w[:1] != ["ESTABLISHED"]:
            raise BenchError(f"idle client said {' '.join(w)}")
        return int(w[1]), int(w[3]), float(w[5])

    def check(self, timeout=30):
        self.proc.stdin.write("CHECK\n")
        self.proc.stdin.flush()
        w = self._line(timeout)
        return int(w[1]), int(w[3])

    def close(self):
        """Tells the client to close everything; returns its CPU seconds and wall seconds."""
        try:
            if self.proc.poll() is None:
                self.proc.stdin.write("EXIT\n")
                self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        try:
            _, _, usage = os.wait4(self.proc.pid, 0)
            cpu = usage.ru_utime + usage.ru_stime
        except ChildProcessError:
            cpu = 0.0
        self.timer.cancel()
        self.sel.close()
        self._err.close()
        return cpu, time.monotonic() - self.start_time


CLIENTS = {"wrk": run_wrk, "h2load": run_h2load}
