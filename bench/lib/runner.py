"""One bench run: rounds x workloads x servers, each measurement on a freshly started server.

Order: for each round, for each workload, each server in turn (A B C A B C ...), so that the
servers compared in one table were measured minutes apart, not one after the other's whole
series. Each measurement: start the server, wait until it is ready, check one response, warm
up (not measured), snapshot the server's CPU time, run the client, snapshot again, read the peak
RSS, stop the server. How the client is driven depends on the workload's kind (DRIVERS).
"""
import contextlib
import dataclasses
import json
import os
import re
import socket
import ssl
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field

from . import loadgen, procstat, profile
from .servers import BenchError, ServerCrashed


@dataclass
class Cpus:
    server: int | None  # CPU the server (all its processes) is pinned to
    client: int | None  # CPU the load generator is pinned to


@dataclass
class RunConfig:
    """Everything a measurement needs besides the server and the workload."""
    cpus: Cpus
    tmp_root: str
    warmup_s: float = 1.0
    connections: int = 100  # client connections of the throughput workloads
    streams: int = 10  # h2 streams per connection where the workload does not fix it
    duration_s: float | None = None  # overrides every workload's own duration
    durations: dict = field(default_factory=dict)  # workload key -> seconds (--duration-of)
    h2_requests: int | None = None  # h2load -n for the h2c throughput workloads (smoke)
    h2_latency: bool = True
    rate: int = 5000  # total req/s of the rate workloads
    rate_connections: int = 50
    tls_rate: int = 500  # new TLS connections per second (tls-h2-new)
    idle_connections: int = 10000
    profile: bool = False  # --profile: perf attached to the throughput workloads' servers

    def duration(self, workload):
        return self.durations.get(workload.key) or self.duration_s or workload.duration

    def load(self, workload, seconds=None):
        connections = workload.connections or self.connections
        if workload.kind != "rate":
            connections = min(connections, self.connections)
        streams = workload.streams or self.streams
        rps = None
        if workload.kind == "rate":
            rps = max(1, round(self.rate / connections))
        counted = None  # --h2-requests (the smoke run): h2load counts instead of timing
        if self.h2_requests and workload.client == "h2load" and seconds is None:
            counted = {"throughput": self.h2_requests, "bytes": connections * 5,
                       "rate": connections * max(1, (rps or 0) // 5)}.get(workload.kind)
        return loadgen.Load(connections, streams, seconds or self.duration(workload), counted,
                            rps=rps, h1=workload.h1)


@dataclass
class Measurement:
    round: int
    server: str
    workload: str
    client: loadgen.ClientResult
    server_cpu_s: float
    peak_rss_kib: int
    respawned: int  # workers that changed PID during the window (a crash, or a retirement)
    machine_busy_s: float = 0.0  # every CPU's busy time over the window, all processes
    extra: dict = field(default_factory=dict)  # kind-specific figures (MB/s, KiB/conn, ...)

    @property
    def other_cpu_pct(self):
        """CPU % that neither the server nor the client used in the window: the noise."""
        if not self.client.wall_s:
            return None
        other = self.machine_busy_s - self.server_cpu_s - self.client.client_cpu_s
        return max(0.0, 100 * other / self.client.wall_s)

    @property
    def cpu_us_per_request(self):
        """Server CPU per request (per connection for the TLS and idle workloads)."""
        return self.server_cpu_s * 1e6 / self.client.requests if self.client.requests else None

    @property
    def server_cpu_pct(self):
        return 100 * self.server_cpu_s / self.client.wall_s if self.client.wall_s else None

    @property
    def client_cpu_pct(self):
        return 100 * self.client.client_cpu_s / self.client.wall_s if self.client.wall_s else None


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class AdminPoller:
    """Fetches /metrics and /stats.json from a server's admin port once a second, as a
    Prometheus and an open dashboard would, until stopped."""

    def __init__(self, port):
        self.port, self.stop_flag, self.polls, self.failures = port, threading.Event(), 0, 0
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        seq = 0
        while not self.stop_flag.wait(1.0):
            for path in ("/metrics", f"/stats.json?since={seq}"):
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}",
                                                timeout=5) as r:
                        body = r.read()
                    if path.startswith("/stats.json"):
                        seq = json.loads(body)["seq"]
                    self.polls += 1
                except (OSError, ValueError):
                    self.failures += 1

    def stop(self):
        self.stop_flag.set()
        self.thread.join(10)


