#!/usr/bin/python3
"""Chaos soak (issue 29, item 2): mixed traffic through Portico for a bounded time while its
origins crash, stall, reset, half-close, answer garbage and are restarted, and the proxy is
reloaded (HUP) and upgraded (USR2); then the invariants that hold under any timing.

    chaos_soak.py [--duration SECONDS] [--report FILE] [--seed N]

Traffic (client threads of this process; fewer on an ASan build): HTTP/1.1 and h2c on the
"plain" listener, HTTP/1.1 and h2 over TLS on the "tls" one, each sending GETs with known
bodies, uploads (POST bodies echoed, counted, or recorded by id), requests for a fault of the
chaos origin (chaos_origin.py), slow readers and clients that vanish mid-answer or mid-upload;
on the "wild" listeners (plain and TLS) WebSocket sessions, gRPC calls of every kind and
hostile clients flooding HTTP/2 frames and header bytes. Origins: portico-backend (HTTP/1.1
and h2c clusters, --max-requests, HUP, a worker killed now and then), the chaos origin (killed
and started again), the WebSocket and gRPC echo servers (killed and started again).

Every answer is checked (soak_plans.Plan.judge): the right body for its request, or a proxy
error status, or a cut response only where the fault it asked for or an origin crash during it
allows one. At the end (every wait bounded; the soak fails with a summary of what went wrong):
- no POST applied twice: the chaos origin's record of POST ids holds none twice, and
  portico-backend's counter of each id is at most 1 (at exactly 1 for every POST answered 200);
- every proxy process the upgrades left behind has drained and exited;
- no exchange left open: client connections, HTTP/2 streams, busy upstream connections and
  queued requests all back to 0, upstream connections retired once idle;
- no descriptor leak and RSS back near its start (the bounds are below);
- the proxy's own count equals the clients' (see count_check for why it is exact across USR2);
- no sanitizer report in any server's output.
A summary (requests per kind, outcomes and their causes, restarts, reloads, upgrades, fds and
RSS) is printed, and written to FILE with --report. Exit status 0 when every check held."""
import argparse
import collections
import http.client
import json
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
os.environ.setdefault("PORTICO_BUILD_DIR", os.path.join(HERE, "..", "..", "build"))

import harness  # noqa: E402
from harness import PYTHON  # noqa: E402
from proxy_harness import Proxy, make_certificate, toml_string  # noqa: E402

import soak_h2  # noqa: E402
import soak_http  # noqa: E402
import soak_plans  # noqa: E402
import soak_wild  # noqa: E402

INTEGRATION = os.path.join(HERE, "..", "integration")
FD_SLACK = 4  # descriptors the last process may hold beyond the first one's idle count
RSS_BOUND_MIB = 48  # RSS growth allowed, idle after the run against idle after the warm-up
RSS_BOUND_MIB_ASAN = 384  # ASan's allocator keeps a quarantine of freed memory
GRACE_PERIOD = 20

# Request kinds of the plain and TLS listeners' clients, by weight.
KINDS = [("hello", 15), ("bytes", 10), ("echo", 12), ("counter", 8), ("token", 25),
         ("post", 20), ("slow", 2), ("vanish", 3)]


class Restartable:
    """A helper server on a fixed port that the soak can crash (SIGKILL) and start again."""

    def __init__(self, name, cmd, tmp):
        self.name, self.cmd, self.tmp = name, cmd, tmp
        self.port = harness.free_port()
        self.starts = 0
        self.process = None
        self.start()

    def start(self):
        self.starts += 1
        self.process = harness.Process(
            [PYTHON, *[a.format(port=self.port) for a in self.cmd]],
            os.path.join(self.tmp, f"{self.name}.{self.starts}.log"))
        harness.wait_until(lambda: self.process.proc.poll() is not None or
                           harness.port_open("127.0.0.1", self.port), timeout=30,
                           what=f"{self.name} on port {self.port}")
        if self.process.proc.poll() is not None:
            raise AssertionError(f"{self.name} exited: {self.process.read_log()}")

    def crash(self, events, down=0.3):
        w = events.begin(self.name)
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.proc.wait()
        self.process.stop()
        time.sleep(down)  # the crash's shape: connects are refused meanwhile
        self.start()
        events.end(w)

    def stop(self):
        if self.process:
            self.process.stop()


