"""Starting portico for integration tests: a config written into a temporary directory,
loopback ports picked here, a self-signed certificate made on the spot when TLS is asked for,
and the process stopped by its PID when the test ends."""
import json
import os
import shutil
import signal
import subprocess
import tempfile

import harness

PORTICO = os.path.join(harness.BUILD_DIR, "proxy", "portico")


def make_certificate(directory, name="localhost", extra_names=()):
    """A self-signed certificate and key for name (and extra_names); returns (cert, key)."""
    cert = os.path.join(directory, f"{name}.pem")
    key = os.path.join(directory, f"{name}.key")
    sans = ",".join(f"DNS:{n}" for n in (name, *extra_names))
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", f"/CN={name}",
         "-addext", f"subjectAltName={sans}"],
        check=True, capture_output=True)
    return cert, key


def toml_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def endpoint_toml(e):
    """An endpoint as the cluster lists it: "ADDRESS", or (ADDRESS, WEIGHT)."""
    if isinstance(e, tuple):
        return f"{{ address = {toml_string(e[0])}, weight = {e[1]} }}"
    return toml_string(e)


class Proxy:
    """portico with one HTTP/1.1+h2c listener, optionally a TLS listener, one cluster."""

    def __init__(self, endpoints, tls=False, workers=2, cluster_options=None,
                 server_options=None, extra_config="", listener_options=None,
                 command_prefix=(), tls_options=None, certificate=None, env=None,
                 ignore_reports=(), binary=None, routes_first="", catch_all=True,
                 tls_listener_options=None, admin_options=None):
        """command_prefix: run portico under it (["prlimit", "--nofile=64"]); tls_options:
        more keys of the TLS listener's tls table, as TOML values ({"min_version": '"1.3"'});
        certificate: (cert, key) files for it instead of a self-signed pair made here; env:
        portico's environment, if not this process's; ignore_reports: sanitizer reports known
        to be false (harness.UBSAN_FD_EXHAUSTION); binary: the portico program to run, if not
        the one built; routes_first: [[route]] tables (and their clusters) placed before the
        catch-all route to the cluster "app", so that they can match; catch_all=False: no such
        route (what no route matches is the proxy's 404); tls_listener_options: more keys of the
        TLS listener, as listener_options are the cleartext one's; admin_options: more keys of
        [admin], as TOML values ({"token_file": '"/etc/t"'})."""
        self.tmp = tempfile.mkdtemp(prefix="portico-proxy-")
        options = dict(tls=tls, workers=workers, cluster_options=cluster_options,
                       server_options=server_options, extra_config=extra_config,
                       listener_options=listener_options, tls_options=tls_options,
                       certificate=certificate, routes_first=routes_first, catch_all=catch_all,
                       tls_listener_options=tls_listener_options,
                       admin_options=admin_options)
        # A port picked free can be taken before portico binds it (another test's pick, a
        # client's ephemeral port): portico then refuses to start, and new ports are picked.
        for attempt in range(3):
            try:
                self._start(endpoints, command_prefix, env, ignore_reports, binary, **options)
                return
            except BaseException as e:
                lost_race = isinstance(e, AssertionError) and "Address already in use" in str(e)
                if lost_race and attempt < 2:
                    self.process.stop()
                    continue
                if hasattr(self, "process"):
                    self.stop()
                else:
                    shutil.rmtree(self.tmp, ignore_errors=True)
                raise

    def _start(self, endpoints, command_prefix, env, ignore_reports, binary, tls, workers,
               cluster_options, server_options, extra_config, listener_options, tls_options,
               certificate, routes_first, catch_all, tls_listener_options, admin_options):
        self.port = harness.free_port()
        self.tls_port = harness.free_port() if tls else None
        self.admin_port = harness.free_port()
        lines = ["[server]", f"workers = {workers}"]
        for k, v in (server_options or {}).items():
            lines.append(f"{k} = {v}")
        lines += ["", "[[listener]]", f'address = "127.0.0.1:{self.port}"']
        for k, v in (listener_options or {}).items():
            lines.append(f"{k} = {v}")
        if tls:
            self.cert, self.key = certificate or make_certificate(self.tmp)
            lines += ["", "[[listener]]", f'address = "127.0.0.1:{self.tls_port}"',
                      f"tls = {{ certificate = {toml_string(self.cert)}, "
                      f"private_key = {toml_string(self.key)}" +
                      "".join(f", {k} = {v}" for k, v in (tls_options or {}).items()) + " }"]
            lines += [f"{k} = {v}" for k, v in (tls_listener_options or {}).items()]
        lines += ["", "[admin]", f'address = "127.0.0.1:{self.admin_port}"']
        lines += [f"{k} = {v}" for k, v in (admin_options or {}).items()]
        lines += ["", "[[cluster]]", 'name = "app"',
                  "endpoints = [" + ", ".join(endpoint_toml(e) for e in endpoints) + "]"]
        for k, v in (cluster_options or {}).items():
            lines.append(f"{k} = {v}")
        lines += ["", routes_first]
        if catch_all:
            lines += ["[[route]]", 'path_prefix = "/"', 'cluster = "app"', ""]
        lines.append(extra_config)
        self.config_path = os.path.join(self.tmp, "portico.toml")
        with open(self.config_path, "w") as f:
            f.write("\n".join(lines) + "\n")
        self.process = harness.Process([*command_prefix, binary or PORTICO, "-c", self.config_path],
                                       os.path.join(self.tmp, "portico.log"), env=env,
                                       ignore_reports=ignore_reports)
        harness.wait_until(
            lambda: self.process.proc.poll() is not None or
            harness.port_open("127.0.0.1", self.port),
            what=f"portico on port {self.port}")
        if self.process.proc.poll() is not None:
            raise AssertionError(f"portico exited: {self.process.read_log()}")
        # The port may answer for a process that took it first (this one then exits, unable to
        # bind it): this process's own admin names its pid.
        harness.wait_until(lambda: self.process.proc.poll() is not None or
                           self._admin_pid() == self.process.pid,
                           what=f"portico's admin on port {self.admin_port}")
        if self.process.proc.poll() is not None:
            raise AssertionError(f"portico exited: {self.process.read_log()}")
        if tls:
            harness.wait_until(lambda: harness.port_open("127.0.0.1", self.tls_port),
                               what="portico TLS port")

    def _admin_pid(self):
        try:
            return json.loads(self.admin("/status")).get("pid")
        except (OSError, ValueError):
            return None

    @property
    def pid(self):
        return self.process.pid

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def tls_url(self):
        return f"https://localhost:{self.tls_port}"

    def read_log(self):
        return self.process.read_log()

    def admin(self, path):
        """GET path from the admin endpoint: the body as text."""
        return harness.http_get(self.admin_port, path)[1].decode()

    def metric(self, name, **labels):
        """One sample of /metrics (0 when absent)."""
        return harness.metric_sample(self.admin("/metrics"), name, **labels)

    def rss_kib(self):
        return harness.rss_kib(self.pid)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        code = self.process.stop(sig, timeout)
        shutil.rmtree(self.tmp, ignore_errors=True)
        return code

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def start_example(test, text, admin_port=9901):
    """A deploy/ example configuration run as written but for its 0.0.0.0 ports, each moved to
    a loopback port picked here; stopped when the test ends. Returns {port as written: port
    now}, once the admin endpoint (admin_port as written) answers."""
    import re
    tmp = tempfile.mkdtemp(prefix="portico-example-")
    test.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
    ports = {}

    def move(m):
        ports[int(m.group(1))] = harness.free_port()
        return f"127.0.0.1:{ports[int(m.group(1))]}"
    text = re.sub(r"0\.0\.0\.0:(\d+)", move, text)
    path = os.path.join(tmp, "portico.toml")
    with open(path, "w") as f:
        f.write(text)
    process = harness.Process([PORTICO, "-c", path], os.path.join(tmp, "portico.log"))
    test.addCleanup(process.stop)
    admin = ports[admin_port]

    def up():
        if process.proc.poll() is not None:
            raise AssertionError(f"portico exited: {process.read_log()}")
        try:
            return harness.http_get(admin, "/healthz")[0] == 200
        except OSError:
            return False
    harness.wait_until(up, what="the example's admin endpoint")
    return ports