class Window:
    """CPU time of the server's tree and of the machine around one client run (and, for a
    spec with poll_admin, its admin endpoint polled every second meanwhile)."""

    def __init__(self, server):
        self.server = server
        self.poller = None

    def __enter__(self):
        if getattr(self.server.spec, "poll_admin", False):
            self.poller = AdminPoller(self.server.ports["admin"])
        self.pids_before = self.server.tree()
        self.cpu_before = procstat.cpu_seconds(self.pids_before)
        self.busy_before = procstat.machine_busy_seconds()
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.poller:
            self.poller.stop()
            if self.poller.failures or not self.poller.polls:
                log(f"  {self.server.name}: admin polls {self.poller.polls}, failed "
                    f"{self.poller.failures}")
        if exc_type is not None:
            return False
        self.busy_s = procstat.machine_busy_seconds() - self.busy_before
        pids_after = self.server.tree()
        self.cpu_s = procstat.cpu_seconds(pids_after) - self.cpu_before
        self.peak_kib = procstat.peak_rss_kib(pids_after)
        if self.server.exited():
            raise ServerCrashed(f"{self.server.name} exited during the run: "
                                f"{self.server.exited()}")
        self.respawned = len(set(self.pids_before) - set(pids_after))
        if self.respawned:
            log(f"  {self.server.name}: {self.respawned} process(es) gone during the run; "
                f"log tail:\n{self.server.log_tail()}")
        return False

    def measurement(self, spec, workload, result, **extra):
        return Measurement(0, spec.name, workload.key, result, self.cpu_s, self.peak_kib,
                           self.respawned, self.busy_s, {**result.extra, **extra})


def _url(server, workload):
    protocol = workload.protocol
    if protocol != "tls" and (workload.client == "wrk" or workload.h1):
        protocol = "h1"
    url = server.url(protocol, workload.path)
    if url is None:
        raise BenchError(f"{server.name}: no TCP {protocol} endpoint for {workload.key}")
    return url


def drive_load(spec, server, workload, cfg, workdir, tag):
    """throughput, bytes and rate workloads: wrk or h2load over a timed (or counted) window."""
    url = _url(server, workload)
    client = loadgen.CLIENTS[workload.client]
    latency = cfg.h2_latency and workload.kind != "bytes" or workload.kind == "rate"
    kwargs = {"latency": latency} if workload.client == "h2load" else {}
    load = cfg.load(workload)
    if cfg.warmup_s > 0:
        warm = cfg.load(workload, seconds=cfg.warmup_s)
        client(url, warm, cfg.cpus.client, workdir, f"{tag}-warmup", **kwargs)
    profiling = (profile.Profile(server.tree(), workdir, tag) if cfg.profile
                 else contextlib.nullcontext())
    with Window(server) as w, profiling as prof:
        result = client(url, load, cfg.cpus.client, workdir, tag, **kwargs)
    extra = {}
    if workload.kind == "bytes":
        mb = result.requests * workload.body_bytes / 1e6
        extra["mb_s"] = mb / result.seconds if result.seconds else None
        extra["cpu_us_per_mb"] = w.cpu_s * 1e6 / mb if mb else None
    if workload.kind == "rate":
        extra["offered_rps"] = load.rps * load.connections
    m = w.measurement(spec, workload, result, **extra)
    if prof is not None:
        m.extra.update(prof.figures(result.requests, m.cpu_us_per_request))
    return m


