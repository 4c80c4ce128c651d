"""The load generators: wrk for HTTP/1.1 keep-alive, h2load for h2c; each run bounded in time.

A run returns what the client saw: requests completed, requests/s, p50/p99 latency, errors,
and the client's own CPU time (from wait4), which tells whether the client was the bottleneck.
"""
import os
import re
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
    errors: int = 0
    error_detail: dict = field(default_factory=dict)
    client_cpu_s: float = 0.0
    wall_s: float = 0.0  # from just before the client started to just after it exited
    output: str = ""


@dataclass
class Load:
    """How hard to push: seconds (timed runs) or requests (counted runs, h2load only)."""
    connections: int = 100
    streams: int = 10  # h2 streams in flight per connection
    seconds: float = 10.0
    requests: int | None = None  # h2load -n instead of -D when set
    timeout_s: float = 2.0  # a response slower than this counts as a timeout error


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


def parse_h2load(text, log_path=None):
    r = ClientResult(output=text)
    m = re.search(r"finished in ([\d.]+)(us|ms|s|m|h), ([\d.]+) req/s", text)
    m2 = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                   r"(\d+) failed, (\d+) errored, (\d+) timeout", text)
    if not m or not m2:
        raise BenchError(f"cannot read h2load's output:\n{text}")
    r.seconds = _to_ms(m.group(1), m.group(2)) / 1e3
    r.rps = float(m.group(3))
    r.requests = int(m2.group(4))
    r.error_detail.update(failed=int(m2.group(5)), timeout=int(m2.group(7)))
    m = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text)
    if m:
        r.error_detail["4xx/5xx"] = int(m.group(3)) + int(m.group(4))
    r.errors = sum(r.error_detail.values())
    if log_path and os.path.exists(log_path):
        # --log-file: start time (us since epoch), status (-1: failed), response time (us).
        times = []
        with open(log_path) as f:
            for line in f:
                parts = line.split("\t")
                if len(parts) >= 3 and parts[1] != "-1":
                    times.append(int(parts[2]))
        times.sort()
        p50, p99 = _percentile(times, 50), _percentile(times, 99)
        r.p50_ms = None if p50 is None else p50 / 1e3
        r.p99_ms = None if p99 is None else p99 / 1e3
    return r


def run_h2load(url, load, cpu, workdir, tag, latency=True):
    """h2load over h2c (prior knowledge), one thread: timed (-D) or counted (-n)."""
    argv = ["h2load", "-t1", f"-c{load.connections}", f"-m{load.streams}"]
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
    if log_path:
        os.unlink(log_path)  # can be tens of MB
    r.client_cpu_s, r.wall_s = cpu_s, wall
    return r


CLIENTS = {"wrk": run_wrk, "h2load": run_h2load}
