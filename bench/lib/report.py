"""The markdown report: medians per server and workload, ratios, targets, every round.

Each workload kind has its own table (TABLES): throughput (req/s, CPU µs/req, p50/p99), bytes
(MB/s, CPU µs/MB), rate (p50/p99/p99.9 at a fixed rate), tls-new and tls-conns (conn/s, CPU
µs/conn), idle (KiB of RSS per idle connection).
"""
import statistics

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
}

# The figure that says "better" for each kind (lower is better), for the target lines.
PRIMARY = {"throughput": ("cpu_us", "CPU/req"), "bytes": ("cpu_us_per_mb", "CPU/MB"),
           "rate": ("p99", "p99"), "tls-new": ("cpu_us", "CPU/conn"),
           "tls-conns": ("cpu_us", "CPU/conn"), "idle": ("kib_per_conn", "KiB/conn")}


def _crash_note(failures, server, workload):
    lost = [f for f in failures if f.server == server and f.workload == workload]
    if not lost:
        return ""
    first = lost[0].message.splitlines()
    reason = next((line for line in first if "exited with" in line), first[0] if first else "")
    return f"{len(lost)} round(s) lost ({reason.split(': ', 1)[-1].rstrip(':')[:60]})"


def workload_table(suite, workload, measurements, failures=()):
    ref = suite.reference
    columns = TABLES[workload.kind]
    headers = ["server"] + [h.format(ref=ref) for h, _ in columns]
    lines = [f"### {workload.title}", "", _row(headers),
             _row("---:" if i else "---" for i in range(len(headers)))]
    ref_sum = summarize(measurements, ref, workload.key)
    for spec in suite.servers:
        if not spec.supports(workload):
            lines.append(_row([spec.name, f"n/a: {spec.why_not(workload)}"] +
                              [""] * (len(headers) - 2)))
            continue
        s = summarize(measurements, spec.name, workload.key)
        crashed = _crash_note(failures, spec.name, workload.key)
        if s is None:
            lines.append(_row([spec.name, f"CRASHED: {crashed}" if crashed else "not run"] +
                              [""] * (len(headers) - 2)))
            continue
        cells = [cell(s, ref_sum) for _, cell in columns]
        if crashed:
            at = next((i for i, (h, _) in enumerate(columns) if h == "errors"), len(cells) - 1)
            cells[at] += f"; CRASHED: {crashed}"
        lines.append(_row([spec.name] + cells))
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


def _peers(suite):
    return [s.name for s in suite.servers if not s.name.startswith("portico")]


def _best(measurements, names, workload, key, higher=False, rnd=None):
    """(name, value) of the best of names on key: medians, or round rnd's own figures."""
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
    v, name = (max if higher else min)(values)
    return name, v


def _vs_best(measurements, suite, subject, workload, key, higher=False):
    """(median ratio, best peer's name, per-round ratios against each round's best peer)."""
    s = summarize(measurements, subject, workload)
    if not s or s.get(key) is None:
        return None, None, []
    peers = _peers(suite)
    name, best = _best(measurements, peers, workload, key, higher)
    per_round = []
    for m in measurements:
        if m.server == subject and m.workload == workload:
            _, b = _best(measurements, peers, workload, key, higher, rnd=m.round)
            per_round.append(_ratio(_metric(m, key), b))
    return _ratio(s[key], best), name, per_round


def _rounds(values):
    return ", ".join(_fmt(v, 2) for v in values) or "–"


def _target(ratio, limit, higher):
    if ratio is None:
        return "–"
    met = ratio >= limit if higher else ratio <= limit
    return "ok" if met else "NOT MET"


