"""The suites: which servers are compared, under which workloads, against which reference.

A suite is a list of servers (the subject, Portico's own, plus its peers), a list of workloads
and a reference server for the ratio columns. Shared processes that are not measured (the
origin behind the proxies, the memcached of the counter workloads) and the TLS certificate are
set up once per suite by `Suite.shared()`.
Adding a suite = one function here that builds a Suite, and one entry in SUITES.
"""
import contextlib
import os
import sys
from dataclasses import dataclass, field

from . import proxies, runner, servers, stacks, targets
from .h2o_files import MIB, MIB_PATH, H2oFiles, check_h2c
from .proxies import Origin
from .servers import HELLO, STATIC_BODY, STATIC_PATH

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CLIENT_PROGRAMS = {"wrk": ("wrk",), "h2load": ("h2load",), "tls": (sys.executable,),
                   "idle": (sys.executable,)}


@dataclass(frozen=True)
class Workload:
    key: str  # short name used on the command line (--workloads)
    title: str  # heading in the report
    protocol: str  # "h1" (HTTP/1.1), "h2c" (prior knowledge), "tls" (h2/HTTP/1.1 over TLS) or
    #                "h3" (HTTP/3 over QUIC, the server's UDP port)
    app: str  # which app the server must have: "hello", "counter-shm", "counter-mc", "bytes",
    #           "static" (the 25-byte file)
    path: str
    client: str  # "wrk", "h2load", "tls" (lib/tls_conns.py), "idle" (lib/idle_h2.py) or
    #              "h3load" (portico-h3load, client_binary)
    kind: str = "throughput"  # throughput | bytes | rate | tls-new | tls-conns | idle | h3: how
    #                           it is driven and which table it gets (report.TABLES)
    expect_body: bytes | None = None  # checked with one GET before the run
    expect_re: bytes | None = None  # ... or a regular expression the whole body matches
    expect_len: int | None = None  # ... or the body's length
    duration: float = 10.0  # seconds of the measured window (--duration / --duration-of)
    connections: int | None = None  # None: --connections
    streams: int | None = None  # h2 streams in flight per connection; None: --streams
    h1: bool = False  # h2load --h1 (the rate workload over HTTP/1.1)
    reuse: bool = False  # tls-conns: resume the previous connection's session
    one_get: bool = False  # idle: each connection serves one GET, then idles
    pinned: bool = True  # False: server, client and kernel share every CPU (no taskset)
    rsa: bool = False  # tls: the servers get the RSA-2048 certificate instead of ECDSA P-256
    tls12: bool = False  # tls-conns: the client offers TLS 1.2 at most
    body_bytes: int | None = None  # response size of the bytes workloads
    # A client built with Portico (portico-h3load): its path in the run's copy of the build
    # tree, so that a missing one stops the run by name like a missing wrk.
    client_binary: str | None = None

    @property
    def check_path(self):
        return self.path if self.protocol in ("h1", "h2c", "h3") else "/"

    def programs(self):
        return (self.client_binary,) if self.client_binary else CLIENT_PROGRAMS[self.client]


COUNTER_RE = rb'\{"counter":[0-9]+\}'


def h1_hello(duration=10.0):
    return Workload("h1-hello", "HTTP/1.1 keep-alive, GET / (hello)", "h1", "hello", "/", "wrk",
                    expect_body=HELLO, duration=duration)


def h2c_hello(key="h2c-hello", streams=None, duration=10.0):
    m = f" -m{streams}" if streams else ""
    return Workload(key, f"h2c (prior knowledge), GET / (hello){m}", "h2c", "hello", "/",
                    "h2load", expect_body=HELLO, streams=streams, duration=duration)


def h2c_static(key="h2c-static-m100", streams=100, duration=5.0, pinned=True):
    where = "" if pinned else ", nothing pinned (server, client and kernel share both CPUs)"
    return Workload(key, f"h2c (prior knowledge), GET {STATIC_PATH} ({len(STATIC_BODY)}-byte "
                    f"file) -m{streams}{where}", "h2c", "static", STATIC_PATH, "h2load",
                    expect_body=STATIC_BODY, streams=streams, duration=duration, pinned=pinned)


