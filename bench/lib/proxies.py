"""The reverse proxies of the proxy suite, each in front of the same origin.

The origin (a portico-backend started once by the suite, not measured) is given to every proxy
as origin=(host, port) before the run; each proxy's config comes from a template in
bench/peers/ with the same tuning rules: the same number of worker threads or processes, no
access log, keep-alive to the client and pooled keep-alive connections to the origin.
"""
import os

from .servers import RunningServer, ServerSpec, first_line, free_port, render


class ProxySpec(ServerSpec):
    apps = ("hello",)
    not_applicable = {"counter-shm": "not in the proxy suite"}

    def __init__(self, workers=1):
        super().__init__(workers)
        self.origin = None  # (host, port), set by the suite once the origin runs

    def _values(self, workdir, **extra):
        host, port = self.origin
        return dict(prefix=workdir, workers=self.workers, origin_host=host, origin_port=port,
                    **extra)


class NginxProxy(ProxySpec):
    name = "nginx"
    programs = ("nginx",)
    protocols = ("h1", "h2c")

    def __init__(self, workers=1):
        super().__init__(workers)
        self.expected_children = workers

    def version(self):
        return first_line(["nginx", "-v"]).replace("nginx version: ", "")

    def describe(self):
        return (f"peers/nginx-proxy.conf: worker_processes {self.workers}, upstream keepalive "
                "2048, proxy_http_version 1.1; h2c on a second port")

    def start(self, workdir, cpu):
        port, h2c_port = free_port(), free_port()
        conf = render("nginx-proxy.conf", workdir,
                      **self._values(workdir, port=port, h2c_port=h2c_port))
        argv = ["nginx", "-p", workdir, "-c", conf, "-g", "daemon off;"]
        return RunningServer(self, argv, workdir, {"h1": port, "h2c": h2c_port}, cpu)


class HAProxy(ProxySpec):
    name = "haproxy"
    programs = ("haproxy",)
    protocols = ("h1", "h2c")

    def version(self):
        return first_line(["haproxy", "-v"]).split(" - ")[0]

    def describe(self):
        return (f"peers/haproxy.cfg: nbthread {self.workers}, one process (-db), http-reuse "
                "always; h1 and h2c on one port")

    def start(self, workdir, cpu):
        port = free_port()
        conf = render("haproxy.cfg", workdir, **self._values(workdir, port=port))
        return RunningServer(self, ["haproxy", "-db", "-f", conf], workdir,
                             {"h1": port, "h2c": port}, cpu)


class H2o(ProxySpec):
    name = "h2o"
    programs = ("h2o",)
    protocols = ("h1", "h2c")

    def version(self):
        return first_line(["h2o", "--version"])

    def describe(self):
        return f"peers/h2o.conf: num-threads {self.workers}, proxy.reverse.url; h1 and h2c on one port"

    def start(self, workdir, cpu):
        port = free_port()
        conf = render("h2o.conf", workdir, **self._values(workdir, port=port))
        return RunningServer(self, ["h2o", "-c", conf], workdir, {"h1": port, "h2c": port}, cpu)


class Nghttpx(ProxySpec):
    name = "nghttpx"
    programs = ("nghttpx",)
    protocols = ("h1", "h2c")
    expected_children = 1  # the master forks one worker process (which runs the threads)

    def version(self):
        return first_line(["nghttpx", "--version"])

    def describe(self):
        return (f"peers/nghttpx.conf: workers={self.workers} (threads in one worker process), "
                "backend proto http/1.1; h1 and h2c on one port")

    def start(self, workdir, cpu):
        port = free_port()
        conf = render("nghttpx.conf", workdir, **self._values(workdir, port=port))
        return RunningServer(self, ["nghttpx", f"--conf={conf}"], workdir,
                             {"h1": port, "h2c": port}, cpu)


class PorticoProxy(ProxySpec):
    """Portico itself; its row reads n/a until the build tree has proxy/portico."""

    name = "portico"
    protocols = ("h1", "h2c")

    def __init__(self, binary, workers=1):
        super().__init__(workers)
        self.binary = binary
        self.programs = (binary,)

    def unavailable(self):
        if not os.path.exists(self.binary):
            return f"not built ({self.binary} missing)"
        return None

    def version(self):
        return f"{first_line([self.binary, '--version'])} ({self.binary})"

    def describe(self):
        return (f"peers/portico-proxy.toml: workers = {self.workers} (threads), idle origin "
                "connections kept 60 s; h1 and h2c on one port")

    def start(self, workdir, cpu):
        port, admin_port = free_port(), free_port()
        conf = render("portico-proxy.toml", workdir,
                      **self._values(workdir, port=port, admin_port=admin_port))
        return RunningServer(self, [self.binary, "-c", conf], workdir, {"h1": port, "h2c": port},
                             cpu)
