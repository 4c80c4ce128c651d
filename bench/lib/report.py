"""The markdown report: medians per server and workload, ratios, the verdict, every round."""
import statistics

COLUMNS = ("server", "req/s", "CPU µs/req", "p50 ms", "p99 ms", "peak RSS MiB", "errors",
           "CPU % server / client / others", "req/s ÷ {ref}", "CPU/req ÷ {ref}")


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _fmt(value, digits=1, thousands=False):
    if value is None:
        return "–"
    if thousands:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


def _cpu_cell(server, client, others):
    return " / ".join(_fmt(v, 0) for v in (server, client, others))


def _row(cells):
    return "| " + " | ".join(str(c) for c in cells) + " |"


def summarize(measurements, server, workload):
    """Medians over the rounds of one server under one workload (None if it never ran)."""
    ms = [m for m in measurements if m.server == server and m.workload == workload]
    if not ms:
        return None
    return {
        "rounds": len(ms),
        "rps": _median([m.client.rps for m in ms]),
        "cpu_us": _median([m.cpu_us_per_request for m in ms]),
        "p50": _median([m.client.p50_ms for m in ms]),
        "p99": _median([m.client.p99_ms for m in ms]),
        "rss_mib": _median([m.peak_rss_kib / 1024 for m in ms]),
        "errors": sum(m.client.errors for m in ms),
        "srv_cpu": _median([m.server_cpu_pct for m in ms]),
        "cli_cpu": _median([m.client_cpu_pct for m in ms]),
        "oth_cpu": _median([m.other_cpu_pct for m in ms]),
        "respawned": sum(m.respawned for m in ms),
        "requests": sum(m.client.requests for m in ms),
    }


def _ratio(a, b):
    return a / b if a is not None and b else None


def workload_table(suite, workload, measurements):
    ref = suite.reference
    lines = [f"### {workload.title}", "",
             _row(c.format(ref=ref) for c in COLUMNS),
             _row("---:" if i else "---" for i in range(len(COLUMNS)))]
    ref_sum = summarize(measurements, ref, workload.key)
    for spec in suite.servers:
        if not spec.supports(workload):
            lines.append(_row([spec.name, f"n/a: {spec.why_not(workload)}"] +
                              [""] * (len(COLUMNS) - 2)))
            continue
        s = summarize(measurements, spec.name, workload.key)
        if s is None:
            lines.append(_row([spec.name, "not run"] + [""] * (len(COLUMNS) - 2)))
            continue
        errors = str(s["errors"]) + (f" ({s['respawned']} workers gone)" if s["respawned"] else "")
        lines.append(_row([
            spec.name, _fmt(s["rps"], thousands=True), _fmt(s["cpu_us"], 1),
            _fmt(s["p50"], 2), _fmt(s["p99"], 2), _fmt(s["rss_mib"], 1), errors,
            _cpu_cell(s["srv_cpu"], s["cli_cpu"], s["oth_cpu"]),
            _fmt(_ratio(s["rps"], ref_sum and ref_sum["rps"]), 2),
            _fmt(_ratio(s["cpu_us"], ref_sum and ref_sum["cpu_us"]), 2),
        ]))
    lines.append("")
    return lines


def _paired_ratios(measurements, subject, reference, workload):
    """(req/s ratio, CPU/req ratio) of subject over reference, one pair per round."""
    pairs = []
    for a in measurements:
        if a.server != subject or a.workload != workload:
            continue
        b = next((m for m in measurements if m.server == reference and
                  m.workload == workload and m.round == a.round), None)
        if b:
            pairs.append((_ratio(a.client.rps, b.client.rps),
                          _ratio(a.cpu_us_per_request, b.cpu_us_per_request)))
    return pairs


def verdict(suite, measurements):
    """The goal line, checked per workload where subject and reference both ran."""
    lines = []
    tol = suite.goal_tolerance
    for workload in suite.workloads:
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
        paired = _paired_ratios(measurements, suite.subject, suite.reference, workload.key)
        lines.append(
            f"- {workload.key}: req/s {_fmt(rps, 2)}× {suite.reference} "
            f"({'ok' if ok_rps else 'NOT within'} {tol:.0%}), CPU/req {_fmt(cpu, 2)}× "
            f"({'ok' if ok_cpu else 'NOT within'} {tol:.0%}); CPU/req vs best peer "
            f"{_fmt(_ratio(a['cpu_us'], best_cpu), 2)}×. Per round (same round, minutes "
            f"apart): req/s {', '.join(_fmt(r, 2) for r, _ in paired)}; CPU/req "
            f"{', '.join(_fmt(c, 2) for _, c in paired)}")
    return lines


def rounds_table(suite, measurements):
    cols = ("round", "workload", "server", "requests", "req/s", "CPU µs/req", "p50 ms", "p99 ms",
            "peak RSS MiB", "errors", "CPU % server / client / others")
    lines = [_row(cols), _row("---:" if c not in ("workload", "server") else "---"
                              for c in cols)]
    for m in measurements:
        detail = ", ".join(f"{k} {v}" for k, v in m.client.error_detail.items() if v)
        lines.append(_row([
            m.round, m.workload, m.server, m.client.requests, _fmt(m.client.rps, thousands=True),
            _fmt(m.cpu_us_per_request, 1), _fmt(m.client.p50_ms, 2), _fmt(m.client.p99_ms, 2),
            _fmt(m.peak_rss_kib / 1024, 1),
            f"{m.client.errors}" + (f" ({detail})" if detail else "") +
            (f", {m.respawned} workers gone" if m.respawned else ""),
            _cpu_cell(m.server_cpu_pct, m.client_cpu_pct, m.other_cpu_pct)]))
    return lines


def render(suite, measurements, ctx):
    """ctx: machine facts, versions, the command line, load and pinning descriptions."""
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
        out.append(f"- {spec.name} (origin, not measured): {spec.describe()}")
    out += ["", "## Results", ""]
    for workload in suite.workloads:
        out += workload_table(suite, workload, measurements)
    if suite.goal:
        out += [f"Goal: {suite.goal}.", ""] + verdict(suite, measurements) + [""]
    out += ["Columns: req/s as the client counted it; CPU µs/req = utime+stime of all the "
            "server's processes over the load window / requests completed; p50/p99 from the "
            "client (wrk --latency; h2load --log-file); peak RSS = sum of VmHWM over the "
            "server's processes; CPU % = CPU time / wall time of the window for the server, "
            "the client, and all other processes of the machine together (100 = one core "
            "busy; a client near 100 % means the client, not the server, set the pace; "
            "others well above 0 means the round shared the machine). Ratios within one run count; absolute figures drift on a shared "
            "machine (see bench/README.md).", ""]
    for note in suite.notes:
        out += [f"Note: {note}", ""]
    out += ["## Every round", ""] + rounds_table(suite, measurements) + [""]
    return "\n".join(out)
