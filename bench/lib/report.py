"""The markdown report: medians per server and workload, ratios, every round.

Each workload kind has its own table (TABLES): throughput (req/s, CPU µs/req, p50/p99), bytes
(MB/s, CPU µs/MB), rate (p50/p99/p99.9 at a fixed rate), tls-new and tls-conns (conn/s, CPU
µs/conn), idle (KiB of RSS per idle connection), h3 (req/s, MB/s, CPU µs/req, p99, RSS). Where
the servers are proxies, a column says which protocol each one speaks to its origin, and the
ratio columns divide by the reference or, in the proxy suite, by the best peer speaking the
same upstream protocol. The target lines are lib/targets.py's; the plot lib/plot.py's.
"""
import statistics

from . import profile

STRING_EXTRAS = ("tls_protocol", "tls_cipher", "alpn")


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _fmt(value, digits=1, thousands=False):
    if value is None:
        return "–"
    if thousands:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


def _row(cells):
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _ratio(a, b):
    return a / b if a is not None and b else None


def _metric(m, key):
    """One figure of one measurement, by the key the summaries use."""
    c = m.client
    direct = {"rps": c.rps, "cpu_us": m.cpu_us_per_request, "p50": c.p50_ms, "p99": c.p99_ms,
              "p999": c.p999_ms, "rss_mib": m.peak_rss_kib / 1024, "count": c.requests,
              "srv_cpu": m.server_cpu_pct, "cli_cpu": m.client_cpu_pct,
              "oth_cpu": m.other_cpu_pct}
    if key in direct:
        return direct[key]
    return m.extra.get(key)


def summarize(measurements, server, workload):
    """Medians over the rounds of one server under one workload (None if it never ran)."""
    ms = [m for m in measurements if m.server == server and m.workload == workload]
    if not ms:
        return None
    s = {"rounds": len(ms), "errors": sum(m.client.errors for m in ms),
         "respawned": sum(m.respawned for m in ms),
         "requests": sum(m.client.requests for m in ms)}
    keys = {"rps", "cpu_us", "p50", "p99", "p999", "rss_mib", "count", "srv_cpu", "cli_cpu",
            "oth_cpu"}
    for m in ms:
        keys.update(k for k, v in m.extra.items() if isinstance(v, (int, float)))
    for k in keys:
        s[k] = _median([_metric(m, k) for m in ms])
    for k in STRING_EXTRAS:
        s[k] = next((m.extra[k] for m in ms if m.extra.get(k)), None)
    return s


# Cells: functions (summary, reference summary) -> text.
def _num(key, digits=1, thousands=False):
    return lambda s, r: _fmt(s.get(key), digits, thousands)


def _ratio_cell(key):
    return lambda s, r: _fmt(_ratio(s.get(key), r and r.get(key)), 2)


def _errors_cell(s, r):
    return str(s["errors"]) + (f" ({s['respawned']} workers gone)" if s["respawned"] else "")


def _cpu_cell(s, r):
    return " / ".join(_fmt(s.get(k), 0) for k in ("srv_cpu", "cli_cpu", "oth_cpu"))


def _tls_cell(s, r):
    return " ".join(x for x in (s.get("tls_protocol"), s.get("alpn")) if x) or "–"