H1_COUNTER_SHM = Workload("h1-counter-shm", "HTTP/1.1 keep-alive, GET /?id=1 (counter, shm store)",
                          "h1", "counter-shm", "/?id=1", "wrk", expect_re=COUNTER_RE, duration=5)
H1_COUNTER_MC = Workload("h1-counter-mc",
                         "HTTP/1.1 keep-alive, GET /?id=1 (counter, memcached store)", "h1",
                         "counter-mc", "/?id=1", "wrk", expect_re=COUNTER_RE, duration=5)


def proxy_workloads(opts):
    size = opts.bytes
    mib = f"{size / 1048576:g} MiB" if size % 1024 == 0 else f"{size} bytes"
    rate_per_conn = max(1, round(opts.rate / opts.rate_connections))
    rate = rate_per_conn * opts.rate_connections
    return [
        h1_hello(),
        h2c_hello("h2c-hello-m1", 1, duration=5),
        h2c_hello("h2c-hello-m10", 10),
        h2c_hello("h2c-hello-m100", 100, duration=5),
        H1_COUNTER_MC,
        Workload("h1-bytes", f"HTTP/1.1 keep-alive, GET /bytes ({mib} responses)", "h1", "bytes",
                 f"/bytes?n={size}", "wrk", kind="bytes", expect_len=size, connections=10,
                 duration=5, body_bytes=size),
        Workload("h2c-bytes", f"h2c, GET /bytes ({mib} responses) -m1", "h2c", "bytes",
                 f"/bytes?n={size}", "h2load", kind="bytes", expect_len=size, connections=10,
                 streams=1, duration=5, body_bytes=size),
        Workload("h2c-rate", f"h2c at a fixed rate: {rate:,} req/s ({opts.rate_connections} "
                 f"connections x {rate_per_conn}/s, -m10), GET / (hello)", "h2c", "hello", "/",
                 "h2load", kind="rate", expect_body=HELLO, connections=opts.rate_connections,
                 streams=10, duration=8),
        Workload("h1-rate", f"HTTP/1.1 at a fixed rate: {rate:,} req/s ({opts.rate_connections} "
                 f"connections x {rate_per_conn}/s, h2load --h1), GET / (hello)", "h1", "hello",
                 "/", "h2load", kind="rate", expect_body=HELLO,
                 connections=opts.rate_connections, streams=1, h1=True, duration=8),
        # Requests over established TLS connections (issue 28 item 5): the edge's own pairs.
        Workload("tls-h1-hello", "HTTP/1.1 over TLS keep-alive, GET / (hello): wrk, no ALPN",
                 "tls", "hello", "/", "wrk", expect_body=HELLO),
        Workload("tls-h2-hello-m10", "h2 over TLS (ALPN), -m10, GET / (hello)", "tls", "hello",
                 "/", "h2load", expect_body=HELLO, streams=10),
        Workload("tls-h2-new", f"h2 over TLS, new connections at {opts.tls_rate}/s: each one "
                 "full handshake + one GET / (h2load)", "tls", "hello", "/", "h2load",
                 kind="tls-new", duration=5),
        Workload("tls-full", "TLS full handshakes, one connection after the other, GET / over "
                 "HTTP/1.0", "tls", "hello", "/", "tls", kind="tls-conns", duration=4),
        Workload("tls-resumed", "TLS resumed sessions, one connection after the other, GET / "
                 "over HTTP/1.0", "tls", "hello", "/", "tls", kind="tls-conns", reuse=True,
                 duration=4),
        Workload("tls-full-rsa", "RSA-2048 certificate: TLS full handshakes, as tls-full", "tls",
                 "hello", "/", "tls", kind="tls-conns", rsa=True, duration=4),
        Workload("tls-full-tls12", "TLS 1.2 full handshakes (ECDHE-ECDSA), as tls-full", "tls",
                 "hello", "/", "tls", kind="tls-conns", tls12=True, duration=4),
        Workload("tls-resumed-tls12", "TLS 1.2 resumed sessions (tickets), as tls-resumed",
                 "tls", "hello", "/", "tls", kind="tls-conns", reuse=True, tls12=True,
                 duration=4),
        Workload("idle-h2c", f"{opts.idle_connections:,} idle h2c connections (SETTINGS "
                 "exchanged, no stream): proxy memory per connection", "h2c", "hello", "/",
                 "idle", kind="idle"),
        # Measured 21 s after the last answer: Portico's session sleeps after 1 s (h2_sleep_after)
        # and what the burst left goes back to the kernel within two 10-s trims.
        Workload("used-idle-h2c", f"{opts.idle_connections:,} h2c connections idle after one "
                 "GET / each (measured after idling for the workload's duration): proxy "
                 "memory per connection", "h2c", "hello", "/", "idle", kind="idle",
                 one_get=True, duration=21),
        Workload("used-idle-tls", f"{opts.idle_connections:,} h2-over-TLS connections idle "
                 "after one GET / each (measured after idling for the workload's duration): "
                 "proxy memory per connection", "tls", "hello", "/", "idle", kind="idle",
                 one_get=True, duration=21),
    ]


