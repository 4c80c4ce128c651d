"""The stack suite's servers: a proxy and its origin app server measured together.

A stack is an origin (portico-backend or starman, preforked, on a unix socket) with a proxy
(Portico or nginx) in front of it, both started fresh for each measurement, both pinned to the
server CPU; the CPU time and memory of both process trees count. This is what a deployment
pays per request: "portico-backend through Portico" against "starman through nginx".
"""
import os

from . import procstat
from .proxies import Origin
from .servers import BenchError, ServerSpec


class RunningStack:
    """An origin and a proxy in front of it, seen by the runner as one server."""

    def __init__(self, spec, origin, proxy):
        self.spec = spec
        self.name = spec.name
        self.origin = origin
        self.proxy = proxy
        self.ports = proxy.ports

    @property
    def pid(self):
        return self.proxy.pid

    def tree(self):
        return procstat.tree(self.proxy.pid) + procstat.tree(self.origin.pid)

    def exited(self):
        for part in (self.proxy, self.origin):
            if part.exited():
                return f"{self.name}: {part.exited()}"
        return None

    def wait_exit(self, timeout):
        return self.proxy.wait_exit(timeout) or self.origin.wait_exit(0.1)

    def url(self, protocol, path="/"):
        return self.proxy.url(protocol, path)

    def log_tail(self, lines=20):
        return (f"--- {self.proxy.name} ---\n{self.proxy.log_tail(lines)}"
                f"--- {self.origin.name} ---\n{self.origin.log_tail(lines)}")

    def wait_ready(self, timeout):
        self.proxy.wait_ready(timeout)

    def check(self, path, expect_body=None, expect_re=None, expect_len=None):
        try:
            return self.proxy.check(path, expect_body, expect_re, expect_len)
        except BenchError as e:
            raise BenchError(f"{self.name}: {e}\n{self.log_tail()}") from e

    def stop(self, timeout=15):
        try:
            self.proxy.stop(timeout)
        finally:
            self.origin.stop(timeout)


class StackSpec(ServerSpec):
    """origin (a ServerSpec listening on a unix socket) behind proxy (a ProxySpec)."""

    def __init__(self, origin, proxy, name=None):
        super().__init__(origin.workers)
        self.origin = origin
        self.proxy = proxy
        self.name = name or f"{proxy.name} → {origin.name}"
        self.programs = tuple(origin.programs) + tuple(proxy.programs)
        self.protocols = proxy.protocols  # the client talks to the proxy
        self.apps = tuple(a for a in origin.apps if a in proxy.apps)
        self.not_applicable = {**origin.not_applicable, **proxy.not_applicable}
        self.not_applicable.pop("h2c", None)  # the proxy speaks h2c to the client
        self.upstream = proxy.upstream  # what the proxy speaks to the origin
        self.tls = None

    def missing_programs(self):
        return self.origin.missing_programs() + self.proxy.missing_programs()

    def unavailable(self):
        return self.proxy.unavailable() or self.origin.unavailable()

    def version(self):
        return f"{self.proxy.version()}; {self.origin.version()}"

    def describe(self):
        return (f"{self.proxy.name}: {self.proxy.describe()}; origin {self.origin.name} on a "
                f"unix socket: {self.origin.describe()}")

    def start(self, workdir, cpu, workload=None):
        origin_dir = os.path.join(workdir, "origin")
        proxy_dir = os.path.join(workdir, "proxy")
        os.makedirs(origin_dir)
        os.makedirs(proxy_dir)
        origin = self.origin.start(origin_dir, cpu, workload)
        try:
            origin.wait_ready(timeout=30)
            self.proxy.origin = Origin.of(origin.ports["h1"])
            self.proxy.tls = self.tls
            proxy = self.proxy.start(proxy_dir, cpu, workload)
        except BaseException:
            origin.stop()
            raise
        return RunningStack(self, origin, proxy)
