#!/usr/bin/python3
"""WebSocket echo throughput and gRPC unary calls through Portico and its peers, in one run.

  bench/ws_grpc.py                     # 3 rounds x (ws, grpc) x every proxy, 10 s each: ~6 min
  bench/ws_grpc.py --rounds 5 --duration 20 -o /tmp/ws-grpc.md
  bench/ws_grpc.py --workloads grpc --proxies portico,haproxy --rounds 1 --duration 2

ws: a C client (a thread per connection) sends masked binary messages through the proxy to a
C WebSocket echo origin, which unmasks each frame and sends it back unmasked; the client
compares every echo byte for byte and sends the next (one message in flight per connection).
grpc: h2load posts a gRPC unary request (a 5-byte-prefixed 64-byte message, te: trailers) to a
C h2c origin (nghttp2) that answers each call with the message back, content-type
application/grpc and a grpc-status: 0 trailer; a call whose message did not come back counts
as an error. Before and after each measurement python3-websockets / python3-grpcio make real
calls through the proxy. The proxy is pinned to CPU 0, client and origin to CPU 1 (bench/run's
placement); each proxy is started fresh for each measurement, one worker, no access log.
"""
import argparse, asyncio, os, re, shutil, signal, statistics, subprocess, sys, tempfile, time
import urllib.request

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
from lib import machine, procstat  # noqa: E402
from lib.loadgen import _run_bounded, parse_h2load  # noqa: E402
from lib.servers import BenchError, RunningServer, first_line, free_port, git_version  # noqa

GRPC_MSG = b"\x00\x00\x00\x00\x40" + b"m" * 64  # one length-prefixed 64-byte message
GRPC_PATH = "/bench.Echo/Unary"
GRPC_CHECK = f"""import grpc, sys
with grpc.insecure_channel('127.0.0.1:' + sys.argv[1]) as ch:
    r, call = ch.unary_unary('{GRPC_PATH}').with_call(b'm' * 64, timeout=5)
    assert r == b'm' * 64 and call.code() == grpc.StatusCode.OK, (r, call.code())"""
QUIET_LOG = re.compile(r"\[info\]|\bnotice\b|^portico: max_connections|ready to serve", re.I)