@dataclass
class Suite:
    name: str
    description: str
    servers: list
    workloads: list
    subject: str  # the Portico server of the suite
    reference: str  # the ratio columns divide by this server's figure
    goal: str = ""  # the acceptance line the verdict checks (shown in the report)
    goal_tolerance: float = 0.10
    targets: object = None  # report function (suite, measurements) -> lines, or None
    notes: list = field(default_factory=list)
    origin: object = None  # a ServerSpec started once, on a unix socket, in front of no one
    memcached: object = None  # a servers.Memcached when a workload or the origin needs it
    tls: bool = False  # make a certificate for the servers' TLS listeners
    # Ratio columns against the best peer speaking the same upstream protocol (the proxy
    # suite), not against the reference.
    ratio_to_best_peer: bool = False

    @property
    def unmeasured(self):
        return [s for s in (self.origin, self.memcached) if s is not None]

    def _needs_memcached(self):
        return self.memcached is not None and (
            any(w.app == "counter-mc" for w in self.workloads)
            or getattr(self.origin, "store", None) == "memcached")

    def _specs(self):
        """Every spec that may need the shared processes: servers, their origins, the origin."""
        for spec in self.servers + ([self.origin] if self.origin else []):
            yield spec
            for part in (getattr(spec, "origin", None), getattr(spec, "proxy", None)):
                if isinstance(part, servers.ServerSpec):
                    yield part

    @contextlib.contextmanager
    def shared(self, workdir, cpus):
        """Processes the whole run needs but that are not measured, on the client's CPU."""
        running = []
        try:
            if self._needs_memcached():
                mc_dir = os.path.join(workdir, "memcached")
                os.makedirs(mc_dir)
                mc = self.memcached.start(mc_dir, cpus.client)
                running.append(mc)
                mc.wait_ready(timeout=30)
                runner.log(f"memcached on 127.0.0.1:{mc.ports['mc']}")
                for spec in self._specs():
                    if hasattr(spec, "memcached"):
                        spec.memcached = ("127.0.0.1", mc.ports["mc"])
            if self.tls:
                tls = servers.make_certificate(workdir)
                rsa = servers.make_certificate(workdir, rsa=True)
                for spec in self._specs():
                    if hasattr(spec, "tls"):
                        spec.tls, spec.tls_rsa = tls, rsa
            if self.origin:
                origin_dir = os.path.join(workdir, "origin")
                os.makedirs(origin_dir)
                origin = self.origin.start(origin_dir, cpus.client)
                running.append(origin)
                origin.wait_ready(timeout=30)
                origin.check("/", HELLO)
                # The h2c-upstream rows need h2c on the very socket the h1 rows use.
                check_h2c(origin.ports["h2c"])
                for w in self.workloads:
                    if w.app == "bytes":
                        origin.check(w.path, expect_len=w.body_bytes)
                where = Origin.of(origin.ports["h1"])
                runner.log(f"origin: {self.origin.name} on {where}")
                for spec in self.servers:
                    spec.origin = where
            yield
        finally:
            for r in reversed(running):
                r.stop()

    def server(self, name):
        return next(s for s in self.servers if s.name == name)


def _backend_binary(opts):
    return os.path.join(opts.build_dir, "backend", "portico-backend")


