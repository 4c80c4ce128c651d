"""The reverse proxies of the proxy and stack suites, each in front of an origin.

The origin (h2o or portico-backend in the proxy suite, not measured there; portico-backend or
starman in the stack suite) is given to every proxy as an Origin before it starts: a unix
socket (the default: preforked workers on a unix socket, as the bench issue's workloads say) or
a TCP port. Each proxy talks to it in one upstream protocol, "h1" (HTTP/1.1 keep-alive) or
"h2c" (HTTP/2 with prior knowledge), which is part of its row name, `nghttpx (h2c)`: a row is
only compared with rows doing the same work. Each proxy's config
comes from a template in bench/peers/ with the same tuning rules: the same number of worker
threads or processes, no access log, keep-alive to the client and pooled keep-alive
connections to the origin, room for 20k client connections, and a TLS listener (h2 and
http/1.1 by ALPN) with the suite's self-signed certificate.
"""
import os
import resource
import subprocess
import tempfile
from dataclasses import dataclass

from .servers import RunningServer, ServerSpec, first_line, free_port, render


@dataclass(frozen=True)
class Origin:
    """Where a proxy sends its requests: a unix socket path, or host and port."""

    path: str | None = None
    host: str = "127.0.0.1"
    port: int | None = None

    @classmethod
    def of(cls, endpoint):
        """From a RunningServer's h1 endpoint: a unix socket path (str) or a TCP port (int)."""
        return cls(path=endpoint) if isinstance(endpoint, str) else cls(port=endpoint)

    def __str__(self):
        return f"unix:{self.path}" if self.path else f"{self.host}:{self.port}"

    def template_values(self):
        """How each proxy's config spells this origin."""
        if self.path:
            return dict(origin_nginx=f"unix:{self.path}", origin_haproxy=self.path,
                        origin_h2o=f"http://[unix:{self.path}]/",
                        origin_nghttpx=f"unix:{self.path}", origin_portico=f"unix:{self.path}",
                        origin_caddy=f"unix/{self.path}")
        hp = f"{self.host}:{self.port}"
        return dict(origin_nginx=hp, origin_haproxy=hp, origin_h2o=f"http://{hp}/",
                    origin_nghttpx=f"{self.host},{self.port}", origin_portico=hp,
                    origin_caddy=hp)