def check_tls_http10(port, timeout=5):
    """What tls_conns.py sends: GET / over HTTP/1.0 on TLS; the answer must be a 200."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as s:
            s.sendall(b"GET / HTTP/1.0\r\n\r\n")
            data = b""
            while len(data) < 65536:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
    status = data.split(b"\r\n", 1)[0]
    if not status.startswith((b"HTTP/1.0 200", b"HTTP/1.1 200")):
        raise BenchError(f"GET / over HTTP/1.0 on TLS port {port} gave {data[:200]!r}")


def drive_tls_new(spec, server, workload, cfg, workdir, tag):
    """tls-new: h2load over TLS, each connection a full handshake and one GET, at a fixed rate."""
    url = server.url("tls", "/")
    seconds = cfg.duration(workload)
    count = max(10, round(cfg.tls_rate * seconds))
    if cfg.warmup_s > 0:
        loadgen.run_h2load_new_connections(url, max(10, round(cfg.tls_rate * cfg.warmup_s)),
                                           cfg.tls_rate, cfg.cpus.client, workdir,
                                           f"{tag}-warmup")
    with Window(server) as w:
        result = loadgen.run_h2load_new_connections(url, count, cfg.tls_rate, cfg.cpus.client,
                                                    workdir, tag)
    return w.measurement(spec, workload, result)


def drive_tls_conns(spec, server, workload, cfg, workdir, tag):
    """tls-conns: one TLS connection after the other, full handshakes or resumed sessions."""
    port = server.ports["tls"]
    check_tls_http10(port)
    with Window(server) as w:
        result = loadgen.run_tls_conns(port, cfg.duration(workload), workload.reuse,
                                       cfg.cpus.client, workdir, tag, tls12=workload.tls12)
    if workload.reuse and not result.extra.get("resumed_pct"):
        log(f"  {server.name}: no session was resumed")
    return w.measurement(spec, workload, result)


def drive_idle(spec, server, workload, cfg, workdir, tag):
    """idle: RSS of the server's tree before and with N idle h2c connections open."""
    tls = workload.protocol == "tls"
    port = server.ports["tls" if tls else "h2c"]
    rss_before = procstat.rss_kib(server.tree())
    client = loadgen.IdleClient(port, cfg.idle_connections, cfg.cpus.client, workdir, tag,
                                get=workload.path if workload.one_get else None, tls=tls)
    try:
        with Window(server) as w:
            ok, failed, setup_s = client.established()
        if workload.one_get:
            # Measured once the connections have idled for the workload's duration, the same
            # for every server: what each gives back to a connection that idles, it has.
            time.sleep(cfg.duration(workload))
        rss_after = procstat.rss_kib(server.tree())
        still_open, closed = client.check()
    finally:
        cli_cpu, wall = client.close()
    result = loadgen.ClientResult(requests=ok, seconds=setup_s, rps=ok / setup_s if setup_s else 0,
                                  errors=failed + closed, client_cpu_s=cli_cpu, wall_s=setup_s)
    result.error_detail.update(failed=failed, closed=closed)
    return w.measurement(spec, workload, result, rss_before_mib=rss_before / 1024,
                         rss_after_mib=rss_after / 1024,
                         kib_per_conn=(rss_after - rss_before) / ok if ok else None,
                         still_open=still_open, setup_s=setup_s)


def check_h3(server, workload, workdir, timeout=30):
    """The check request of an h3 workload, over HTTP/3 on the server's UDP port: a 2xx and
    the body's length (portico-h3load prints no body). It is also the wait for that port, which
    cannot be probed by connecting: GET until it answers, each handshake given twice the last
    one's time (from 0.25 s, so a slow first handshake is not cut short), within timeout."""
    port, binary = server.ports["h3"], workload.client_binary
    want = workload.expect_len if workload.expect_len is not None else len(workload.expect_body)
    deadline = time.monotonic() + timeout
    handshake = 0.25
    while True:
        if server.exited():
            raise BenchError(server.exited())
        r, text = loadgen.h3_get(binary, port, workload.path, workdir, handshake)
        if r is not None:
            if r.requests == 1 and r.extra.get("bytes_data") == want:
                return
            raise BenchError(f"{server.name}: HTTP/3 GET {workload.path} on UDP port {port} "
                             f"did not give a 2xx of {want} bytes:\n{text}\n{server.log_tail()}")
        if time.monotonic() + handshake > deadline:
            raise BenchError(f"{server.name}: no HTTP/3 answer on UDP port {port} after "
                             f"{timeout} s:\n{text[-1000:]}\n{server.log_tail()}")
        handshake = min(2 * handshake, 4.0)