def _portico_binary(opts):
    return os.path.join(opts.build_dir, "proxy", "portico")


def backend_suite(opts):
    return Suite(
        name="backend",
        description=("hello, a static file and counter served directly by each server: "
                     "portico-backend against nginx `return 200`, h2o serving files and "
                     "starman running a PSGI app"),
        servers=[servers.PorticoBackend(_backend_binary(opts), opts.workers, repo_dir=REPO,
                                        static=True),
                 servers.NginxReturn(opts.workers), H2oFiles(opts.workers),
                 servers.Starman(opts.workers)],
        workloads=[h1_hello(), h2c_hello(), h2c_hello("h2c-hello-m100", 100, duration=5),
                   h2c_static(), h2c_static("h2c-static-m100-unpinned", pinned=False),
                   H1_COUNTER_SHM, H1_COUNTER_MC],
        subject="portico-backend",
        reference="nginx",
        goal="portico-backend within 10% of nginx (requests/s and CPU per request)",
        targets=targets.backend_targets,
        memcached=servers.Memcached(),
        notes=[
            "starman serves one connection at a time per worker and keeps it while the client "
            "keeps sending, so with 100 keep-alive connections and 1 worker it serves one of "
            "them for the whole run while the others wait in the accept queue: its requests/s "
            "is the worker's full capacity, but its latency covers only the connection served.",
            "h1-counter-mc: memcached (1 thread) runs on the client's CPU for the whole suite; "
            "starman's counter talks the memcached text protocol from pure Perl "
            "(bench/peers/app.psgi), portico-backend uses libmemcached.",
            f"h2o (peers/h2o-files.conf) serves hello as a {len(HELLO)}-byte file (hello.txt, "
            f"the index of /) and {STATIC_PATH}, the same {len(STATIC_BODY)} bytes that "
            "portico-backend serves from its --document-root and nginx from a `root`: the "
            "target line is portico-backend's CPU/request against h2o's. h2o has no counter "
            "app (n/a).",
        ],
    )


ORIGINS = ("h2o", "portico-backend")  # --origin of the proxy suite; the first is the default
NO_COUNTER = "the h2o origin has no counter app (`--origin portico-backend` has)"


def proxy_servers(opts, include_nometrics=True):
    """Every proxy in every upstream mode it has, h1 rows first, then h2c rows."""
    binary = _portico_binary(opts)
    out = [proxies.PorticoProxy(binary, opts.workers)]
    if include_nometrics:
        out.append(proxies.PorticoProxy(
            binary, opts.workers, base="portico-nometrics",
            extra_toml="\n[metrics]\nenabled = false\n",
            only_workloads=("h1-hello", "h2c-hello-m10", "h2c-hello-m100")))
        out.append(proxies.PorticoProxy(
            binary, opts.workers, base="portico-polled", poll_admin=True,
            only_workloads=("h1-hello", "h2c-hello-m10")))
    baseline = getattr(opts, "baseline_build_dir", None)
    if baseline:
        out.append(proxies.PorticoProxy(os.path.join(baseline, "proxy", "portico"),
                                        opts.workers, base="portico-baseline"))
    out += [proxies.NginxProxy(opts.workers), proxies.HAProxy(opts.workers),
            proxies.H2o(opts.workers), proxies.Nghttpx(opts.workers),
            proxies.PorticoProxy(binary, opts.workers, upstream="h2c"),
            proxies.HAProxy(opts.workers, upstream="h2c"),
            proxies.Nghttpx(opts.workers, upstream="h2c")]
    return out


def _origin(opts):
    """The proxy suite's one origin (--origin), on a unix socket, speaking h1 and h2c."""
    if getattr(opts, "origin", ORIGINS[0]) == "h2o":
        return H2oFiles(opts.workers, listen="unix", body_bytes=opts.bytes, name="h2o (origin)")
    # The proxies keep idle origin connections up to 60 s: the origin must not close them
    # first (that race is what the proxy suite's error column would show, not what it tests).
    return servers.PorticoBackend(_backend_binary(opts), opts.workers, repo_dir=REPO,
                                  extra_args=["--keepalive-timeout", "75"], listen="unix",
                                  store="memcached", name="portico-backend (origin)")