def log(msg):
    print(f"[ws_grpc {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---- the proxies: config text for (workdir, port, origin port, workload, admin port) -------
# Each forwards the request with no field added (bench/README.md, "Like with like"): Portico,
# nghttpx and h2o add some by default, nginx and HAProxy none.
def portico_cfg(d, port, origin, kind, admin):
    return (f'[server]\nworkers = 1\nforwarded = false\nrequest_id_header = ""\n\n'
            f'[[listener]]\naddress = "127.0.0.1:{port}"\n\n'
            f'[admin]\naddress = "127.0.0.1:{admin}"\n\n'
            f'[[cluster]]\nname = "origin"\nendpoints = ["127.0.0.1:{origin}"]\n'
            f'protocol = "{"h2c" if kind == "grpc" else "http1"}"\nidle_timeout = 60\n\n'
            '[[route]]\npath_prefix = "/"\ncluster = "origin"\n'
            + ("websocket = true\n" if kind == "ws" else ""))


def nginx_cfg(d, port, origin, kind, admin, buffer=None):
    loc = ("grpc_pass grpc://origin;" if kind == "grpc" else
           'proxy_pass http://origin; proxy_http_version 1.1; proxy_set_header Upgrade '
           '$http_upgrade; proxy_set_header Connection "upgrade"; proxy_read_timeout 60s;' +
           (f" proxy_buffer_size {buffer}; proxy_buffers 8 {buffer};" if buffer else ""))
    temps = " ".join(f"{k}_temp_path {d}/{k};" for k in
                     ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return (f"worker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log warn;\n"
            "events { worker_connections 4096; }\nhttp {\n  access_log off; "
            f"keepalive_requests 100000000; {temps}\n  upstream origin {{ server "
            f"127.0.0.1:{origin}; keepalive 1024; keepalive_requests 100000000; }}\n  server {{\n"
            f"    listen 127.0.0.1:{port}{' http2' if kind == 'grpc' else ''};\n"
            f"    location / {{ {loc} }}\n  }}\n}}\n")


def haproxy_cfg(d, port, origin, kind, admin):
    h2 = " proto h2" if kind == "grpc" else ""
    return (f"global\n  nbthread 1\n  pidfile {d}/haproxy.pid\ndefaults\n  mode http\n"
            "  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\n"
            "  timeout tunnel 60s\n  timeout http-keep-alive 60s\n  http-reuse always\n"
            f"frontend f\n  bind 127.0.0.1:{port}{h2}\n  default_backend o\nbackend o\n"
            f"  server o 127.0.0.1:{origin}{h2}\n")


def nghttpx_cfg(d, port, origin, kind, admin):
    return (f"frontend=127.0.0.1,{port};no-tls\nbackend=127.0.0.1,{origin};;proto="
            f"{'h2' if kind == 'grpc' else 'http/1.1'}\nworkers=1\nno-ocsp=yes\nno-via=yes\n"
            "no-add-x-forwarded-proto=yes\n"
            f"pid-file={d}/nghttpx.pid\nerrorlog-file={d}/error.log\n")


def h2o_cfg(d, port, origin, kind, admin):
    return (f"num-threads: 1\nuser: root\npid-file: {d}/h2o.pid\nerror-log: {d}/error.log\n"
            f"listen:\n  host: 127.0.0.1\n  port: {port}\nhosts:\n  default:\n    paths:\n"
            f"      /:\n        proxy.reverse.url: http://127.0.0.1:{origin}/\n"
            "        proxy.websocket: ON\n        proxy.websocket.timeout: 60000\n"
            "proxy.emit-x-forwarded-headers: OFF\nproxy.emit-via-header: OFF\n")


def nginx_argv(b, c):
    return ["nginx", "-p", os.path.dirname(c), "-c", c, "-g", "daemon off;"]


class Proxy:
    def __init__(self, cfg, argv, version, upstream, children=0):
        self.cfg, self.argv, self.version_argv = cfg, argv, version
        self.upstream = upstream  # workload -> how it talks to the origin, or "n/a: why"
        self.expected_children = children  # worker processes to wait for


NGINX_WS = "HTTP/1.1 (proxy_http_version 1.1, Upgrade and Connection set"
PROXIES = {
    "portico": Proxy(portico_cfg, lambda b, c: [b, "-c", c], lambda b: [b, "--version"],
                     {"ws": "HTTP/1.1 (cluster protocol http1, route websocket = true)",
                      "grpc": 'h2c (cluster protocol = "h2c")'}),
    "nginx": Proxy(nginx_cfg, nginx_argv, lambda b: ["nginx", "-v"],
                   {"ws": NGINX_WS + "; tunnel buffer proxy_buffer_size: default 4k)",
                    "grpc": "h2c (grpc_pass; upstream keepalive 1024: one call per connection)"},
                   1),
    "nginx-16k": Proxy(lambda *x: nginx_cfg(*x, buffer="16k"), nginx_argv,
                       lambda b: ["nginx", "-v"],
                       {"ws": NGINX_WS + "; proxy_buffer_size 16k: the 16 KiB reads of "
                              "Portico and HAProxy)",
                        "grpc": "n/a: a WebSocket variant (grpc_buffer_size is moot for 69 B)"},
                       1),
    "haproxy": Proxy(haproxy_cfg, lambda b, c: ["haproxy", "-db", "-f", c],
                     lambda b: ["haproxy", "-v"],
                     {"ws": "HTTP/1.1 (mode http, a tunnel after the 101; bufsize 16k)",
                      "grpc": "h2c (server proto h2, http-reuse always)"}),
    "nghttpx": Proxy(nghttpx_cfg, lambda b, c: ["nghttpx", f"--conf={c}"],
                     lambda b: ["nghttpx", "--version"],
                     {"ws": "HTTP/1.1 (backend proto=http/1.1)", "grpc": "h2c (backend proto=h2)"},
                     1),
    "h2o": Proxy(h2o_cfg, lambda b, c: ["h2o", "-c", c], lambda b: ["h2o", "--version"],
                 {"ws": "HTTP/1.1 (proxy.websocket: ON)",
                  "grpc": "n/a: h2o 2.2 has no HTTP/2 upstream"}),
}
DIRECT = {"ws": "none: the client on the origin", "grpc": "none: h2load on the origin"}


class Spec:  # what RunningServer needs of a server
    def __init__(self, name, children=0):
        self.name, self.expected_children = name, children


# ---- one measurement --------------------------------------------------------------------
def check(kind, port):
    """A real client's call through the proxy: python3-websockets or python3-grpcio."""
    if kind == "grpc":
        p = subprocess.run([sys.executable, "-c", GRPC_CHECK, str(port)], capture_output=True,
                           text=True, timeout=20)
        if p.returncode:
            raise BenchError(f"grpcio call through :{port} failed:\n{p.stderr[-1500:]}")
        return
    import websockets

    async def go():
        async with websockets.connect(f"ws://127.0.0.1:{port}/ws", max_size=None,
                                      compression=None, open_timeout=5) as ws:
            for n in (1, 65536, 300000):
                msg = os.urandom(n)
                await ws.send(msg)
                if await asyncio.wait_for(ws.recv(), 5) != msg:
                    raise BenchError(f"ws echo of {n} bytes came back wrong through :{port}")
    asyncio.run(go())


def drive(kind, port, seconds, a, workdir, tag, after=lambda: None):
    """One client run on CPU 1, bounded (killed at seconds + 30): (what it saw, its CPU s, wall
    s, what after() returned the moment it exited, before its output is read)."""
    if kind == "ws":
        argv = [a.tool, "ws-client", str(port), str(a.connections), str(a.msg_bytes),
                str(seconds)]
    else:
        logf = f"{workdir}/{tag}.h2load.log"
        argv = ["h2load", "-t1", f"-c{a.grpc_connections}", f"-m{a.streams}",
                f"-D{max(1, round(seconds))}", "-d", a.grpc_body, "-H",
                "content-type: application/grpc", "-H", "te: trailers", f"--log-file={logf}",
                f"http://127.0.0.1:{port}{GRPC_PATH}"]
    text, cpu_s, wall = _run_bounded(argv, 1, seconds + 30, f"{workdir}/{tag}.txt")
    snap = after()
    if kind == "ws":
        r = {k: float(v) for k, v in re.findall(r"(\w+)=([\d.]+)", text)}
        return dict(r, mbps=r["bytes"] / 1e6 / r["seconds"], work=r["bytes"] / 1e6), cpu_s, \
            wall, snap
    c = parse_h2load(text, logf)
    os.unlink(logf)
    # Every good call brings its message back as DATA: calls answered without it (a proxy's
    # own trailers-only grpc-status, on HTTP 200) show as missing bytes; the timed run's end
    # leaves up to -c x -m calls with their DATA in and the trailers not yet.
    missing = c.requests * len(GRPC_MSG) - c.extra.get("bytes_data", 0)
    slack = a.grpc_connections * a.streams * len(GRPC_MSG)
    errors = c.errors + (max(0, missing) // len(GRPC_MSG) if abs(missing) > slack else 0)
    return dict(rps=c.rps, p50=c.p50_ms, p99=c.p99_ms, errors=errors, work=c.requests), \
        cpu_s, wall, snap


def cpu_busy():
    """Busy seconds per CPU ("cpu": all of them, "cpu0", "cpu1"...) from /proc/stat."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu"):
                v = [int(x) / procstat.CLOCK_TICKS for x in line.split()[1:9]]
                out[line.split()[0]] = sum(v) - v[3] - v[4]  # all but idle and iowait
    return out


def wait_quiet(a):
    """Waits (at most --quiet-wait s) for a second in which other tenants used less than
    --quiet % of one CPU; returns that share."""
    deadline = time.monotonic() + a.quiet_wait
    while True:
        before = cpu_busy()["cpu"]
        time.sleep(1)
        busy = 100 * (cpu_busy()["cpu"] - before)
        if busy < a.quiet or time.monotonic() > deadline:
            return busy


def portico_odd(admin):
    """From Portico's /metrics: requests not answered by the upstream (but 499s: the timed
    h2load runs end with calls in flight) and upstream errors."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{admin}/metrics", timeout=5).read().decode()
    odd = {}
    for m in re.finditer(r'^portico_requests_total\{.*?code="(\d+)".*?answered_by="(\w+)".*\} '
                         r'(\S+)|^portico_upstream_errors_total\{.*?kind="(\w+)".*\} (\S+)',
                         text, re.M):
        if m.group(1) and m.group(2) != "upstream" and m.group(1) != "499":
            odd[f"answered_by {m.group(2)} {m.group(1)}"] = float(m.group(3))
        elif m.group(4) and float(m.group(5)):
            odd[f"upstream error {m.group(4)}"] = float(m.group(5))
    return odd


def log_lines(workdir, name):
    """The proxy's log lines (stdout/stderr and error.log) above info level, before its stop."""
    out = []
    for f in (f"{name}.log", "error.log"):
        if os.path.exists(os.path.join(workdir, f)):
            with open(os.path.join(workdir, f), errors="replace") as fh:
                out += [ln.rstrip() for ln in fh if ln.strip() and not QUIET_LOG.search(ln)]
    return out


def measure(kind, name, a, origin, rnd):
    workdir = tempfile.mkdtemp(prefix=f"{kind}-{name}-", dir=a.tmp)
    server, port, admin = None, origin.ports["h1"], free_port()
    if name != "direct":
        port, p = free_port(), PROXIES[name]
        conf = os.path.join(workdir, f"{name}.conf")
        with open(conf, "w") as f:
            f.write(p.cfg(workdir, port, origin.ports["h1"], kind, admin))
        server = RunningServer(Spec(name, p.expected_children), p.argv(a.portico, conf),
                               workdir, {"h1": port}, 0)
    try:
        if server:
            server.wait_ready(timeout=15)
        check(kind, port)
        drive(kind, port, a.warmup, a, workdir, "warmup")
        pids = server.tree() if server else []
        quiet = wait_quiet(a)

        def snapshot():
            return (procstat.cpu_seconds(server.tree() if server else []),
                    procstat.tree_cpu_seconds(origin.pid), cpu_busy())
        cpu0, org0, st0 = snapshot()
        r, cli, wall, (cpu, org, st) = drive(kind, port, a.duration, a, workdir, "run", snapshot)
        st = {k: v - st0[k] for k, v in st.items()}
        cpu, org = cpu - cpu0, org - org0
        if server and server.exited():
            raise BenchError(f"{name} died during the run: {server.exited()}")
        check(kind, port)  # still answers properly after the load
        per = (lambda s: s * 1e6 / r["work"]) if r["work"] else (lambda s: None)
        r.update(round=rnd, kind=kind, proxy=name, quiet=quiet, cpu_per=per(cpu),
                 srv_pct=100 * cpu / wall, cpu0_pct=100 * st["cpu0"] / wall,
                 cpu1_pct=100 * st["cpu1"] / wall,
                 oth_pct=100 * (st["cpu"] - cpu - cli - org) / wall,
                 gone=len(set(pids) - set(server.tree())) if server else 0,
                 odd=portico_odd(admin) if name == "portico" else {},
                 logs=log_lines(workdir, name) if server else [])
        return r
    except BenchError as e:
        if server and (server.exited() or server.wait_exit(timeout=5)):
            raise BenchError(f"{name} died: {server.exited()}\nfiles: {workdir}") from e
        raise BenchError(f"{e}\n{name} log tail:\n{server.log_tail() if server else ''}") from e
    finally:
        if server:
            server.stop()


# ---- the report -------------------------------------------------------------------------
def med(rows, key):
    vals = [r[key] for r in rows if r.get(key) is not None]
    return (statistics.median(vals), min(vals), max(vals)) if vals else (None, None, None)


def fmt(t, digits=0):
    if t[0] is None:
        return "–"
    return "{0:,.{3}f} ({1:,.{3}f}–{2:,.{3}f})".format(*t, digits)


def bound_by(rows):
    c0, c1, oth = (med(rows, k)[0] for k in ("cpu0_pct", "cpu1_pct", "oth_pct"))
    full = [w for w, c in (("CPU 0 (proxy)", c0), ("CPU 1 (client+origin)", c1)) if c >= 90]
    return (" and ".join(full) or "neither CPU full: waiting on each other") + (
        f"; others took {oth:.0f} % of a CPU" if oth > 20 else "")


def ratio_lines(kind, results, names, key, label, lower):
    peers = [n for n in names if n not in ("portico", "direct")
             and not PROXIES[n].upstream[kind].startswith("n/a")]
    meds = {n: med([r for r in results if r["proxy"] == n], key)[0] for n in peers}
    meds = {n: v for n, v in meds.items() if v}
    pm = med([r for r in results if r["proxy"] == "portico"], key)[0]
    if not meds or not pm:
        return []
    best, pick = (min, min) if lower else (max, max)
    best = best(meds, key=meds.get)
    per_round = []
    for rnd in sorted({r["round"] for r in results}):
        rr = {r["proxy"]: r[key] for r in results if r["round"] == rnd and r.get(key)}
        vals = [v for k, v in rr.items() if k in meds]
        if "portico" in rr and vals:
            per_round.append(f"{rr['portico'] / pick(vals):.2f}")
    return [f"- Portico ÷ best peer ({best}), {label}: **{pm / meds[best]:.2f}** "
            f"({'lower' if lower else 'higher'} is better); each round against its best peer: "
            f"{', '.join(per_round)}"]


def table(kind, results, names, a):
    ws = kind == "ws"
    main, unit, per = ("mbps", "MB/s echoed", "µs/MB") if ws else ("rps", "calls/s", "µs/call")
    extra = "msgs/conn min÷max, worst echo ms" if ws else "p50 / p99 ms"
    out = ["## " + (f"WebSocket echo: {a.connections} connections, {a.msg_bytes} B binary "
                    "messages, one in flight each; client HTTP/1.1 + Upgrade" if ws else
                    f"gRPC unary: h2load -c{a.grpc_connections} -m{a.streams} over h2c, 64-byte "
                    "message each way"), "", "Median (min–max) over the rounds.", "",
           f"| proxy | upstream | {unit} | proxy CPU {per} | proxy CPU % | CPU 0 / 1 busy % | "
           f"others % | {extra} | errors | bound by |", "|---" * 10 + "|"]
    for n in names:
        rows = [r for r in results if r["proxy"] == n]
        up = DIRECT[kind] if n == "direct" else PROXIES[n].upstream[kind]
        if up.startswith("n/a"):
            out.append(f"| {n} | {up} |" + " |" * 8)
        if not rows:
            continue
        d = 0 if ws else 2
        x = (f"{med([dict(v=r['conn_min'] / max(1, r['conn_max'])) for r in rows], 'v')[0]:.2f}"
             f", {max(r['max_ms'] for r in rows):.0f}" if ws else
             f"{med(rows, 'p50')[0]:.1f} / {med(rows, 'p99')[0]:.1f}")
        px = n != "direct"
        out.append(f"| {n} | {up} | {fmt(med(rows, main))} | "
                   f"{fmt(med(rows, 'cpu_per'), d) if px else '–'} | "
                   f"{med(rows, 'srv_pct')[0]:.0f} | {med(rows, 'cpu0_pct')[0]:.0f} / "
                   f"{med(rows, 'cpu1_pct')[0]:.0f} | {med(rows, 'oth_pct')[0]:.0f} | {x} | "
                   f"{sum(int(r['errors']) for r in rows)}"
                   f"{'; processes gone' if any(r['gone'] for r in rows) else ''} | "
                   f"{bound_by(rows) if px else 'CPU 1: client and origin alone'} |")
    out.append("")
    if "portico" in names:
        for key, label, lower in ((main, unit, False), ("cpu_per", f"proxy CPU {per}", True)):
            out += ratio_lines(kind, results, names, key, label, lower)
        out.append("")
    return out


def figure(r):
    fig = f"{r['mbps']:,.0f} MB/s" if r["kind"] == "ws" else f"{r['rps']:,.0f} calls/s"
    return f"{fig} | {r['cpu_per'] or 0:.2f}"


def report(results, failures, a, names, versions, minutes):
    info = machine.describe()
    out = [f"# WebSocket and gRPC through Portico and its peers ({info['date']})", "",
           "## Method", "", " ".join(__doc__.split("\n\n")[2].split()), "",
           f"Rounds: {a.rounds}; in each, every workload and every proxy in turn, both orders "
           f"rotated each round; {a.warmup:g} s of unmeasured load, then {a.duration:g} s "
           "measured. Proxy CPU = utime+stime (+cutime+cstime) of the proxy's process tree "
           "from /proc/PID/stat around the measured run (10 ms ticks; this kernel has no "
           "IRQ_TIME_ACCOUNTING, so the loopback TCP work a process does in softirq is its "
           "own). CPU 0 / 1 busy: each CPU's busy time over the run (/proc/stat). Others: "
           "machine busy time minus proxy, client (wait4) and origin: other tenants, kernel "
           "threads, steal. MB/s counts message bytes echoed back to "
           "the client (10^6 B), each of which crossed the proxy twice, once each way. "
           "\"direct\": the client on the origin, no proxy: what CPU 1 allows.", "",
           f"Machine: {info['cpu']}, {info['memory']}, kernel {info['kernel']}; the run took "
           f"{minutes:.0f} min.", "", "| program | version |", "|---|---|"]
    out += [f"| {k} | {v} |" for k, v in versions.items()] + [""]
    for kind in a.workloads:
        out += table(kind, [r for r in results if r["kind"] == kind], names, a)
    out += ["## Every round", "", "| round | workload | proxy | figure | proxy CPU µs per MB or "
            "call | CPU 0 / 1 busy % | others % (before: quiet %) | errors |", "|---" * 8 + "|"]
    out += [f"| {r['round']} | {r['kind']} | {r['proxy']} | {figure(r)} | {r['cpu0_pct']:.0f} / "
            f"{r['cpu1_pct']:.0f} | {r['oth_pct']:.0f} ({r['quiet']:.0f}) | {int(r['errors'])} |"
            for r in results]
    if failures:
        out += ["", "## Measurements lost", ""]
        out += [f"- round {n} {k} {p}:\n\n```\n{msg}\n```" for n, k, p, msg in failures]
    out += ["", "## Portico's log and metrics", ""]
    out += ([f"- {r['kind']} round {r['round']}: metrics {r['odd'] or '{}'}; log: "
             f"{'; '.join(r['logs'][:5]) or 'nothing above info'}" for r in results
             if r["proxy"] == "portico" and (r["odd"] or r["logs"])]
            or ["- nothing above info level in its log; every request answered by the "
                "upstream (499s of calls in flight at the end aside); no upstream errors."])
    others = sorted({(r["proxy"], ln[:200]) for r in results if r["proxy"] != "portico"
                     for ln in r["logs"][:3]})
    out += ["", "Peers' log lines above info (the first 3 of each run, deduplicated):", ""]
    out += [f"- {p}: `{ln}`" for p, ln in others] or ["- none"]
    return "\n".join(out) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=float, default=10, help="seconds measured per run")
    p.add_argument("--warmup", type=float, default=1, help="seconds of load before each run")
    p.add_argument("--connections", type=int, default=10, help="WebSocket connections")
    p.add_argument("--msg-bytes", type=int, default=65536, help="WebSocket message size")
    p.add_argument("--grpc-connections", type=int, default=10, help="h2load -c")
    p.add_argument("--streams", type=int, default=10, help="h2load -m")
    p.add_argument("--workloads", default="ws,grpc")
    p.add_argument("--proxies", default=",".join(PROXIES))
    p.add_argument("--no-direct", action="store_true", help="no client-on-origin row")
    p.add_argument("--quiet", type=float, default=30,
                   help="before each run, wait until the machine is below this busy %% ...")
    p.add_argument("--quiet-wait", type=float, default=120, help="... for at most this long")
    p.add_argument("--build-dir", default=os.path.join(os.path.dirname(BENCH), "build"))
    p.add_argument("-o", "--output", default=os.path.join(
        BENCH, "results", f"ws-grpc-{time.strftime('%Y-%m-%d')}.md"))
    p.add_argument("--keep-tmp", action="store_true")
    a = p.parse_args()
    a.workloads = a.workloads.split(",")
    names = a.proxies.split(",") + ([] if a.no_direct else ["direct"])
    a.portico = os.path.abspath(os.path.join(a.build_dir, "proxy", "portico"))
    for prog in ["gcc", "h2load", "taskset"] + [PROXIES[n].argv(a.portico, "x")[0] for n in names
                                                if n != "direct"]:
        if not shutil.which(prog) and not os.path.exists(prog):
            sys.exit(f"missing program: {prog}")
    a.tmp = tempfile.mkdtemp(prefix="ws-grpc-")
    if "portico" in names:  # a copy: a rebuild of the tree during the run cannot change it
        built = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(os.path.getmtime(a.portico)))
        a.portico = shutil.copy2(a.portico, os.path.join(a.tmp, "portico"))
    a.tool, a.grpc_body = os.path.join(a.tmp, "wsg"), os.path.join(a.tmp, "grpc-request.bin")
    with open(a.tool + ".c", "w") as f:
        f.write(TOOL_C)
    with open(a.grpc_body, "wb") as f:
        f.write(GRPC_MSG)
    cc = subprocess.run(["gcc", "-O2", "-pthread", "-o", a.tool, a.tool + ".c", "-lnghttp2",
                         "-lcrypto"], capture_output=True, text=True)
    if cc.returncode:
        sys.exit(f"cannot build the origins and client (needs libnghttp2-dev, libssl-dev):\n"
                 f"{cc.stderr}")
    versions = {n: first_line(PROXIES[n].version_argv(a.portico)).split(" - ")[0].replace(
                    "nginx version: ", "")
                for n in names if n != "direct"}
    if "portico" in names:
        versions["portico"] += (f"; {git_version(os.path.dirname(BENCH), a.build_dir)} at "
                                f"the start, binary built {built} UTC, copied for the run")
    versions.update(h2load=first_line(["h2load", "--version"]), **{
        "origins, WebSocket client": f"this script's C, {first_line(['gcc', '--version'])} -O2"})
    started, results, failures, origins, done = time.time(), [], [], {}, []

    def write():  # after every measurement: a run stopped half-way still leaves its figures
        if results:
            text = report(results, failures, a, names, versions, (time.time() - started) / 60)
            with open(a.output, "w") as f:
                f.write(text + ("" if done else "\n**Partial: the run did not finish.**\n"))
            return text
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("ws_grpc.py: SIGTERM, stopping"))
    try:
        for kind in a.workloads:
            port = free_port()
            origins[kind] = RunningServer(Spec(f"origin-{kind}"), [a.tool, "ws-echo" if kind ==
                                          "ws" else "grpc", str(port)], a.tmp, {"h1": port}, 1)
            origins[kind].wait_ready(timeout=10)
        for rnd in range(1, a.rounds + 1):
            k, n = (rnd - 1) % len(a.workloads), (rnd - 1) % len(names)
            for kind in a.workloads[k:] + a.workloads[:k]:
                for name in names[n:] + names[:n]:
                    if name != "direct" and PROXIES[name].upstream[kind].startswith("n/a"):
                        continue
                    log(f"round {rnd}/{a.rounds} {kind} {name}")
                    try:
                        r = measure(kind, name, a, origins[kind], rnd)
                    except BenchError as e:  # that measurement is lost; the run goes on
                        log(f"  FAILED: {e}")
                        failures.append((rnd, kind, name, str(e)[-3000:]))
                        continue
                    log(f"  {figure(r)} CPU µs per unit, CPU 0/1 {r['cpu0_pct']:.0f}/"
                        f"{r['cpu1_pct']:.0f} %, others {r['oth_pct']:.0f} %, errors "
                        f"{int(r['errors'])}")
                    results.append(r)
                    write()
        done.append(True)
    finally:
        for o in origins.values():
            o.stop()
        text = write()
        print(text or "no measurement finished")
        if a.keep_tmp or failures:
            log(f"kept {a.tmp}")
        else:
            shutil.rmtree(a.tmp, ignore_errors=True)