def drive_h3(spec, server, workload, cfg, workdir, tag):
    """h3: portico-h3load over QUIC on the server's UDP port, timed (-D) or counted (-n)."""
    port, binary = server.ports["h3"], workload.client_binary
    if cfg.warmup_s > 0:
        loadgen.run_h3load(binary, port, workload.path, cfg.load(workload, seconds=cfg.warmup_s),
                           cfg.cpus.client, workdir, f"{tag}-warmup")
    with Window(server) as w:
        result = loadgen.run_h3load(binary, port, workload.path, cfg.load(workload),
                                    cfg.cpus.client, workdir, tag)
    return w.measurement(spec, workload, result)


DRIVERS = {"throughput": drive_load, "bytes": drive_load, "rate": drive_load,
           "tls-new": drive_tls_new, "tls-conns": drive_tls_conns, "idle": drive_idle,
           "h3": drive_h3}


def _slug(name):
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-")


def measure_one(spec, workload, cfg, tag):
    if not workload.pinned:
        cfg = dataclasses.replace(cfg, cpus=Cpus(None, None))
    workdir = tempfile.mkdtemp(prefix=f"{_slug(spec.name)}-", dir=cfg.tmp_root)
    if workload.rsa:
        # The same server with the suite's RSA certificate in place of its ECDSA one.
        ec, spec.tls = spec.tls, spec.tls_rsa
        try:
            server = spec.start(workdir, cfg.cpus.server, workload)
        finally:
            spec.tls = ec
    else:
        server = spec.start(workdir, cfg.cpus.server, workload)
    try:
        server.wait_ready(timeout=30)
        if workload.protocol == "h3":
            check_h3(server, workload, workdir)
        else:
            server.check(workload.check_path, workload.expect_body if workload.protocol != "tls"
                         else b"hello world\n", workload.expect_re, workload.expect_len)
        try:
            return DRIVERS[workload.kind](spec, server, workload, cfg, workdir, tag)
        except BenchError as e:
            # A client that failed may have met a dead server: say so, with the server's log.
            # (Refused connections come while the crashing server still dumps its core.)
            if server.exited() or server.wait_exit(timeout=10):
                raise ServerCrashed(f"{workload.key} on {spec.name}: {server.exited()}\n"
                                    f"(the client said: {str(e)[:600]})\nfiles: {workdir}") from e
            raise BenchError(f"{workload.key} on {spec.name}: {e}\n{server.name} still "
                             f"running; log tail:\n{server.log_tail()}") from e
    finally:
        server.stop()


@dataclass
class Failure:
    """A measurement lost to a server that died (a crash): the report lists it."""
    round: int
    server: str
    workload: str
    message: str


def run(suite, cfg, rounds, describe):
    """(measurements, failures) of the run, in the order they were taken.

    describe(measurement) -> the one-line summary logged after each measurement. A server that
    dies during a measurement costs that measurement only (a Failure); any other problem stops
    the run.
    """
    measurements, failures = [], []
    with suite.shared(cfg.tmp_root, cfg.cpus):
        for rnd in range(1, rounds + 1):
            for workload in suite.workloads:
                for spec in suite.servers:
                    if not spec.supports(workload):
                        continue
                    tag = f"r{rnd}-{workload.key}-{_slug(spec.name)}"
                    log(f"round {rnd}/{rounds}: {workload.key} on {spec.name}")
                    try:
                        m = measure_one(spec, workload, cfg, tag)
                    except ServerCrashed as e:
                        log(f"  CRASH, measurement lost: {e}")
                        failures.append(Failure(rnd, spec.name, workload.key, str(e)))
                        continue
                    m.round = rnd
                    log(f"  {describe(m)}")
                    measurements.append(m)
    return measurements, failures


def pick_cpus(server_cpu, client_cpu):
    """Pins server and client to different CPUs when the machine has them."""
    available = os.sched_getaffinity(0)
    if server_cpu != client_cpu and {server_cpu, client_cpu} <= available:
        return Cpus(server_cpu, client_cpu)
    return Cpus(None, None)