def proxy_suite(opts):
    origin = _origin(opts)
    h2o = isinstance(origin, H2oFiles)
    proxy_rows = proxy_servers(opts) + [proxies.RelayFloor(REPO)]
    if h2o:
        for spec in proxy_rows:
            spec.no_counter(NO_COUNTER)
    what = ("h2o 2.2 serving files" if h2o else
            "portico-backend (its hello, bytes and memcached counter apps)")
    return Suite(
        name="proxy",
        description=(f"one origin, {what} (1 worker, on a unix socket speaking HTTP/1.1 and h2c, "
                     "on the client's CPU, not measured), behind each reverse proxy in each "
                     "upstream protocol it has; only the proxy is measured"),
        servers=proxy_rows,
        workloads=proxy_workloads(opts),
        subject="portico (h1)",
        reference="nginx (h1)",
        targets=targets.proxy_targets,
        origin=origin,
        memcached=None if h2o else servers.Memcached(),
        tls=True,
        ratio_to_best_peer=True,
        notes=["Like with like: every row names the protocol the proxy speaks to the origin "
               "(h1: HTTP/1.1 keep-alive; h2c: HTTP/2 with prior knowledge, many streams over "
               "few connections), and a row's ratio columns and target lines compare it only "
               "with peers of the same upstream protocol, on the same origin, under the same "
               "client protocol (the workload's). Upstream modes: Portico `protocol = \"h2c\"` "
               "in the cluster, HAProxy `server ... proto h2`, nghttpx `backend=...;;proto=h2`; "
               "nginx 1.22 (`proxy_pass` speaks HTTP/1.x only; `grpc_pass` is for gRPC) and h2o "
               "2.2 (no HTTP/2 upstream) have h1 rows only.",
               ("The origin is h2o (`--origin h2o`, the default; `--origin portico-backend` is "
                "the old one): nobody's own code, one unix socket answering HTTP/1.1 and h2c "
                "alike, hello as the 12-byte file hello.txt, /bytes?n=N as a file of N bytes "
                "(the query ignored). It has no counter app, so h1-counter-mc reads n/a." if h2o
                else "The origin is portico-backend (`--origin portico-backend`), HTTP/1.1 and "
                "h2c on one unix socket, its counter on the shared memcached."),
               ("The origin shares" if h2o else "The origin and memcached share") +
               " CPU 1 with the client, so every proxy's req/s is capped by that core alike; "
               "the proxy's CPU per request is its own process tree only.",
               "Every proxy reaches the origin over its unix socket (nginx `server unix:`, "
               "HAProxy `server ... /path`, h2o `http://[unix:/path]/`, nghttpx "
               "`backend=unix:/path`, Portico `unix:/path`).",
               "portico-nometrics is Portico with `[metrics] enabled = false`, measured on "
               "h1-hello and h2c-hello-m10/m100 only: metrics on vs off in the same run. It "
               "reads n/a while `portico -t` does not accept that table.",
               "TLS: one self-signed ECDSA P-256 certificate for every server; TLS 1.2 and 1.3 "
               "allowed, the client picks (every server gives TLS 1.3 here). h2load never "
               "resumes a session, so tls-h2-new is full handshakes at a fixed rate (CPU µs/conn "
               "is the figure; conn/s only shows the server kept up). tls-full and tls-resumed "
               "(bench/lib/tls_conns.py, Python's ssl: what `openssl s_time -new/-reuse` does, "
               "plus a status check per response) run one connection at a time, no ALPN "
               "(HTTP/1.1), so their conn/s is latency-bound and CPU µs/conn is what compares.",
               "floor (relay): bench/floor/relay_floor.c, not a proxy: one origin connection "
               "per client connection and one read and one write per chunk, nothing of HTTP, "
               "relaying what the client speaks (h1 -> h1, h2c -> h2c; over TLS h1 -> h1 and "
               "h2 -> h2c, OpenSSL doing the handshake, SSL_read and SSL_write). What it costs "
               "is the kernel's share of any proxy's work on those pairs, and over TLS "
               "OpenSSL's too: 'CPU/req ÷ floor' says how far above it each row is. Not "
               "counted as a peer.",
               "idle-h2c: KiB/conn = (sum of VmRSS over the proxy's processes with every "
               "connection open − the same before the first) / connections; 'CPU µs/conn' is "
               "the proxy's CPU over the whole setup (accept, preface, SETTINGS)."],
    )