def fd_limit():
    """RLIMIT_NOFILE every server inherits (bench/run raises the soft limit to the hard one)."""
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def idle_connections_possible():
    """How many idle connections every proxy can hold under this fd limit: HAProxy needs two
    descriptors per connection (it reserves the server side too) and refuses to start when
    maxconn does not fit, so the count is (limit - 200) / 2, at most 10,000."""
    return min(10000, (fd_limit() - 200) // 2)


UPSTREAMS = {"h1": "HTTP/1.1 keep-alive", "h2c": "h2c (prior knowledge)"}


class ProxySpec(ServerSpec):
    """One proxy in one upstream mode. base: the proxy's name; the row is `base (upstream)`,
    the key (for --servers) `base-upstream`. upstreams: the modes the proxy has."""

    apps = ("hello", "counter-mc", "bytes")
    not_applicable = {"counter-shm": "not in the proxy suite"}
    protocols = ("h1", "h2c", "tls")
    base = "?"
    upstreams = ("h1",)

    def __init__(self, workers=1, upstream="h1", base=None):
        super().__init__(workers)
        if base:
            self.base = base
        if upstream not in self.upstreams:
            raise ValueError(f"{self.base} has no {upstream} upstream")
        self.upstream = upstream
        self.name = f"{self.base} ({upstream})"
        self.origin = None  # an Origin, set by the suite once the origin runs
        self.tls = None  # servers.TlsFiles, set by the suite
        self.tls_rsa = None  # ...and its RSA-2048 one, for the workloads that ask for it

    @property
    def key(self):
        return f"{self.base}-{self.upstream}"

    def no_counter(self, reason):
        """The origin has no counter app: the counter workloads read n/a with reason."""
        self.apps = tuple(a for a in self.apps if a != "counter-mc")
        self.not_applicable = {**self.not_applicable, "counter-mc": reason}

    def _values(self, workdir, **extra):
        if self.origin is None or self.tls is None:
            raise RuntimeError(f"{self.name}: origin and certificate must be set before start")
        nofile = fd_limit()
        return dict(prefix=workdir, workers=self.workers, cert=self.tls.cert, key=self.tls.key,
                    cert_and_key=self.tls.cert_and_key, nofile=nofile,
                    max_connections=min(20000, nofile - 200),
                    # HAProxy reserves two descriptors per connection (client and server side)
                    haproxy_maxconn=min(20000, (nofile - 100) // 2),
                    **self.origin.template_values(), **extra)


NGINX_KEEPALIVE = ("        keepalive 2048;\n        keepalive_requests 100000000;\n"
                   "        keepalive_timeout 60s;",
                   "            proxy_http_version 1.1;\n"
                   "            proxy_set_header Connection \"\";")
# One connection per request (HTTP/1.0, `Connection: close`): nginx's defaults.
NGINX_NO_KEEPALIVE = ("        # no keepalive: one connection per request", "")


# nginx's proxy_cache (the cache suite): one keys zone, its files under the run's directory
# (the page cache holds them: what nginx users run), the origin's Cache-Control obeyed.
NGINX_CACHE = ("    proxy_cache_path ${prefix}/cache levels=1:2 keys_zone=c:64m max_size=1g;",
               "            proxy_cache c;")


class NginxProxy(ProxySpec):
    """nginx in front of the origin; keepalive=False: a new origin connection per request (for
    starman: a worker serves one connection at a time and keeps it while requests come, so
    nginx's other pooled connections would wait in its accept queue until proxy_read_timeout).
    cache=True: with proxy_cache (row `nginx-cache`)."""

    base = "nginx"
    programs = ("nginx",)

    def __init__(self, workers=1, keepalive=True, cache=False):
        super().__init__(workers, base="nginx-cache" if cache else None)
        self.expected_children = workers
        self.keepalive = keepalive
        self.cache = cache

    def version(self):
        return first_line(["nginx", "-v"]).replace("nginx version: ", "")

    def describe(self):
        upstream = ("HTTP/1.1 upstream, keepalive 2048, proxy_http_version 1.1" if
                    self.keepalive else "no upstream keepalive (one connection per request)")
        cache = (" `proxy_cache` with one keys zone (`proxy_cache_path ... keys_zone=c:64m "
                 "max_size=1g`)," if self.cache else "")
        return (f"peers/nginx-proxy.conf: worker_processes {self.workers}, {upstream},{cache} "
                "worker_connections = the fd limit; h2c on a second port, TLS (h2) on a third")

    def start(self, workdir, cpu, workload=None):
        port, h2c_port, tls_port = free_port(), free_port(), free_port()
        upstream, location = NGINX_KEEPALIVE if self.keepalive else NGINX_NO_KEEPALIVE
        cache_path, cache = NGINX_CACHE if self.cache else ("", "")
        conf = render("nginx-proxy.conf", workdir,
                      **self._values(workdir, port=port, h2c_port=h2c_port, tls_port=tls_port,
                                     upstream_keepalive=upstream, proxy_keepalive=location,
                                     proxy_cache_path=cache_path.replace("${prefix}", workdir),
                                     proxy_cache=cache))
        argv = ["nginx", "-p", workdir, "-c", conf, "-g", "daemon off;"]
        return RunningServer(self, argv, workdir,
                             {"h1": port, "h2c": h2c_port, "tls": tls_port}, cpu)


class HAProxy(ProxySpec):
    base = "haproxy"
    programs = ("haproxy",)
    upstreams = ("h1", "h2c")

    def version(self):
        return first_line(["haproxy", "-v"]).split(" - ")[0]

    def describe(self):
        proto = "`server ... proto h2` (h2c)" if self.upstream == "h2c" else "HTTP/1.1"
        reason = ("; under h2load --h1 (h1-rate) `http-response set-status 200 reason OK`: "
                  "a response that came over h2 has no reason phrase, HAProxy sends "
                  "`HTTP/1.1 200 ` and h2load 1.52's HTTP/1.1 parser counts that as failed"
                  if self.upstream == "h2c" else "")
        return (f"peers/haproxy.cfg: nbthread {self.workers}, one process (-db), {proto} "
                "upstream, http-reuse always, maxconn (fd limit - 100) / 2; h1 and h2c on one "
                f"port, TLS (h2) on a second{reason}")

    def start(self, workdir, cpu, workload=None):
        port, tls_port = free_port(), free_port()
        proto = " proto h2" if self.upstream == "h2c" else ""
        rules = ("    http-response set-status 200 reason OK if { status 200 }\n"
                 if self.upstream == "h2c" and workload is not None and workload.h1 else "")
        conf = render("haproxy.cfg", workdir, **self._values(workdir, port=port,
                                                             tls_port=tls_port, proto=proto,
                                                             response_rules=rules))
        return RunningServer(self, ["haproxy", "-db", "-f", conf], workdir,
                             {"h1": port, "h2c": port, "tls": tls_port}, cpu)


class H2o(ProxySpec):
    base = "h2o"
    programs = ("h2o",)  # h2o 2.2 proxies over HTTP/1.1 only

    def version(self):
        return first_line(["h2o", "--version"])

    def describe(self):
        return (f"peers/h2o.conf: num-threads {self.workers}, proxy.reverse.url (HTTP/1.1; h2o "
                "2.2 has no HTTP/2 upstream), max-connections = the fd limit - 200, "
                "http2-idle-timeout 60; h1 and h2c on one port, TLS (h2) on a second")

    def start(self, workdir, cpu, workload=None):
        port, tls_port = free_port(), free_port()
        conf = render("h2o.conf", workdir, **self._values(workdir, port=port, tls_port=tls_port))
        return RunningServer(self, ["h2o", "-c", conf], workdir,
                             {"h1": port, "h2c": port, "tls": tls_port}, cpu)


class Nghttpx(ProxySpec):
    base = "nghttpx"
    programs = ("nghttpx",)
    upstreams = ("h1", "h2c")
    expected_children = 1  # the master forks one worker process (which runs the threads)

    def version(self):
        return first_line(["nghttpx", "--version"])

    def describe(self):
        return (f"peers/nghttpx.conf: workers={self.workers} (threads in one worker process), "
                f"backend proto={self.proto}, rlimit-nofile = the fd limit; h1 and h2c on one "
                "port, TLS (h2) on a second")

    @property
    def proto(self):
        return "h2" if self.upstream == "h2c" else "http/1.1"

    def start(self, workdir, cpu, workload=None):
        port, tls_port = free_port(), free_port()
        conf = render("nghttpx.conf", workdir, **self._values(workdir, port=port,
                                                              tls_port=tls_port,
                                                              proto=self.proto))
        return RunningServer(self, ["nghttpx", f"--conf={conf}"], workdir,
                             {"h1": port, "h2c": port, "tls": tls_port}, cpu)


class PorticoProxy(ProxySpec):
    """Portico itself; its row reads n/a until the build tree has proxy/portico.

    upstream "h2c" is the cluster's `protocol = "h2c"`. base names a variant (portico-nometrics);
    extra_toml is appended to the config (the nometrics variant adds a [metrics] table); such a
    variant reads n/a while `portico -t` rejects what it adds. quic: `quic = true` on the TLS
    listener, so the h3 suite's client reaches it over HTTP/3 on that port (UDP).
    """

    base = "portico"
    upstreams = ("h1", "h2c")

    def __init__(self, binary, workers=1, upstream="h1", base=None, extra_toml="",
                 only_workloads=None, poll_admin=False, quic=False):
        super().__init__(workers, upstream, base)
        self.quic = quic
        if quic:
            self.protocols = ProxySpec.protocols + ("h3",)
        # The portico-polled variant: /metrics and /stats.json fetched every second while the
        # client runs (runner.Window), as a dashboard and a Prometheus would.
        self.poll_admin = poll_admin
        self.binary = binary
        self.programs = (binary,)
        self.extra_toml = extra_toml
        self.cluster_toml = 'protocol = "h2c"' if upstream == "h2c" else ""
        if only_workloads is not None:
            self.only_workloads = set(only_workloads)
        self._unavailable = None

    def unavailable(self):
        if not os.path.exists(self.binary):
            return f"not built ({self.binary} missing)"
        if self.extra_toml and self._unavailable is None:
            self._unavailable = self._check_extra() or ""
        return self._unavailable or None

    def _check_extra(self):
        """None when `portico -t` accepts a config with extra_toml, else why not."""
        with tempfile.TemporaryDirectory(prefix="portico-bench-check-") as tmp:
            conf = os.path.join(tmp, "check.toml")
            with open(conf, "w") as f:
                f.write('[[listener]]\naddress = "127.0.0.1:9"\n\n[[cluster]]\nname = "origin"\n'
                        'endpoints = ["127.0.0.1:9"]\n\n[[route]]\npath_prefix = "/"\n'
                        'cluster = "origin"\n' + self.extra_toml)
            proc = subprocess.run([self.binary, "-t", "-c", conf], capture_output=True,
                                  text=True, timeout=10)
        if proc.returncode == 0:
            return None
        reason = (proc.stderr or proc.stdout).strip().splitlines()
        reason = reason[0] if reason else f"exit {proc.returncode}"
        return f"this portico rejects {self.extra_toml.strip()!r}: {reason}"

    def version(self):
        return f"{first_line([self.binary, '--version'])} ({self.binary})"

    def describe(self):
        extra = f"; plus `{self.extra_toml.strip()}`" if self.extra_toml.strip() else ""
        if self.cluster_toml:
            extra += f"; cluster `{self.cluster_toml.strip()}`"
        only = (f"; measured on {', '.join(sorted(self.only_workloads))} only"
                if self.only_workloads else "")
        if self.poll_admin:
            extra += "; /metrics and /stats.json fetched every second during the run"
        tls = ("TLS (h2) and `quic = true` (HTTP/3 over UDP) on a second" if self.quic else
               "TLS (h2) on a second")
        return (f"peers/portico-proxy.toml: workers = {self.workers} (threads), "
                f"{UPSTREAMS[self.upstream]} upstream, idle origin connections kept 60 s; h1 and "
                f"h2c on one port, {tls}{extra}{only}")

    def start(self, workdir, cpu, workload=None):
        port, tls_port, admin_port = free_port(), free_port(), free_port()
        conf = render("portico-proxy.toml", workdir,
                      **self._values(workdir, port=port, tls_port=tls_port,
                                     admin_port=admin_port, extra=self.extra_toml,
                                     cluster_extra=self.cluster_toml,
                                     tls_extra="quic = true" if self.quic else ""))
        ports = {"h1": port, "h2c": port, "tls": tls_port, "admin": admin_port}
        if self.quic:
            ports["h3"] = tls_port  # the same port number, over UDP
        return RunningServer(self, [self.binary, "-c", conf], workdir, ports, cpu)


class Caddy(ProxySpec):
    """Caddy 2.6 (Debian's), the h3 suite's peer: its HTTPS site serves HTTP/3 (QUIC) on the
    TLS port, over UDP, and reverse-proxies to the origin over HTTP/1.1 (its default transport).

    Go runs as many threads of Go code at once as GOMAXPROCS says (default: every CPU):
    GOMAXPROCS = workers makes it the same count as Portico's `workers`, like with like (and
    taskset pins it to the server CPU as every server).
    """

    base = "caddy"
    programs = ("caddy",)
    protocols = ("h3",)  # its TCP side answers only `Host: localhost`: no h1/h2c/tls rows
    apps = ("hello", "bytes")

    def version(self):
        return "Caddy " + first_line(["caddy", "version"])

    def describe(self):
        return (f"peers/caddy.Caddyfile: GOMAXPROCS={self.workers} (Portico's workers), "
                "`admin off`, `protocols h1 h2 h3`, `reverse_proxy` to the origin over "
                "HTTP/1.1 with `keepalive 60s`, `keepalive_idle_conns(_per_host) 2048`; TLS "
                "and HTTP/3 on one port (TCP and UDP), bound to 127.0.0.1, site "
                "`https://localhost:PORT`")

    def start(self, workdir, cpu, workload=None):
        tls_port = free_port()
        conf = render("caddy.Caddyfile", workdir, **self._values(workdir, tls_port=tls_port))
        env = {"GOMAXPROCS": str(self.workers), "HOME": workdir,
               "XDG_DATA_HOME": os.path.join(workdir, "data"),
               "XDG_CONFIG_HOME": os.path.join(workdir, "config")}
        argv = ["caddy", "run", "--config", conf, "--adapter", "caddyfile"]
        return RunningServer(self, argv, workdir, {"tls": tls_port, "h3": tls_port}, cpu,
                             env=env)


class RelayFloor(ProxySpec):
    """bench/floor/relay_floor.c: a byte relay, one origin connection per client connection,
    one read and one write per chunk, nothing of HTTP. Not a peer: the kernel's share of any
    proxy's work on these pairs, the limit all of them approach (bench/README.md, the floor)."""

    base = "floor"
    upstreams = ("relay",)
    programs = ("cc",)
    protocols = ("h1", "h2c", "tls")
    # It connects to the origin for each client connection, which a pooling proxy does not:
    # what a new connection costs (the workloads of those kinds) has no floor here.
    not_applicable = {**ProxySpec.not_applicable, **dict.fromkeys(
        ("tls-new", "tls-conns"), "a new connection costs the relay an origin connection too")}
    peer = False
    floor = True

    def __init__(self, repo_dir):
        super().__init__(1, "relay")
        self.source = os.path.join(repo_dir, "bench", "floor", "relay_floor.c")

    def version(self):
        return "bench/floor/relay_floor.c, " + first_line(["cc", "--version"])

    def describe(self):
        return ("one thread, epoll, one origin connection per client connection (made at "
                "accept), one read and one write per chunk; relays what the client speaks, so "
                "an h1 workload is h1 -> h1 and an h2c one h2c -> h2c; on a second port it "
                "terminates TLS (OpenSSL: AES-128-GCM preferred, read ahead, ALPN h2 or "
                "HTTP/1.1) and relays the plaintext, so TLS h1 is h1 -> h1 and TLS h2 is "
                "h2 -> h2c; built with cc -O2 at the start of each measurement")

    def start(self, workdir, cpu, workload=None):
        binary = os.path.join(workdir, "relay_floor")
        subprocess.run(["cc", "-O2", "-o", binary, self.source, "-lssl", "-lcrypto"], check=True)
        port, tls_port = free_port(), free_port()
        o = self.origin
        argv = [binary, str(port), o.path or f"{o.host}:{o.port}", str(tls_port), self.tls.cert,
                self.tls.key]
        return RunningServer(self, argv, workdir, {"h1": port, "h2c": port, "tls": tls_port}, cpu)


class Varnish(ProxySpec):
    """Varnish (the cache suite): its built-in VCL in front of the origin (`-b`), memory
    storage, HTTP/2 on (h2c with prior knowledge on the same port)."""

    base = "varnish"
    programs = ("varnishd",)
    expected_children = 1  # the manager forks one child (its threads serve)

    def version(self):
        return first_line(["varnishd", "-V"]).replace("varnishd ", "")

    def describe(self):
        return ("varnishd -F -b ORIGIN -s malloc,256m -p feature=+http2, the built-in VCL, its "
                "default thread pools; h1 and h2c on one port; no TLS (Varnish has none)")

    protocols = ("h1", "h2c")

    def start(self, workdir, cpu, workload=None):
        port = free_port()
        origin = self.origin.path if self.origin.path else f"{self.origin.host}:{self.origin.port}"
        argv = ["varnishd", "-F", "-b", origin, "-a", f"127.0.0.1:{port}", "-n",
                os.path.join(workdir, "varnish"), "-s", "malloc,256m", "-p", "feature=+http2",
                "-T", "none", "-j", "none"]  # no jail: the run directory is 0700
        return RunningServer(self, argv, workdir, {"h1": port, "h2c": port}, cpu)