CPU_COLUMN = ("CPU % server / client / others", _cpu_cell)
TABLES = {
    "throughput": [
        ("req/s", _num("rps", thousands=True)), ("CPU µs/req", _num("cpu_us")),
        ("p50 ms", _num("p50", 2)), ("p99 ms", _num("p99", 2)),
        ("peak RSS MiB", _num("rss_mib")), ("errors", _errors_cell), CPU_COLUMN,
        ("req/s ÷ {ref}", _ratio_cell("rps")), ("CPU/req ÷ {ref}", _ratio_cell("cpu_us"))],
    "bytes": [
        ("MB/s", _num("mb_s", 0)), ("CPU µs/MB", _num("cpu_us_per_mb", 0)),
        ("req/s", _num("rps", thousands=True)), ("peak RSS MiB", _num("rss_mib")),
        ("errors", _errors_cell), CPU_COLUMN,
        ("MB/s ÷ {ref}", _ratio_cell("mb_s")), ("CPU/MB ÷ {ref}", _ratio_cell("cpu_us_per_mb"))],
    "rate": [
        ("offered req/s", _num("offered_rps", thousands=True)),
        ("req/s", _num("rps", thousands=True)), ("p50 ms", _num("p50", 2)),
        ("p99 ms", _num("p99", 2)), ("p99.9 ms", _num("p999", 2)), ("max ms", _num("max_ms", 1)),
        ("CPU µs/req", _num("cpu_us")), ("errors", _errors_cell), CPU_COLUMN,
        ("p99 ÷ {ref}", _ratio_cell("p99")), ("CPU/req ÷ {ref}", _ratio_cell("cpu_us"))],
    "tls-new": [
        ("offered conn/s", _num("offered_cps", 0)), ("conn/s", _num("rps", 0)),
        ("CPU µs/conn", _num("cpu_us")), ("connect ms (mean)", _num("connect_ms", 2)),
        ("1st byte ms (mean)", _num("ttfb_ms", 2)), ("peak RSS MiB", _num("rss_mib")),
        ("errors", _errors_cell), ("TLS", _tls_cell), CPU_COLUMN,
        ("CPU/conn ÷ {ref}", _ratio_cell("cpu_us"))],
    "tls-conns": [
        ("conn/s", _num("rps", 0)), ("CPU µs/conn", _num("cpu_us")),
        ("resumed %", _num("resumed_pct", 0)), ("bytes/conn", _num("bytes_per_conn", 0)),
        ("peak RSS MiB", _num("rss_mib")), ("errors", _errors_cell), CPU_COLUMN,
        ("conn/s ÷ {ref}", _ratio_cell("rps")), ("CPU/conn ÷ {ref}", _ratio_cell("cpu_us"))],
    "idle": [
        ("connections", _num("count", thousands=True)),
        ("RSS before MiB", _num("rss_before_mib")), ("RSS after MiB", _num("rss_after_mib")),
        ("KiB/conn", _num("kib_per_conn", 1)), ("CPU µs/conn (setup)", _num("cpu_us")),
        ("setup s", _num("setup_s", 2)), ("errors", _errors_cell),
        ("KiB/conn ÷ {ref}", _ratio_cell("kib_per_conn"))],
    # HTTP/3 (portico-h3load): small responses and 1 MiB ones alike, so MB/s beside req/s.
    "h3": [
        ("req/s", _num("rps", thousands=True)), ("MB/s", _num("mb_s", 1)),
        ("CPU µs/req", _num("cpu_us")), ("p50 ms", _num("p50", 2)), ("p99 ms", _num("p99", 2)),
        ("peak RSS MiB", _num("rss_mib")), ("errors", _errors_cell), CPU_COLUMN,
        ("req/s ÷ {ref}", _ratio_cell("rps")), ("CPU/req ÷ {ref}", _ratio_cell("cpu_us")),
        ("p99 ÷ {ref}", _ratio_cell("p99")), ("RSS ÷ {ref}", _ratio_cell("rss_mib"))],
}

# Figures where higher is better (for "best peer"); every other ratio figure: lower is better.
HIGHER_IS_BETTER = {"rps", "mb_s"}
RATIO_KEYS = ("rps", "cpu_us", "mb_s", "cpu_us_per_mb", "p99", "kib_per_conn")

# The figure that says "better" for each kind (lower is better), for the target lines.
PRIMARY = {"throughput": ("cpu_us", "CPU/req"), "bytes": ("cpu_us_per_mb", "CPU/MB"),
           "rate": ("p99", "p99"), "tls-new": ("cpu_us", "CPU/conn"),
           "tls-conns": ("cpu_us", "CPU/conn"), "idle": ("kib_per_conn", "KiB/conn"),
           "h3": ("cpu_us", "CPU/req")}


def _crash_note(failures, server, workload):
    lost = [f for f in failures if f.server == server and f.workload == workload]
    if not lost:
        return ""
    first = lost[0].message.splitlines()
    reason = next((line for line in first if "exited with" in line), first[0] if first else "")
    return f"{len(lost)} round(s) lost ({reason.split(': ', 1)[-1].rstrip(':')[:60]})"


def upstream_of(spec):
    """The protocol a proxy row speaks to its origin ("h1", "h2c"), None for other servers."""
    return getattr(spec, "upstream", None)


def is_portico(name):
    return name.startswith("portico")


def best_peer(measurements, suite, workload, key, upstream, rnd=None):
    """(name, value) of the best peer (not Portico nor a variant of it) on key among the rows
    with this upstream protocol (any, for None): medians, or round rnd's own figures."""
    names = [s.name for s in suite.servers if not is_portico(s.name) and s.peer
             and (upstream is None or upstream_of(s) == upstream)]
    values = []
    for name in names:
        if rnd is None:
            s = summarize(measurements, name, workload)
            v = s and s.get(key)
        else:
            m = next((m for m in measurements if m.server == name and m.workload == workload
                      and m.round == rnd), None)
            v = m and _metric(m, key)
        if v:
            values.append((v, name))
    if not values:
        return None, None
    v, name = (max if key in HIGHER_IS_BETTER else min)(values)
    return name, v