def stack_suite(opts):
    backend = _backend_binary(opts)
    portico = _portico_binary(opts)

    def pb():
        return servers.PorticoBackend(backend, opts.workers, repo_dir=REPO, listen="unix",
                                      extra_args=["--keepalive-timeout", "75"])

    stack_servers = [
        stacks.StackSpec(pb(), proxies.PorticoProxy(portico, opts.workers)),
        stacks.StackSpec(pb(), proxies.PorticoProxy(portico, opts.workers, upstream="h2c")),
        stacks.StackSpec(pb(), proxies.NginxProxy(opts.workers)),
        stacks.StackSpec(servers.Starman(opts.workers, listen="unix"),
                         proxies.NginxProxy(opts.workers, keepalive=False)),
    ]
    return Suite(
        name="stack",
        description=("a whole deployment measured: an app server (1 preforked worker, on a unix "
                     "socket) behind a proxy (1 worker), both on the server CPU, CPU and memory "
                     "of both counted"),
        servers=stack_servers,
        workloads=[h1_hello(), h2c_hello(), H1_COUNTER_MC],
        subject=stack_servers[0].name,
        reference=stack_servers[-1].name,  # nginx → starman
        targets=targets.stack_targets,
        memcached=servers.Memcached(),
        tls=True,  # the proxies' configs have a TLS listener (unused here)
        notes=["portico-backend gets `--keepalive-timeout 75` and the proxies pool keep-alive "
               "connections to it (nginx `keepalive 2048`). nginx → starman uses one upstream "
               "connection per request (nginx's default HTTP/1.0 + close): a starman worker "
               "serves one connection at a time and keeps it while requests keep coming, so "
               "with a keep-alive pool nginx's other upstream connections wait in starman's "
               "accept queue until proxy_read_timeout (60 s; seen as 504s under h2c).",
               "memcached (h1-counter-mc) runs on the client's CPU, not measured."],
    )



def cache_workloads():
    """A 1 KiB and a 100 KiB object the origin marks cacheable, over HTTP/1.1 and h2c."""
    out = []
    for size, label in ((1024, "1k"), (100 * 1024, "100k")):
        path = f"/bytes?n={size}&max_age=3600"
        out.append(Workload(f"h1-hit-{label}", f"HTTP/1.1 keep-alive, GET {path} (a cache hit)",
                            "h1", "bytes", path, "wrk", expect_len=size, body_bytes=size,
                            connections=50, duration=5))
        out.append(Workload(f"h2c-hit-{label}", f"h2c, GET {path} (a cache hit) -m10", "h2c",
                            "bytes", path, "h2load", expect_len=size, body_bytes=size,
                            connections=10, streams=10, duration=5))
    return out


def cache_suite(opts):
    binary = _portico_binary(opts)
    origin = servers.PorticoBackend(_backend_binary(opts), opts.workers, repo_dir=REPO,
                                    extra_args=["--keepalive-timeout", "75"], listen="unix",
                                    name="portico-backend (origin)")
    return Suite(
        name="cache",
        description=("cache hits: one origin (portico-backend's /bytes with Cache-Control: "
                     "public, max-age=3600, on a unix socket, on the client's CPU, not "
                     "measured), behind each cache; after the warm-up every request is a hit, "
                     "so only the cache's own work is measured"),
        servers=[proxies.PorticoProxy(binary, opts.workers, extra_toml="cache = true\n"),
                 proxies.Varnish(opts.workers), proxies.NginxProxy(opts.workers, cache=True),
                 servers.HitFloor(REPO)],
        workloads=cache_workloads(),
        subject="portico (h1)",
        reference="varnish (h1)",
        targets=targets.cache_targets,
        origin=origin,
        tls=True,
        ratio_to_best_peer=True,
        notes=["Portico: a route with `cache = true` (64 MiB per worker, in memory). Varnish "
               "7.1: the built-in VCL, `-s malloc,256m`, HTTP/2 on. nginx 1.22: `proxy_cache` "
               "(a keys zone in shared memory, the bodies in files the page cache holds). Each "
               "is started fresh per measurement; the warm-up's first request fills the cache.",
               "Varnish runs its default thread pools (it has no single-thread mode): its "
               "process tree is pinned to the server CPU like the others'.",
               "floor (sendfile): bench/floor/hit_floor.c, not a cache: a fixed head and the "
               "body by sendfile, nothing else (HTTP/1.1 only). What it costs is the kernel's "
               "share of any hit; no cache can go below it. Not counted as a peer."],
    )