def proxy_targets(suite, measurements):
    """The bench issue's targets for Portico against the best peer of the same run."""
    subject = suite.subject
    keys = {w.key: w for w in suite.workloads}
    lines = ["Targets (bench issue), Portico against the best peer of this run on the medians; "
             "per round: against that round's best peer.", ""]
    for key in ("h1-hello", "h2c-hello-m1", "h2c-hello-m10", "h2c-hello-m100"):
        if key not in keys:
            continue
        cpu, cpu_peer, cpu_rounds = _vs_best(measurements, suite, subject, key, "cpu_us")
        rps, rps_peer, rps_rounds = _vs_best(measurements, suite, subject, key, "rps", True)
        if cpu is None:
            continue
        lines.append(
            f"- {key}: CPU/req {_fmt(cpu, 2)}× best peer ({cpu_peer}), target ≤ 0.70: "
            f"{_target(cpu, 0.70, False)}; req/s {_fmt(rps, 2)}× best peer ({rps_peer}), "
            f"target ≥ 1.00: {_target(rps, 1.0, True)}. Per round: CPU/req "
            f"{_rounds(cpu_rounds)}; req/s {_rounds(rps_rounds)}")
    for key in ("h2c-rate", "h1-rate"):
        if key not in keys:
            continue
        p99, peer, rounds = _vs_best(measurements, suite, subject, key, "p99")
        if p99 is not None:
            lines.append(f"- {key}: p99 {_fmt(p99, 2)}× best peer ({peer}), target ≤ 1.00: "
                         f"{_target(p99, 1.0, False)}. Per round: {_rounds(rounds)}")
    if "idle-h2c" in keys:
        a = summarize(measurements, subject, "idle-h2c")
        b = summarize(measurements, "nginx", "idle-h2c")
        if a and b:
            r = _ratio(a.get("kib_per_conn"), b.get("kib_per_conn"))
            lines.append(
                f"- idle-h2c: {_fmt(a.get('kib_per_conn'))} KiB per idle h2 connection, "
                f"{_fmt(r, 2)}× nginx's {_fmt(b.get('kib_per_conn'))}, target ≤ 1.00: "
                f"{_target(r, 1.0, False)}. Per round: "
                f"{_rounds(_paired_ratios(measurements, subject, 'nginx', 'idle-h2c', 'kib_per_conn'))}")
    others = [w for w in suite.workloads if w.key not in (
        "h1-hello", "h2c-hello-m1", "h2c-hello-m10", "h2c-hello-m100", "h2c-rate", "h1-rate",
        "idle-h2c")]
    for w in others:
        key, label = PRIMARY[w.kind]
        r, peer, rounds = _vs_best(measurements, suite, subject, w.key, key)
        if r is not None:
            lines.append(f"- {w.key} (no target): {label} {_fmt(r, 2)}× best peer ({peer}). "
                         f"Per round: {_rounds(rounds)}")
    variant = f"{subject}-nometrics"
    pairs = []
    for w in suite.workloads:
        a = summarize(measurements, variant, w.key)
        b = summarize(measurements, subject, w.key)
        if a and b:
            pairs.append(
                f"{w.key} {_fmt(b.get('cpu_us'))} → {_fmt(a.get('cpu_us'))} µs "
                f"({_fmt(_ratio(a.get('cpu_us'), b.get('cpu_us')), 2)}×; per round "
                f"{_rounds(_paired_ratios(measurements, variant, subject, w.key, 'cpu_us'))})")
    if pairs:
        lines.append("- metrics on → off (CPU/req, same run): " + "; ".join(pairs))
    elif any(s.name == variant for s in suite.servers):
        spec = next(s for s in suite.servers if s.name == variant)
        why = spec.unavailable() or "not run"
        lines.append(f"- metrics on vs off: {variant} n/a ({why})")
    return lines


def stack_targets(suite, measurements):
    """portico-backend through Portico against starman through nginx (the bench issue: ≥ 5×)."""
    lines = [f"Target (bench issue): {suite.subject} ≥ 5× {suite.reference} on hello "
             "(requests/s).", ""]
    for w in suite.workloads:
        a = summarize(measurements, suite.subject, w.key)
        b = summarize(measurements, suite.reference, w.key)
        if not a or not b:
            continue
        rps = _ratio(a["rps"], b["rps"])
        cpu = _ratio(a["cpu_us"], b["cpu_us"])
        goal = (f", target ≥ 5: {_target(rps, 5.0, True)}" if w.app == "hello" else
                " (no target)")
        lines.append(
            f"- {w.key}: req/s {_fmt(rps, 2)}×{goal}; CPU/req {_fmt(cpu, 2)}×. Per round: "
            f"req/s {_rounds(_paired_ratios(measurements, suite.subject, suite.reference, w.key))}"
            f"; CPU/req "
            f"{_rounds(_paired_ratios(measurements, suite.subject, suite.reference, w.key, 'cpu_us'))}")
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