def _references(suite, workload, measurements):
    """Per server: the summary-like dict its ratio columns divide by, and that column's name."""
    if not suite.ratio_to_best_peer:
        ref = summarize(measurements, suite.reference, workload.key)
        return (lambda spec: ref), suite.reference
    cache = {}

    def ref(spec):
        up = upstream_of(spec)
        if up not in cache:
            cache[up] = {k: best_peer(measurements, suite, workload.key, k, up)[1]
                         for k in RATIO_KEYS}
        return cache[up]
    return ref, "best peer (same upstream)"


def floor_cell(floor):
    """"CPU/req ÷ floor": a row's CPU per request over the floor row's, on this workload."""
    return lambda s, r: _fmt(_ratio(s.get("cpu_us"), floor and floor.get("cpu_us")), 2)


def workload_table(suite, workload, measurements, failures=()):
    columns = TABLES[workload.kind]
    floor = next((s for s in suite.servers if s.floor), None)
    if floor is not None and workload.kind in ("throughput", "rate"):
        columns = columns + [("CPU/req ÷ floor", floor_cell(
            summarize(measurements, floor.name, workload.key)))]
    ref_of, ref_name = _references(suite, workload, measurements)
    with_upstream = any(upstream_of(s) for s in suite.servers)
    lead = ["server"] + (["upstream"] if with_upstream else [])
    headers = lead + [h.format(ref=ref_name) for h, _ in columns]
    lines = [f"### {workload.title}", "", _row(headers),
             _row("---:" if i >= len(lead) else "---" for i in range(len(headers)))]
    for spec in suite.servers:
        first = [spec.name] + ([upstream_of(spec) or "–"] if with_upstream else [])
        blank = [""] * (len(headers) - len(first) - 1)
        if not spec.supports(workload):
            lines.append(_row(first + [f"n/a: {spec.why_not(workload)}"] + blank))
            continue
        s = summarize(measurements, spec.name, workload.key)
        crashed = _crash_note(failures, spec.name, workload.key)
        if s is None:
            lines.append(_row(first + [f"CRASHED: {crashed}" if crashed else "not run"] + blank))
            continue
        cells = [cell(s, ref_of(spec)) for _, cell in columns]
        if crashed:
            at = next((i for i, (h, _) in enumerate(columns) if h == "errors"), len(cells) - 1)
            cells[at] += f"; CRASHED: {crashed}"
        lines.append(_row(first + cells))
    lines.append("")
    return lines


def describe(m, kind):
    """One log line for a finished measurement."""
    c = m.client
    cpu = (f"server CPU {m.server_cpu_pct or 0:.0f}%, client CPU {m.client_cpu_pct or 0:.0f}%, "
           f"others {m.other_cpu_pct or 0:.0f}%")
    per = f"{m.cpu_us_per_request or 0:.1f} us CPU"
    if kind == "idle":
        return (f"{c.requests} connections held, {m.extra.get('kib_per_conn') or 0:.1f} KiB/conn "
                f"({m.extra['rss_before_mib']:.1f} -> {m.extra['rss_after_mib']:.1f} MiB), "
                f"{per}/conn, setup {c.seconds:.2f} s, {c.errors} errors")
    if kind in ("tls-new", "tls-conns"):
        extra = (f", resumed {m.extra.get('resumed_pct') or 0:.0f}%" if kind == "tls-conns"
                 else f", {m.extra.get('tls_protocol', '?')} {m.extra.get('alpn', '')}")
        return f"{c.rps:,.0f} conn/s, {per}/conn, {c.requests} connections, {c.errors} errors{extra}, {cpu}"
    line = f"{c.rps:,.0f} req/s, {per}/req, {c.requests} requests, {c.errors} errors, {cpu}"
    if kind == "bytes":
        line += f", {m.extra.get('mb_s') or 0:,.0f} MB/s, {m.extra.get('cpu_us_per_mb') or 0:.0f} us CPU/MB"
    if kind == "rate":
        line += f", p99 {c.p99_ms or 0:.2f} ms, p99.9 {c.p999_ms or 0:.2f} ms"
    if kind == "h3":
        line += f", {m.extra.get('mb_s') or 0:,.1f} MB/s, p99 {c.p99_ms or 0:.2f} ms"
    return line