def _h3load_binary(opts):
    return os.path.join(opts.build_dir, "bench", "h3load", "portico-h3load")


def h3_workloads(opts):
    """Small GETs and a 1 MiB download over HTTP/3, portico-h3load the client of both (Debian
    12's h2load has no HTTP/3)."""
    h3load = _h3load_binary(opts)
    return [
        Workload("h3-small", f"HTTP/3, GET / (hello, {len(HELLO)} bytes) -c100 -m10", "h3",
                 "hello", "/", "h3load", kind="h3", expect_body=HELLO, connections=100,
                 streams=10, duration=8, client_binary=h3load),
        Workload("h3-1mib", f"HTTP/3, GET {MIB_PATH} (1 MiB responses) -c10 -m1", "h3", "bytes",
                 MIB_PATH, "h3load", kind="h3", expect_len=MIB, connections=10, streams=1,
                 duration=5, body_bytes=MIB, client_binary=h3load),
    ]


def h3_suite(opts):
    binary = _portico_binary(opts)
    caddy = proxies.Caddy(opts.workers)
    return Suite(
        name="h3",
        description=("HTTP/3 (QUIC) from the client, HTTP/1.1 keep-alive to one origin, h2o 2.2 "
                     "serving files (1 worker, on a unix socket, on the client's CPU, not "
                     "measured): Portico's QUIC listener against Caddy 2.6's; only the proxy "
                     "is measured"),
        servers=[proxies.PorticoProxy(binary, opts.workers, quic=True), caddy],
        workloads=h3_workloads(opts),
        subject="portico (h1)",
        reference=caddy.name,
        targets=targets.h3_targets,
        origin=H2oFiles(opts.workers, listen="unix", name="h2o (origin)", mib_file=True),
        tls=True,
        notes=["Like with like: both proxies serve HTTP/3 on their TLS listener's port (UDP) "
               "with the same certificate (the suite's self-signed ECDSA P-256 one), and speak "
               "HTTP/1.1 keep-alive to the same origin over its unix socket (Portico's h1 "
               "cluster; Caddy's `reverse_proxy` default transport), idle origin connections "
               "kept 60 s, up to 2048 (Caddy's default is 32 per host). The same workers: "
               f"Portico `workers = {opts.workers}`, Caddy `GOMAXPROCS={opts.workers}` (Go runs "
               "that many threads of Go code at once; its default is every CPU); both pinned "
               "to the server CPU.",
               "The origin is the proxy suite's default one: h2o 2.2 (peers/h2o-files.conf), "
               f"/ = the 12-byte hello.txt, {MIB_PATH} a file of {MIB} bytes.",
               "The client is portico-h3load (bench/h3load: ngtcp2 and nghttp3 on GnuTLS, one "
               "thread, no certificate check, SNI localhost, `:authority localhost:PORT` since "
               "Caddy's site `https://localhost:PORT` matches the host), copied from the build "
               "tree at the start of the run. req/s counts 2xx responses; p50/p99 are over "
               "every response's time; errors are non-2xx responses, reset streams and "
               "connections that failed. Each measurement starts the proxy fresh, so its QUIC "
               "handshakes (100 or 10) are in the window, for both alike.",
               "Before each measurement one HTTP/3 GET (a 2xx and the body's length) is also "
               "the wait for the UDP port, which cannot be probed by connecting."],
    )


SUITES = {"backend": backend_suite, "proxy": proxy_suite, "stack": stack_suite,
          "cache": cache_suite, "h3": h3_suite}
ALL = ("backend", "proxy", "stack")  # --suite all runs these, in this order


