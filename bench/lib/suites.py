"""The suites: which servers are compared, under which workloads, against which reference.

A suite is a list of servers (the subject, Portico's own, plus its peers), a list of workloads
and a reference server for the ratio columns. A suite may also start shared processes that are
not measured (the origin behind the proxies of a proxy suite) through `shared()`.
Adding a suite = one function here that builds a Suite, and one entry in SUITES.
"""
import contextlib
import os
from dataclasses import dataclass, field

from . import proxies, runner, servers


@dataclass(frozen=True)
class Workload:
    key: str  # short name used on the command line (--workloads)
    title: str  # heading in the report
    protocol: str  # "h1" (wrk, keep-alive) or "h2c" (h2load, prior knowledge)
    app: str  # which app the server must have: "hello", "counter-shm", ...
    path: str
    client: str  # "wrk" or "h2load"
    expect_body: bytes | None = None  # checked with one GET before an h1 run


HELLO = b"hello world\n"

H1_HELLO = Workload("h1-hello", "HTTP/1.1 keep-alive, GET / (hello)", "h1", "hello", "/", "wrk",
                    HELLO)
H2C_HELLO = Workload("h2c-hello", "h2c (prior knowledge), GET / (hello)", "h2c", "hello", "/",
                     "h2load")
H1_COUNTER = Workload("h1-counter-shm", "HTTP/1.1 keep-alive, GET /?id=1 (counter, shm store)",
                      "h1", "counter-shm", "/?id=1", "wrk")


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
    notes: list = field(default_factory=list)
    unmeasured: list = field(default_factory=list)  # specs of shared processes (the origin)

    @contextlib.contextmanager
    def shared(self, workdir, cpus):
        """Processes the whole run needs but that are not measured; none for this suite."""
        yield

    def server(self, name):
        return next(s for s in self.servers if s.name == name)


def backend_suite(opts):
    binary = os.path.join(opts.build_dir, "backend", "portico-backend")
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return Suite(
        name="backend",
        description=("hello served directly by each server: portico-backend against nginx "
                     "`return 200` and starman running a PSGI hello app"),
        servers=[servers.PorticoBackend(binary, opts.workers, repo_dir=repo),
                 servers.NginxReturn(opts.workers), servers.Starman(opts.workers)],
        workloads=[H1_HELLO, H2C_HELLO, H1_COUNTER],
        subject="portico-backend",
        reference="nginx",
        goal="portico-backend within 10% of nginx (requests/s and CPU per request)",
        notes=[
            "starman serves one connection at a time per worker and keeps it while the client "
            "keeps sending, so with 100 keep-alive connections and 1 worker it serves one of "
            "them for the whole run while the others wait in the accept queue: its requests/s "
            "is the worker's full capacity, but its latency covers only the connection served.",
        ],
    )


class ProxySuite(Suite):
    """Proxies in front of one origin that runs for the whole suite and is not measured.

    The origin (portico-backend, hello app) shares the client's CPU; the proxy has the server
    CPU to itself, so its CPU time per request is its own work only.
    """

    def __init__(self, origin, **kwargs):
        super().__init__(unmeasured=[origin], **kwargs)
        self.origin = origin

    @contextlib.contextmanager
    def shared(self, workdir, cpus):
        origin_dir = os.path.join(workdir, "origin")
        os.makedirs(origin_dir)
        running = self.origin.start(origin_dir, cpus.client)
        try:
            running.wait_ready(timeout=30)
            running.check("/", HELLO)
            runner.log(f"origin: {self.origin.name} on 127.0.0.1:{running.ports['h1']}")
            for spec in self.servers:
                spec.origin = ("127.0.0.1", running.ports["h1"])
            yield
        finally:
            running.stop()


def proxy_suite(opts):
    backend = os.path.join(opts.build_dir, "backend", "portico-backend")
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    # The proxies keep idle origin connections up to 60 s: the origin must not close them
    # first (that race is what the proxy suite's error column would show, not what it tests).
    origin = servers.PorticoBackend(backend, opts.workers, repo_dir=repo,
                                    extra_args=["--keepalive-timeout", "75"])
    return ProxySuite(
        origin=origin,
        name="proxy",
        description=("hello from one portico-backend origin (1 worker, on the client's CPU, "
                     "not measured) through each reverse proxy; only the proxy is measured"),
        servers=[proxies.PorticoProxy(os.path.join(opts.build_dir, "proxy", "portico"),
                                      opts.workers),
                 proxies.NginxProxy(opts.workers), proxies.HAProxy(opts.workers),
                 proxies.H2o(opts.workers), proxies.Nghttpx(opts.workers)],
        workloads=[H1_HELLO, H2C_HELLO],
        subject="portico",
        reference="nginx",
        notes=["The origin shares CPU 1 with the client, so every proxy's req/s is capped by "
               "that core alike; the proxy's CPU per request is its own process tree only."],
    )


SUITES = {"backend": backend_suite, "proxy": proxy_suite}