def _paired_ratios(measurements, subject, reference, workload, key="rps"):
    """subject's figure over reference's, one per round."""
    out = []
    for a in measurements:
        if a.server != subject or a.workload != workload:
            continue
        b = next((m for m in measurements if m.server == reference and
                  m.workload == workload and m.round == a.round), None)
        if b:
            out.append(_ratio(_metric(a, key), _metric(b, key)))
    return out


def verdict(suite, measurements):
    """The goal line, checked per workload where subject and reference both ran."""
    lines = []
    tol = suite.goal_tolerance
    for workload in suite.workloads:
        if workload.kind != "throughput":
            continue
        a = summarize(measurements, suite.subject, workload.key)
        b = summarize(measurements, suite.reference, workload.key)
        if not a or not b:
            continue
        rps = _ratio(a["rps"], b["rps"])
        cpu = _ratio(a["cpu_us"], b["cpu_us"])
        ok_rps = rps is not None and rps >= 1 - tol
        ok_cpu = cpu is not None and cpu <= 1 + tol
        peers = [summarize(measurements, s.name, workload.key) for s in suite.servers
                 if s.name != suite.subject]
        best_cpu = min((p["cpu_us"] for p in peers if p and p["cpu_us"]), default=None)
        rps_r = _paired_ratios(measurements, suite.subject, suite.reference, workload.key, "rps")
        cpu_r = _paired_ratios(measurements, suite.subject, suite.reference, workload.key,
                               "cpu_us")
        lines.append(
            f"- {workload.key}: req/s {_fmt(rps, 2)}× {suite.reference} "
            f"({'ok' if ok_rps else 'NOT within'} {tol:.0%}), CPU/req {_fmt(cpu, 2)}× "
            f"({'ok' if ok_cpu else 'NOT within'} {tol:.0%}); CPU/req vs best peer "
            f"{_fmt(_ratio(a['cpu_us'], best_cpu), 2)}×. Per round (same round, minutes "
            f"apart): req/s {', '.join(_fmt(r, 2) for r in rps_r)}; CPU/req "
            f"{', '.join(_fmt(c, 2) for c in cpu_r)}")
    return lines


def _round_note(m, kind):
    e = m.extra
    if kind == "bytes":
        return f"{_fmt(e.get('mb_s'), 0)} MB/s, {_fmt(e.get('cpu_us_per_mb'), 0)} µs/MB"
    if kind == "rate":
        return f"offered {_fmt(e.get('offered_rps'), thousands=True)}/s, p99.9 {_fmt(m.client.p999_ms, 2)} ms"
    if kind == "tls-new":
        return f"connect {_fmt(e.get('connect_ms'), 2)} ms, {e.get('tls_protocol', '?')}"
    if kind == "tls-conns":
        return f"resumed {_fmt(e.get('resumed_pct'), 0)}%"
    if kind == "h3":
        return f"{_fmt(e.get('mb_s'))} MB/s, max {_fmt(e.get('max_ms'), 1)} ms"
    if kind == "idle":
        return (f"{_fmt(e.get('kib_per_conn'))} KiB/conn ({_fmt(e.get('rss_before_mib'))} → "
                f"{_fmt(e.get('rss_after_mib'))} MiB), still open {e.get('still_open')}")
    return ""


def rounds_table(suite, measurements):
    kinds = {w.key: w.kind for w in suite.workloads}
    cols = ("round", "workload", "server", "requests (conns)", "req/s (conn/s)",
            "CPU µs/req (/conn)", "p50 ms", "p99 ms", "peak RSS MiB", "errors",
            "CPU % server / client / others", "notes")
    lines = [_row(cols), _row("---:" if c not in ("workload", "server", "notes") else "---"
                              for c in cols)]
    for m in measurements:
        detail = ", ".join(f"{k} {v}" for k, v in m.client.error_detail.items() if v)
        lines.append(_row([
            m.round, m.workload, m.server, m.client.requests, _fmt(m.client.rps, thousands=True),
            _fmt(m.cpu_us_per_request, 1), _fmt(m.client.p50_ms, 2), _fmt(m.client.p99_ms, 2),
            _fmt(m.peak_rss_kib / 1024, 1),
            f"{m.client.errors}" + (f" ({detail})" if detail else "") +
            (f", {m.respawned} workers gone" if m.respawned else ""),
            "–" if kinds.get(m.workload) == "idle" else
            " / ".join(_fmt(v, 0) for v in (m.server_cpu_pct, m.client_cpu_pct,
                                             m.other_cpu_pct)),
            _round_note(m, kinds.get(m.workload))]))
    return lines