# The origins and the WebSocket client, compiled into the run's temporary directory.
TOOL_C = r"""/* The origins and the WebSocket client of bench/ws_grpc.py: a thread per connection.
   wsg ws-echo PORT | wsg grpc PORT | wsg ws-client PORT CONNS BYTES SECONDS */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#define BUF (1 << 20)
#define NV(n, v) {(uint8_t *)n, (uint8_t *)v, sizeof n - 1, sizeof v - 1, 0}
typedef struct { int fd; char *b; size_t off, len; } Rd;
static int port, msg_bytes; static double seconds;
static long long total_msgs, total_errors, min_msgs = -1, max_msgs; static double max_rtt;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int need(Rd *r, size_t n) { /* at least n unread bytes at r->b + r->off */
  if (r->len - r->off >= n) return 1;
  memmove(r->b, r->b + r->off, r->len - r->off); r->len -= r->off; r->off = 0;
  for (ssize_t k; r->len < n; r->len += k)
    if ((k = read(r->fd, r->b + r->len, BUF - r->len)) <= 0) return 0;
  return 1;
}
static int write_all(int fd, const void *p, size_t n) {
  for (ssize_t k; n; p = (char *)p + k, n -= k) if ((k = write(fd, p, n)) <= 0) return 0;
  return 1;
}
static void accept_of(const char *key, size_t n, char out[64]) {
  char in[128]; unsigned char d[20];
  snprintf(in, sizeof in, "%.*s258EAFA5-E914-47DA-95CA-C5AB0DC85B11", (int)n, key);
  SHA1((unsigned char *)in, strlen(in), d); EVP_EncodeBlock((unsigned char *)out, d, 20);
}
static size_t head_end(Rd *r) { /* reads an HTTP head: its length, 0 on EOF or overflow */
  for (char *e;;) {
    if ((e = memmem(r->b, r->len, "\r\n\r\n", 4))) return e + 4 - r->b;
    if (r->len > 16000 || !need(r, r->len + 1)) return 0;
  }
}
static const char *field(Rd *r, size_t end, const char *name, size_t *n) { /* "\nName:" */
  char h[16384], *p; memcpy(h, r->b, end); h[end] = 0;
  if (!(p = strcasestr(h, name))) return NULL;
  for (p += strlen(name); *p == ' '; p++) {}
  *n = strcspn(p, "\r\n"); return r->b + (p - h);
}
static void unmask(unsigned char *p, size_t n, const unsigned char m[4]) {
  uint32_t m32; memcpy(&m32, m, 4); uint64_t m64 = ((uint64_t)m32 << 32) | m32, w; size_t i = 0;
  for (; i + 8 <= n; i += 8) { memcpy(&w, p + i, 8); w ^= m64; memcpy(p + i, &w, 8); }
  for (; i < n; i++) p[i] ^= m[i & 3];
}
static size_t frame(Rd *r, uint64_t *len, int *masked) { /* header size (0: EOF), *len */
  if (!need(r, 2)) return 0;
  unsigned char *h = (unsigned char *)r->b + r->off; int ext = (h[1] & 127) - 125;
  size_t hl = 2 + (ext == 1 ? 2 : ext == 2 ? 8 : 0) + ((*masked = h[1] >> 7) ? 4 : 0);
  if (!need(r, hl)) return 0;
  h = (unsigned char *)r->b + r->off; *len = ext <= 0 ? (h[1] & 127) : 0;
  for (int i = 0; ext > 0 && i < (ext == 1 ? 2 : 8); i++) *len = (*len << 8) | h[2 + i];
  return hl;
}
static size_t put_head(unsigned char *h, int b0, uint64_t n, int mask_bit) {
  h[0] = b0;
  if (n < 126) { h[1] = mask_bit | n; return 2; }
  if (n < 65536) { h[1] = mask_bit | 126; h[2] = n >> 8; h[3] = n; return 4; }
  h[1] = mask_bit | 127; for (int i = 0; i < 8; i++) h[2 + i] = n >> (56 - 8 * i);
  return 10;
}
static void *ws_conn(void *arg) { /* echo: unmask each frame, send it back unmasked */
  Rd r = {(int)(intptr_t)arg, malloc(BUF), 0, 0}; size_t end = head_end(&r), kn; char acc[64];
  const char *key = end ? field(&r, end, "\nSec-WebSocket-Key:", &kn) : NULL;
  char resp[256];
  if (!key) goto out;
  accept_of(key, kn, acc);
  int rn = snprintf(resp, sizeof resp, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket"
                    "\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n", acc);
  if (!write_all(r.fd, resp, rn)) goto out;
  for (r.off = end;;) {
    uint64_t n; int masked; size_t hl = frame(&r, &n, &masked);
    if (!hl || !masked || n > BUF - 16 || !need(&r, hl + n)) break;
    unsigned char *h = (unsigned char *)r.b + r.off, op = h[0] & 15, o[10];
    unmask(h + hl, n, h + hl - 4);
    struct iovec v[2] = {{o, put_head(o, op == 9 ? (h[0] & 0xf0) | 10 : h[0], n, 0)},
                         {h + hl, n}};
    if (writev(r.fd, v, 2) != (ssize_t)(v[0].iov_len + n) || op == 8) break;
    r.off += hl + n;
  }
out:
  close(r.fd); free(r.b); return NULL;
}
typedef struct { char *b; size_t len, sent; } Stream;
static int on_begin(nghttp2_session *s, const nghttp2_frame *f, void *u) {
  if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST)
    nghttp2_session_set_stream_user_data(s, f->hd.stream_id, calloc(1, sizeof(Stream)));
  return 0;
}
static int on_chunk(nghttp2_session *s, uint8_t fl, int32_t id, const uint8_t *d, size_t n,
                    void *u) {
  Stream *st = nghttp2_session_get_stream_user_data(s, id);
  if (!st || st->len + n > 65536) return NGHTTP2_ERR_CALLBACK_FAILURE;
  st->b = realloc(st->b, st->len + n); memcpy(st->b + st->len, d, n); st->len += n;
  return 0;
}
static ssize_t body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t n, uint32_t *fl,
                    nghttp2_data_source *src, void *u) { /* the message, then the trailer */
  Stream *st = src->ptr; size_t k = st->len - st->sent < n ? st->len - st->sent : n;
  memcpy(buf, st->b + st->sent, k); st->sent += k;
  if (st->sent == st->len) {
    nghttp2_nv t[] = {NV("grpc-status", "0")};
    *fl |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
    if (nghttp2_submit_trailer(s, id, t, 1)) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  }
  return k;
}
static int on_frame(nghttp2_session *s, const nghttp2_frame *f, void *u) {
  Stream *st = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
  if (!st || !(f->hd.flags & NGHTTP2_FLAG_END_STREAM)) return 0;
  nghttp2_nv h[] = {NV(":status", "200"), NV("content-type", "application/grpc")};
  nghttp2_data_provider p = {.source.ptr = st, .read_callback = body};
  nghttp2_submit_response(s, f->hd.stream_id, h, 2, &p);
  return 0;
}
static int on_close(nghttp2_session *s, int32_t id, uint32_t e, void *u) {
  Stream *st = nghttp2_session_get_stream_user_data(s, id);
  if (st) { free(st->b); free(st); }
  return 0;
}
static void *grpc_conn(void *arg) { /* h2c: read, feed nghttp2, write what it has, again */
  int fd = (int)(intptr_t)arg; nghttp2_session_callbacks *cb; nghttp2_session *s;
  nghttp2_session_callbacks_new(&cb);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_chunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
  nghttp2_session_server_new(&s, cb, NULL);
  nghttp2_settings_entry iv = {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1000};
  nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, &iv, 1);
  char *in = malloc(65536), *out = malloc(BUF);
  for (ssize_t k;;) {
    size_t on = 0; const uint8_t *d;
    while ((k = nghttp2_session_mem_send(s, &d)) > 0) {
      if (on + k > BUF && !(write_all(fd, out, on) && !(on = 0))) goto done;
      if (k > BUF) { if (!write_all(fd, d, k)) goto done; continue; }
      memcpy(out + on, d, k); on += k;
    }
    if (k < 0 || (on && !write_all(fd, out, on))) break;
    if (!nghttp2_session_want_read(s) && !nghttp2_session_want_write(s)) break;
    if ((k = read(fd, in, 65536)) <= 0 || nghttp2_session_mem_recv(s, (uint8_t *)in, k) < 0)
      break;
  }
done:
  nghttp2_session_del(s); nghttp2_session_callbacks_del(cb); free(in); free(out); close(fd);
  return NULL;
}
static double now(void) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9;
}
static void *ws_client(void *arg) { /* masked message out, its echo in and compared, again */
  long long msgs = 0, errors = 1; int one = 1; struct timeval tv = {5, 0}; double worst = 0;
  struct sockaddr_in a = {AF_INET, htons(port), {htonl(INADDR_LOOPBACK)}};
  Rd r = {socket(AF_INET, SOCK_STREAM, 0), malloc(BUF), 0, 0};
  unsigned char nonce[16], *frm = malloc(msg_bytes + 14), *pay = malloc(msg_bytes);
  char key[32], acc[64], req[512]; size_t kn, end;
  setsockopt(r.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(r.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect(r.fd, (struct sockaddr *)&a, sizeof a)) goto out;
  RAND_bytes(nonce, 16); EVP_EncodeBlock((unsigned char *)key, nonce, 16);
  int n = snprintf(req, sizeof req, "GET /ws HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: "
                   "websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                   "Sec-WebSocket-Version: 13\r\n\r\n", port, key);
  if (!write_all(r.fd, req, n) || !(end = head_end(&r)) || memcmp(r.b, "HTTP/1.1 101", 12))
    goto out;
  const char *got = field(&r, end, "\nSec-WebSocket-Accept:", &kn);
  accept_of(key, strlen(key), acc);
  if (!got || kn != strlen(acc) || memcmp(got, acc, kn)) goto out;
  r.off = end; RAND_bytes(pay, msg_bytes);
  size_t hl = put_head(frm, 0x82, msg_bytes, 0x80) + 4; RAND_bytes(frm + hl - 4, 4);
  memcpy(frm + hl, pay, msg_bytes); unmask(frm + hl, msg_bytes, frm + hl - 4);
  for (double t0, t = now(), stop = t + seconds + (errors = 0); t < stop; msgs++) {
    uint64_t len; int masked; size_t fh; t0 = t;
    if (!write_all(r.fd, frm, hl + msg_bytes) || !(fh = frame(&r, &len, &masked)) || masked ||
        len != (uint64_t)msg_bytes || !need(&r, fh + len) || memcmp(r.b + r.off + fh, pay, len))
      { errors++; break; }
    r.off += fh + len; t = now(); worst = t - t0 > worst ? t - t0 : worst;
  }
  unsigned char bye[8] = {0x88, 0x82, 0, 0, 0, 0, 0x03, 0xe8}; /* close 1000, zero mask */
  write_all(r.fd, bye, 8);
out:
  close(r.fd); free(r.b); free(frm); free(pay);
  pthread_mutex_lock(&mu); total_msgs += msgs; total_errors += errors;
  if (min_msgs < 0 || msgs < min_msgs) min_msgs = msgs;
  if (msgs > max_msgs) max_msgs = msgs;
  if (worst > max_rtt) max_rtt = worst;
  pthread_mutex_unlock(&mu);
  return NULL;
}
int main(int argc, char **argv) {
  if (argc < 3) return 2;
  port = atoi(argv[2]);
  if (!strcmp(argv[1], "ws-client") && argc == 6) {
    int conns = atoi(argv[3]); pthread_t t[1024]; double t0 = now();
    msg_bytes = atoi(argv[4]); seconds = atof(argv[5]);
    for (int i = 0; i < conns && i < 1024; i++) pthread_create(&t[i], NULL, ws_client, NULL);
    for (int i = 0; i < conns && i < 1024; i++) pthread_join(t[i], NULL);
    printf("messages=%lld bytes=%lld errors=%lld seconds=%.3f conn_min=%lld conn_max=%lld "
           "max_ms=%.1f\n", total_msgs, total_msgs * msg_bytes, total_errors, now() - t0,
           min_msgs, max_msgs, max_rtt * 1e3);
    return 0;
  }
  void *(*fn)(void *) = !strcmp(argv[1], "grpc") ? grpc_conn : ws_conn;
  int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  struct sockaddr_in a = {AF_INET, htons(port), {htonl(INADDR_LOOPBACK)}};
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 1024)) return perror("listen"), 1;
  for (pthread_t t;;) {
    int fd = accept(ls, NULL, NULL);
    if (fd < 0) continue;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    pthread_create(&t, NULL, fn, (void *)(intptr_t)fd); pthread_detach(t);
  }
}
"""

if __name__ == "__main__":
    main()