class Context:
    def __init__(self):
        self.tally = soak_plans.Tally()
        self.events = soak_plans.Events()
        self.stopping = threading.Event()


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def lines_in(path):
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except FileNotFoundError:
        return 0


def sum_samples(text, name, **labels):
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            if all(f'{k}="{v}"' in line for k, v in labels.items()):
                total += float(line.rsplit(" ", 1)[1])
    return total


class Soak:
    def __init__(self, args):
        self.args = args
        self.duration = args.duration
        self.asan = harness.sanitized_build()
        self.rng = random.Random(args.seed)
        self.ctx = Context()
        self.failures = []  # what went wrong outside the clients' own checks
        self.actions = collections.Counter()
        self.timeline = []
        self.figures = {}
        self.cleanups = []
        self.tmp = tempfile.mkdtemp(prefix="portico-soak-")
        self.logs = os.path.join(self.tmp, "logs")
        os.makedirs(self.logs)

    # ---- setup ----------------------------------------------------------------------------
    def start(self):
        self.backend_admin = harness.free_port()
        self.backend = harness.Backend("--max-requests", "150", "--min-requests", "50",
                                       "--admin", f"127.0.0.1:{self.backend_admin}",
                                       "--graceful-timeout", "15", workers=2, unix=True)
        self.cleanups.append(self.backend.stop)
        self.record = os.path.join(self.tmp, "posts.txt")
        self.chaos = Restartable("chaos", [os.path.join(HERE, "chaos_origin.py"), "{port}",
                                           self.record], self.tmp)
        self.cleanups.append(self.chaos.stop)
        self.ws = Restartable("ws", [os.path.join(INTEGRATION, "ws_echo_server.py"), "{port}"],
                              self.tmp)
        self.cleanups.append(self.ws.stop)
        self.grpc = Restartable("grpc", [os.path.join(INTEGRATION, "grpc_echo_server.py"),
                                         "{port}"], self.tmp)
        self.cleanups.append(self.grpc.stop)
        self.cert, self.key = make_certificate(self.tmp)
        self.wild_port, self.wild_tls_port = harness.free_port(), harness.free_port()
        self.pid_file = os.path.join(self.tmp, "portico.pid")
        self.process_index = 0  # the access logs' p0., p1., ...: one set per proxy process
        sock = self.backend.sock_path
        routes = "\n".join([
            "[[cluster]]", 'name = "apph2"', f'endpoints = ["unix:{sock}"]', 'protocol = "h2c"',
            "idle_timeout = 2", "",
            "[[cluster]]", 'name = "chaos"', f'endpoints = ["127.0.0.1:{self.chaos.port}"]',
            "connect_timeout = 1", "idle_timeout = 2", "response_timeout = 2.0  # toggled", "",
            "[[cluster]]", 'name = "ws"', f'endpoints = ["127.0.0.1:{self.ws.port}"]',
            "idle_timeout = 2", "",
            "[[cluster]]", 'name = "grpc"', f'endpoints = ["127.0.0.1:{self.grpc.port}"]',
            'protocol = "h2c"', "idle_timeout = 2", "",
            "[[route]]", 'path_prefix = "/h2/"', 'prefix_rewrite = "/"', 'cluster = "apph2"', "",
            "[[route]]", 'path_prefix = "/c/"', 'cluster = "chaos"', "",
            "[[route]]", 'path_prefix = "/ws/"', 'cluster = "ws"', "websocket = true", "",
            "[[route]]", 'path_prefix = "/test.Echo/"', 'cluster = "grpc"', ""])
        wild = "\n".join([
            "[[listener]]", f'address = "127.0.0.1:{self.wild_port}"',
            f"access_log = {toml_string(self.access_log('wild'))}", "",
            "[[listener]]", f'address = "127.0.0.1:{self.wild_tls_port}"',
            f"tls = {{ certificate = {toml_string(self.cert)}, "
            f"private_key = {toml_string(self.key)} }}",
            f"access_log = {toml_string(self.access_log('wildtls'))}", ""])
        self.proxy = Proxy(
            [f"unix:{sock}"], tls=True, workers=2, certificate=(self.cert, self.key),
            cluster_options={"idle_timeout": 2, "response_timeout": 10},
            server_options={"grace_period": GRACE_PERIOD, "pid_file": toml_string(self.pid_file)},
            listener_options={"access_log": toml_string(self.access_log("plain"))},
            tls_listener_options={"access_log": toml_string(self.access_log("tls"))},
            routes_first=routes, extra_config=wild)
        self.cleanups.append(self.stop_proxy)
        self.pid = self.proxy.pid
        self.old_pids = []
        self.listeners = {"plain": self.proxy.port, "tls": self.proxy.tls_port,
                          "wild": self.wild_port, "wildtls": self.wild_tls_port}

    def access_log(self, listener, index=None):
        return os.path.join(self.logs, f"p{self.process_index if index is None else index}."
                                       f"{listener}.log")

    def admin_json(self, path="/status"):
        return json.loads(harness.http_get(self.proxy.admin_port, path)[1])

    def metrics(self):
        return harness.http_get(self.proxy.admin_port, "/metrics")[1].decode()

    # ---- the quiet state, measured before and after ----------------------------------------
    def quiet(self, what, timeout):
        """Waits until no exchange is open and every upstream connection has been retired;
        returns the metrics text then. A failure names what stayed."""
        def check():
            status, text = self.admin_json(), self.metrics()
            left = {"client_connections": status["client_connections"],
                    "h2_streams_active": sum_samples(text, "portico_h2_streams_active"),
                    "upstream_busy": sum_samples(text, "portico_upstream_connections",
                                                 state="busy"),
                    "upstream_idle": sum_samples(text, "portico_upstream_connections",
                                                 state="idle"),
                    "queue_depth": sum_samples(text, "portico_upstream_queue_depth"),
                    "in_flight": sum(e["in_flight"] for c in status["clusters"]
                                     for e in c["endpoints"])}
            self.last_left = left
            return text if not any(left.values()) else None
        try:
            return harness.wait_until(check, timeout=timeout, interval=0.2, what=what)
        except AssertionError:
            self.failures.append(f"{what}: still open after {timeout} s: {self.last_left}")
            return None

    def measure(self, label):
        self.figures[f"{label}_pid"] = self.pid
        self.figures[f"{label}_fds"] = fd_count(self.pid)
        self.figures[f"{label}_rss_kib"] = harness.rss_kib(self.pid)

    def warm_up(self):
        """A request of each kind, so that the baseline holds what serving allocates once."""
        ctx = self.ctx  # counted like the rest: the proxy counts these too
        for kind, _ in KINDS:
            for tls in (False, True):
                c = soak_http.Http1Client(ctx, "warm", self.listeners["tls" if tls else "plain"],
                                          tls, 1, [(kind, 1)])
                c.one(soak_plans.make_plan(random.Random(1), kind))
                c.close()
        self.quiet("quiet after the warm-up", 30)
        self.measure("start")

    # ---- chaos ------------------------------------------------------------------------------
    def log_count(self, text):
        return self.proxy.read_log().count(text)

    def act(self, name, fn):
        t = round(time.monotonic() - self.t0, 1)
        try:
            detail = fn()
            self.actions[name] += 1
            self.timeline.append(f"{t:7.1f}s {name}{': ' + detail if detail else ''}")
        except Exception as e:  # noqa: BLE001 - a chaos step that did not complete fails the soak
            self.failures.append(f"{t}s {name}: {e}")
            self.timeline.append(f"{t:7.1f}s {name}: FAILED {e}")

    def rewrite_config(self, fn):
        with open(self.proxy.config_path) as f:
            text = fn(f.read())
        with open(self.proxy.config_path + ".new", "w") as f:
            f.write(text)
        os.replace(self.proxy.config_path + ".new", self.proxy.config_path)

    def reload(self):
        # Each reload changes the chaos cluster (a new pool; the old one goes once its last
        # request has finished) and keeps the others and their pools.
        def toggle(text):
            return re.sub(r"response_timeout = (\d\.\d)  # toggled",
                          lambda m: "response_timeout = " +
                          ("3.0" if m.group(1) == "2.0" else "2.0") + "  # toggled", text)
        self.rewrite_config(toggle)
        before = self.log_count("every worker serves generation")
        os.kill(self.pid, signal.SIGHUP)
        harness.wait_until(lambda: self.log_count("every worker serves generation") > before,
                           timeout=30, interval=0.05, what="the reload applied")
        return f"pid {self.pid}"

    def upgrade(self):
        # The new process writes its own access logs (p1., p2., ...): count_check's record of
        # what each process counted.
        old = self.process_index
        self.process_index += 1
        self.rewrite_config(lambda text: text.replace(f"/p{old}.", f"/p{self.process_index}."))
        before = self.log_count("upgrade: pid ")
        os.kill(self.pid, signal.SIGUSR2)
        harness.wait_until(lambda: len(re.findall(r"upgrade: pid \d+ serves",
                                                  self.proxy.read_log())) > before,
                           timeout=60, interval=0.05, what="the new process serving")
        new = int(re.findall(r"upgrade: pid (\d+) serves", self.proxy.read_log())[-1])
        self.old_pids.append(self.pid)
        self.pid = new
        return f"pid {self.old_pids[-1]} -> {new}"

    def backend_hup(self):
        before = set(self.backend.worker_pids())
        self.backend.signal(signal.SIGHUP)
        harness.wait_until(lambda: len(set(self.backend.worker_pids()) - before) >= 2,
                           timeout=30, what="new backend workers")
        return None

    def backend_kill(self):
        workers = self.backend.worker_pids()
        if not workers:
            raise AssertionError("no backend worker to kill")
        w = self.ctx.events.begin("backend")
        victim = self.rng.choice(workers)
        os.kill(victim, signal.SIGKILL)
        harness.wait_until(lambda: victim not in self.backend.worker_pids() and
                           len(self.backend.worker_pids()) >= 2, timeout=30,
                           what="the killed worker replaced")
        self.ctx.events.end(w)
        return f"worker {victim}"

    def controller(self):
        steps = ["reload", "chaos_crash", "backend_hup", "ws_crash", "reload", "backend_kill",
                 "grpc_crash", "chaos_crash"]
        every = max(2.0, self.duration / 20)
        upgrades_every = min(self.duration / 3, 300)
        fns = {"reload": self.reload, "upgrade": self.upgrade, "backend_hup": self.backend_hup,
               "backend_kill": self.backend_kill,
               "chaos_crash": lambda: self.chaos.crash(self.ctx.events),
               "ws_crash": lambda: self.ws.crash(self.ctx.events),
               "grpc_crash": lambda: self.grpc.crash(self.ctx.events)}
        next_step, next_upgrade, i = every, upgrades_every, 0
        end = self.t0 + self.duration
        while True:
            now = time.monotonic()
            if now >= end - 1:
                return
            if now - self.t0 >= next_upgrade:
                self.act("upgrade", fns["upgrade"])
                next_upgrade += upgrades_every
            elif now - self.t0 >= next_step:
                self.act(steps[i % len(steps)], fns[steps[i % len(steps)]])
                i += 1
                next_step += every
            time.sleep(0.05)

    # ---- the run ----------------------------------------------------------------------------
    def clients(self):
        ctx, p = self.ctx, self.listeners
        seed = self.args.seed * 1000
        n = (lambda full, asan: asan if self.asan else full)
        out = []
        for i in range(n(3, 2)):
            out.append(soak_http.Http1Client(ctx, f"h1-{i}", p["plain"], False, seed + i, KINDS))
        for i in range(n(2, 1)):
            out.append(soak_http.Http1Client(ctx, f"h1s-{i}", p["tls"], True, seed + 10 + i,
                                             KINDS))
        for i in range(n(2, 1)):
            out.append(soak_h2.Http2Client(ctx, f"h2c-{i}", p["plain"], False, seed + 20 + i,
                                           KINDS))
        for i in range(n(2, 1)):
            out.append(soak_h2.Http2Client(ctx, f"h2s-{i}", p["tls"], True, seed + 30 + i,
                                           KINDS))
        out.append(soak_wild.WebSocketClients(ctx, p["wild"], p["wildtls"], n(4, 2), seed + 40))
        out.append(soak_wild.GrpcClient(ctx, p["wild"], False, self.cert, seed + 50))
        out.append(soak_wild.GrpcClient(ctx, p["wildtls"], True, self.cert, seed + 51))
        out.append(soak_wild.HostileClient(ctx, p["wild"], seed + 60))
        return out

    def run(self):
        self.start()
        self.warm_up()
        clients = self.clients()
        self.t0 = time.monotonic()
        self.ctx.tally.started = self.t0
        for c in clients:
            c.start()
        self.controller()
        while time.monotonic() < self.t0 + self.duration:
            time.sleep(0.05)
        self.ctx.stopping.set()
        for c in clients:
            c.join(90)
        stuck = [c.name for c in clients if c.is_alive()]
        if stuck:
            self.failures.append(f"clients still running 90 s after the end: {stuck}")
        self.figures["run_seconds"] = round(time.monotonic() - self.t0, 1)
        self.check()

    # ---- the checks ---------------------------------------------------------------------------
    def check(self):
        self.check_old_processes()
        text = self.quiet("quiet after the run", 30 + GRACE_PERIOD)
        self.measure("end")
        self.check_resources()
        if text is not None:
            self.count_check()
        self.check_posts()

    def check_old_processes(self):
        """Every process an upgrade replaced drains and exits within its grace period."""
        deadline = time.monotonic() + GRACE_PERIOD + 15
        for pid in self.old_pids:
            while harness.pid_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            if harness.pid_alive(pid):
                self.failures.append(f"old proxy process {pid} still running "
                                     f"{GRACE_PERIOD + 15} s after the run")
        first = self.proxy.process.proc
        if self.old_pids and first.poll() is not None and first.returncode != 0:
            self.failures.append(f"the first proxy process exited with {first.returncode}")

    def check_resources(self):
        f = self.figures
        if f["end_fds"] > f["start_fds"] + FD_SLACK:
            self.failures.append(f"descriptors: {f['end_fds']} at the end (pid {f['end_pid']}) "
                                 f"against {f['start_fds']} at the start (pid {f['start_pid']})")
        bound = RSS_BOUND_MIB_ASAN if self.asan else RSS_BOUND_MIB
        growth = (f["end_rss_kib"] - f["start_rss_kib"]) / 1024
        if growth > bound:
            self.failures.append(f"RSS grew {growth:.1f} MiB (bound {bound} MiB)")

    def count_check(self):
        """The proxy counted exactly the requests the clients know it saw.

        Across USR2 each process counts from zero, and a process that has handed over no
        longer answers on the admin address, so its last counts cannot be scraped. But every
        exchange is counted in portico_requests_total and written to its listener's access log
        in one place (routing::ExchangeRecord::close), and each process writes its own access
        logs (upgrade() gives the new one new file names). So: the last process's metrics must
        equal its own log lines (the two records agree), and the lines of every process's logs,
        the old ones' complete once they have exited, sum to the clients' count. Clients know
        whether the proxy saw each request (soak_plans.Tally): an answer or a part of one came
        (seen), or the connection closed before any byte of an answer with nothing but a head
        sent (not seen: the proxy answers every request it reads, while draining too), or a
        body was on its way when it closed (ambiguous: counted as a bound). Only the plain and
        tls listeners are checked so: gRPC's transparent retries and the floods make the wild
        ones' client counts uncertain."""
        self.counts = {}
        for name in ("plain", "tls", "wild", "wildtls"):
            addr = f"127.0.0.1:{self.listeners[name]}"
            last = self.access_log(name)
            try:
                harness.wait_until(
                    lambda: sum_samples(self.metrics(), "portico_requests_total",
                                        listener=addr) == lines_in(last),
                    timeout=10, interval=0.2, what="the access log written")
            except AssertionError:
                self.failures.append(
                    f"{name}: the last process counted "
                    f"{sum_samples(self.metrics(), 'portico_requests_total', listener=addr):.0f}"
                    f" requests in its metrics and {lines_in(last)} in its access log")
            per_process = [lines_in(self.access_log(name, i))
                           for i in range(self.process_index + 1)]
            total = sum(per_process)
            seen = self.ctx.tally.seen[name]
            ambiguous = self.ctx.tally.ambiguous[name]
            self.counts[name] = (per_process, seen, ambiguous)
            if name in ("plain", "tls") and not seen <= total <= seen + ambiguous:
                self.failures.append(f"{name}: the proxy counted {total} requests "
                                     f"({per_process} per process); the clients saw {seen} "
                                     f"answered and {ambiguous} ambiguous; "
                                     f"{self.count_difference(name)}")

    def count_difference(self, name):
        """Which requests the access logs and the clients disagree on (most paths are unique:
        a token or an id in them)."""
        logged = collections.Counter()
        lines = {}
        for i in range(self.process_index + 1):
            try:
                with open(self.access_log(name, i), errors="replace") as f:
                    for line in f:
                        m = re.search(r'"(\S+) (\S+) HTTP/[\d.]+"', line)
                        if m:
                            key = (m.group(1), m.group(2))
                            logged[key] += 1
                            lines[key] = f"p{i}: {line.strip()}"
            except FileNotFoundError:
                pass
        t = self.ctx.tally
        extra = logged - t.seen_paths[name] - t.ambiguous_paths[name]
        missing = t.seen_paths[name] - logged
        return (f"logged but not seen by the clients: "
                f"{[lines[k] for k in list(extra)[:8]]}; seen but not logged: "
                f"{list(missing)[:8]}")

    def check_posts(self):
        """No POST applied twice; every POST answered 200 applied exactly once."""
        applied = collections.Counter()
        details = {}
        with open(self.record) as f:
            for line in f:
                pid, length, digest = line.split()
                applied[pid] += 1
                details[pid] = (int(length), digest)
        twice = [p for p, n in applied.items() if n > 1]
        if twice:
            self.failures.append(f"POSTs applied twice at the chaos origin: {twice[:10]}")
        counter_ids = []
        for origin, pid, outcome, length, digest in self.ctx.tally.posts:
            if origin == "chaos":
                if outcome == "ok" and details.get(pid) != (length, digest):
                    self.failures.append(f"POST {pid} answered 200 but applied as "
                                         f"{details.get(pid)} (sent {length} bytes)")
            else:
                counter_ids.append((pid, outcome))
        self.figures["posts_chaos_applied"] = len(applied)
        conn = http.client.HTTPConnection("127.0.0.1", self.backend.port, timeout=10)
        applied_counter = 0
        try:
            for pid, outcome in counter_ids:
                # A direct request counts once more itself: the count before it is value - 1.
                conn.request("GET", f"/counter?id={pid}")
                r = conn.getresponse()
                before = json.loads(r.read())["counter"] - 1
                applied_counter += before
                if before > 1 or (outcome == "ok" and before != 1):
                    self.failures.append(f"counter POST {pid} ({outcome}) applied {before} times")
        finally:
            conn.close()
        self.figures["posts_counter_applied"] = applied_counter
        self.figures["posts_counter_sent"] = len(counter_ids)

    # ---- the end ----------------------------------------------------------------------------
    def stop_proxy(self):
        """TERM to the serving process, which must exit 0 (and, under ASan, report no leak),
        then the harness's stop for the group."""
        if harness.pid_alive(self.pid) and self.pid != self.proxy.pid:
            os.kill(self.pid, signal.SIGTERM)
            try:
                harness.wait_until(lambda: not harness.pid_alive(self.pid), timeout=60,
                                   what="the last proxy process stopped")
            except AssertionError as e:
                self.failures.append(str(e))
        self.proxy.stop()

    def keep_logs(self):
        """On a failure: the servers' logs, copied where the summary says, before their
        harnesses remove them."""
        keep = tempfile.mkdtemp(prefix="portico-soak-logs-")
        for name, read in (("portico.log", lambda: self.proxy.read_log()),
                           ("backend.log", lambda: self.backend.read_log())):
            try:
                with open(os.path.join(keep, name), "w") as f:
                    f.write(read())
            except (AttributeError, OSError):
                pass
        shutil.copytree(self.tmp, os.path.join(keep, "soak"), dirs_exist_ok=True)
        self.failures.append(f"logs kept in {keep}")

    def close(self):
        if self.failures or self.ctx.tally.failure_count:
            self.keep_logs()
        for fn in reversed(self.cleanups):
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - a sanitizer report, a server that failed
                self.failures.append(f"stopping: {e}")
        shutil.rmtree(self.tmp, ignore_errors=True)

    def summary(self):
        t = self.ctx.tally
        out = [f"# Chaos soak: {self.duration:g} s{' (ASan build)' if self.asan else ''}, "
               f"seed {self.args.seed}", ""]
        by_kind = collections.defaultdict(collections.Counter)
        for (kind, outcome), n in t.outcomes.items():
            by_kind[kind][outcome] += n
        out.append("## Requests per kind (outcome: count)")
        for kind in sorted(by_kind):
            total = sum(by_kind[kind].values())
            parts = ", ".join(f"{o}: {n}" for o, n in by_kind[kind].most_common())
            out.append(f"- {kind}: {total} ({parts})")
        out.append("")
        out.append("## Chaos")
        out.append("- actions: " + ", ".join(f"{k} {v}" for k, v in sorted(self.actions.items())))
        out.append(f"- origin starts: chaos {self.chaos.starts}, ws {self.ws.starts}, "
                   f"grpc {self.grpc.starts}")
        try:
            text = harness.http_get(self.backend_admin, "/metrics")[1].decode()
            restarts = {c: int(sum_samples(text, "portico_backend_worker_restarts_total",
                                           cause=c)) for c in ("crash", "max_requests", "hup")}
            out.append(f"- backend worker restarts: {restarts}")
        except OSError:
            pass
        out += ["- timeline:"] + [f"    {line}" for line in self.timeline]
        out.append("")
        f = self.figures
        out.append("## Resources")
        if "end_fds" in f:
            out.append(f"- proxy fds: {f['start_fds']} at the start (pid {f['start_pid']}), "
                       f"{f['end_fds']} at the end (pid {f['end_pid']}); slack {FD_SLACK}")
            out.append(f"- proxy RSS: {f['start_rss_kib'] / 1024:.1f} MiB at the start, "
                       f"{f['end_rss_kib'] / 1024:.1f} MiB at the end; bound +"
                       f"{RSS_BOUND_MIB_ASAN if self.asan else RSS_BOUND_MIB} MiB")
        for name, (per_process, seen, ambiguous) in getattr(self, "counts", {}).items():
            out.append(f"- {name}: proxy counted {sum(per_process)} ({per_process} per process), "
                       f"clients saw {seen} answered, {ambiguous} ambiguous")
        if "posts_counter_sent" in f:
            out.append(f"- POSTs: chaos origin applied {f['posts_chaos_applied']} ids, none twice "
                       f"unless below; counter POSTs {f['posts_counter_sent']}, applied "
                       f"{f['posts_counter_applied']}")
        out.append("")
        failures = [f"{s}s {k}: {w}" for s, k, w in t.failures] + self.failures
        total_failures = t.failure_count + len(self.failures)
        out.append(f"## Result: {'FAILED' if total_failures else 'passed'} "
                   f"({total_failures} failures)")
        out += [f"- {x}" for x in failures[:80]]
        return "\n".join(out) + "\n", total_failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=60, help="seconds of traffic")
    parser.add_argument("--report", help="write the summary to this file too")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    soak = Soak(args)
    try:
        soak.run()
    except Exception as e:  # noqa: BLE001 - the summary says what happened
        import traceback
        soak.failures.append(f"the soak itself failed: {e!r}\n{traceback.format_exc()}")
    finally:
        soak.ctx.stopping.set()
        soak.close()
    text, failures = soak.summary()
    print(text)
    if args.report:
        with open(args.report, "w") as f:
            f.write(text)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