def profile_tables(suite, measurements):
    """bench/run --profile: per workload, each server's CPU per request by where perf found it
    and its system calls per request (medians over the rounds)."""
    profiled = [w for w in suite.workloads
                if any(m.workload == w.key and m.extra.get("prof_samples") for m in measurements)]
    if not profiled:
        return []
    out = ["## Where the CPU goes (--profile)", "",
           "perf attached to each server while the client ran: CPU µs per request by the object "
           "perf's cpu-clock samples fell in (their share of the samples times the window's CPU "
           "µs per request), and system calls and context switches per request counted on "
           "tracepoints. Attached, perf costs every server a few percent: these CPU figures "
           "are not the tables' above.", ""]
    groups = [title for _, title in profile.GROUPS]
    headers = (["server", "CPU µs/req"] + groups +
               ["syscalls/req", "reads", "writes", "epoll", "context switches/req"])
    for w in profiled:
        out += [f"### {w.title}", "", _row(headers),
                _row(["---"] + ["---:"] * (len(headers) - 1))]
        for spec in suite.servers:
            s = summarize(measurements, spec.name, w.key)
            if not s or s.get("prof_samples") is None:
                continue
            out.append(_row([spec.name, _fmt(s.get("cpu_us"), 2)] +
                            [_fmt(s.get(key), 2) for key, _ in profile.GROUPS] +
                            [_fmt(s.get(k), 2) for k in ("prof_syscalls", "prof_reads",
                                                         "prof_writes", "prof_epoll",
                                                         "prof_switches")]))
        out.append("")
    return out


def render(suite, measurements, ctx, failures=()):
    """ctx: machine facts, versions, the command line, load and pinning descriptions.
    failures: measurements lost to a server that died (runner.Failure)."""
    out = [f"# Portico bench: {suite.name} suite", "",
           suite.description + ".", "",
           f"- date: {ctx['machine']['date']}",
           f"- machine: {ctx['machine']['cpu']}, {ctx['machine']['memory']}, "
           f"kernel {ctx['machine']['kernel']}",
           f"- load average before / after: {ctx['load_before']} / {ctx['load_after']}",
           f"- command: `{ctx['command']}`",
           f"- pinning: {ctx['pinning']}",
           f"- load: {ctx['load']}",
           f"- rounds: {ctx['rounds']}, servers alternating within each round; figures are "
           "medians over the rounds (errors: the sum)",
           f"- wall time of this suite: {ctx['wall']}",
           "", "## Versions", ""]
    for name, version in ctx["versions"].items():
        out.append(f"- {name}: {version}")
    out += ["", "## Servers", ""]
    for spec in suite.servers:
        if spec.unavailable():
            out.append(f"- {spec.name}: n/a, {spec.unavailable()}")
        else:
            out.append(f"- {spec.name}: {spec.describe()}")
    for spec in suite.unmeasured:
        out.append(f"- {spec.name} (shared, not measured): {spec.describe()}")
    out += ["", "## Results", ""]
    for workload in suite.workloads:
        out += workload_table(suite, workload, measurements, failures)
    if suite.goal:
        out += [f"Goal: {suite.goal}.", ""] + verdict(suite, measurements) + [""]
    if suite.targets:
        out += suite.targets(suite, measurements) + [""]
    out += profile_tables(suite, measurements)
    if ctx.get("plot"):
        out += [f"![{suite.name} suite: server CPU µs per request, per workload]"
                f"({ctx['plot']})", "",
                f"The plot ({ctx['plot']}, next to this file): the CPU µs per request column "
                "of every table (per connection for TLS and idle, per 1 MiB response for bytes), "
                "median per server, log scale. Regenerate it with `bench/plot REPORT.md`.", ""]
    out += ["Columns: req/s (conn/s) as the client counted it; CPU µs/req (/conn, /MB) = "
            "utime+stime of all the server's processes over the load window / requests "
            "(connections, megabytes) completed; p50/p99/p99.9 from the client (wrk --latency; "
            "h2load --log-file); peak RSS = sum of VmHWM over the server's processes; CPU % = "
            "CPU time / wall time of the window for the server, the client, and all other "
            "processes of the machine together (100 = one core busy; a client near 100 % means "
            "the client, not the server, set the pace; others well above 0 means the round "
            "shared the machine). Ratios within one run count; absolute figures drift on a "
            "shared machine (see bench/README.md).", ""]
    for note in suite.notes:
        out += [f"Note: {note}", ""]
    if failures:
        out += ["## Servers that died (measurements lost)", ""]
        for f in failures:
            out += [f"Round {f.round}, {f.workload} on {f.server}:", "", "```",
                    f.message.strip(), "```", ""]
    out += ["## Every round", ""] + rounds_table(suite, measurements) + [""]
    return "\n".join(out)
