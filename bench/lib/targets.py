"""The target lines under a suite's tables: Portico against its peers, like with like.

A proxy row is compared only with peers doing the same work: the same client protocol (the
workload's: h1, h2c or TLS), the same upstream protocol (the row's: h1 or h2c), the same origin
(the suite's one shared origin). "Best peer" is the best of those rows on the figure in
question, never a Portico variant; per round, the best peer of that round. Each line gives the
ratio of the medians, the peer, the per-round ratios and ok / NOT MET.
"""
from .report import (PRIMARY, _fmt, _metric, _paired_ratios, _ratio, best_peer, is_portico,
                     summarize, upstream_of)

# The bench issue's targets on the headline workloads: CPU/req ≤ limit × the best peer of the
# same (client, upstream) pair, and req/s ≥ the best peer's.
CPU_LIMITS = {"h1-hello": 0.70, "h2c-hello-m1": 1.00, "h2c-hello-m10": 0.70,
              "h2c-hello-m100": 1.00, "tls-h1-hello": 0.80, "tls-h2-hello-m10": 0.80}
RATE_WORKLOADS = ("h1-rate", "h2c-rate")  # p99 at a fixed rate ≤ the best peer's
RSS_REFERENCE = "nginx"  # peak RSS under load and KiB per idle connection ≤ nginx's
ARROW = "→"
# Per-round ratios further apart than this (largest over smallest) mean the host's other load
# moved between the servers' turns more than the servers differ: the line says so, since a
# median of such rounds decides nothing.
NOISY_SPREAD = 1.25


def _rounds(values):
    return ", ".join(_fmt(v, 2) for v in values) or "–"


def noisy_note(values):
    """A warning when the per-round ratios spread past NOISY_SPREAD, else "". From five rounds
    on, the highest and the lowest are left out first: one disturbed round moves no median."""
    vals = sorted(v for v in values if v)
    if len(vals) >= 5:
        vals = vals[1:-1]
    if len(vals) < 2 or max(vals) / min(vals) <= NOISY_SPREAD:
        return ""
    return (f". NOISY: the rounds spread {_fmt(vals[0], 2)}–{_fmt(vals[-1], 2)} "
            f"({_fmt(vals[-1] / vals[0], 2)}× apart, over {NOISY_SPREAD:.2f}×): this run "
            "cannot decide the target; rerun on a quieter host")


def _target(ratio, limit, higher):
    if ratio is None:
        return "–"
    met = ratio >= limit if higher else ratio <= limit
    return "ok" if met else "NOT MET"


def _vs_best(measurements, suite, subject, workload, key, upstream):
    """(median ratio, best peer's name, per-round ratios against each round's best peer)."""
    s = summarize(measurements, subject, workload)
    if not s or s.get(key) is None:
        return None, None, []
    name, best = best_peer(measurements, suite, workload, key, upstream)
    per_round = []
    for m in measurements:
        if m.server == subject and m.workload == workload:
            _, b = best_peer(measurements, suite, workload, key, upstream, rnd=m.round)
            per_round.append(_ratio(_metric(m, key), b))
    return _ratio(s[key], best), name, per_round


def _line(what, ratio, peer, rounds, limit=None, higher=False):
    if ratio is None:  # a 0 CPU figure: under one 10 ms tick over a tiny run
        return f"- {what}: – against {peer} (no figure to compare)"
    head = f"- {what}: {_fmt(ratio, 2)}× {peer}"
    if limit is None:
        return f"{head} (no target). Per round: {_rounds(rounds)}"
    sign = "≥" if higher else "≤"
    return (f"{head}, target {sign} {limit:.2f}: {_target(ratio, limit, higher)}. Per round: "
            f"{_rounds(rounds)}{noisy_note(rounds)}")


def _reference_row(suite):
    """nginx's row (it has only an HTTP/1.1 upstream)."""
    return next((s.name for s in suite.servers if getattr(s, "base", s.name) == RSS_REFERENCE),
                None)


def _pair_lines(suite, measurements, subject, client, upstream):
    """The target lines of one Portico row for one (client, upstream) pair."""
    lines = []
    nginx = _reference_row(suite)
    for w in suite.workloads:
        if w.protocol != client:
            continue
        if w.key in CPU_LIMITS:
            if not summarize(measurements, subject, w.key):
                continue
            for key, label, limit, higher in (("cpu_us", "CPU/req", CPU_LIMITS[w.key], False),
                                              ("rps", "req/s", 1.0, True)):
                r, peer, rounds = _vs_best(measurements, suite, subject, w.key, key, upstream)
                if r is None or peer is None:
                    # A 0 CPU figure (10 ms ticks over a tiny run) or no peer of the pair.
                    lines.append(f"- {w.key} {label}: – (no figure to compare: {subject} "
                                 "or every peer of the pair has none)")
                    continue
                lines.append(_line(f"{w.key} {label}", r, f"best peer {peer}", rounds,
                                   limit, higher))
            a = summarize(measurements, subject, w.key)
            lines += _floor_line(suite, measurements, subject, w, a)
            b = nginx and summarize(measurements, nginx, w.key)
            if a and b:
                rounds = _paired_ratios(measurements, subject, nginx, w.key, "rss_mib")
                lines.append(_line(f"{w.key} peak RSS {_fmt(a['rss_mib'])} MiB",
                                   _ratio(a["rss_mib"], b["rss_mib"]),
                                   f"{nginx}'s {_fmt(b['rss_mib'])} MiB", rounds, 1.0))
        elif w.key in RATE_WORKLOADS:
            r, peer, rounds = _vs_best(measurements, suite, subject, w.key, "p99", upstream)
            if r is not None and peer is not None:
                lines.append(_line(f"{w.key} p99", r, f"best peer {peer}", rounds, 1.0))
        elif w.kind != "idle":
            key, label = PRIMARY[w.kind]
            r, peer, rounds = _vs_best(measurements, suite, subject, w.key, key, upstream)
            if r is not None and peer is not None:
                lines.append(_line(f"{w.key} {label}", r, f"best peer {peer}", rounds))
    return lines


def _floor_line(suite, measurements, subject, w, a):
    """The subject's CPU per request on workload w (a: its summary) over the floor row's, when
    both have a figure."""
    floor = next((s.name for s in suite.servers if s.floor), None)
    f = floor and summarize(measurements, floor, w.key)
    if not (a and f and a.get("cpu_us") and f.get("cpu_us")):
        return []
    what = ("TLS terminated, the plaintext relayed" if w.protocol == "tls"
            else f"a byte relay of {w.protocol} both ways")
    return [_line(f"{w.key} CPU/req", _ratio(a["cpu_us"], f["cpu_us"]), f"the floor ({what})",
                  _paired_ratios(measurements, subject, floor, w.key, "cpu_us"))]


def proxy_targets(suite, measurements):
    """The bench issue's targets, per (client protocol, upstream protocol) pair."""
    out = ["Targets (bench issue), like with like: each Portico row against the best peer of "
           f"the same (client {ARROW} upstream) pair in this run, on the medians; peers with "
           "another upstream protocol and Portico's variants are left out; per round: against "
           "that round's best peer of the pair. CPU/req ≤ 0.70× on h1-hello and "
           "h2c-hello-m10, ≤ 1.00× on -m1 and -m100; req/s ≥ 1.00×; p99 at a fixed rate ≤ "
           f"1.00×; peak RSS under load and KiB per idle h2 connection ≤ {RSS_REFERENCE}'s "
           f"({RSS_REFERENCE} has only an HTTP/1.1 upstream: every pair is against that row).",
           ""]
    subjects = [s for s in suite.servers if getattr(s, "base", None) == "portico"]
    clients = [c for c in ("h1", "h2c", "tls") if any(w.protocol == c and w.kind != "idle"
                                                       for w in suite.workloads)]
    for upstream in ("h1", "h2c"):
        for spec in (s for s in subjects if upstream_of(s) == upstream):
            for client in clients:
                lines = _pair_lines(suite, measurements, spec.name, client, upstream)
                peers = [s.name for s in suite.servers if not is_portico(s.name)
                         and upstream_of(s) == upstream]
                pair = f"{client} {ARROW} {upstream}"
                if not lines:
                    why = "no peer of this pair ran" if spec.unavailable() is None else \
                        spec.unavailable()
                    out.append(f"**{pair}**, {spec.name}: n/a ({why})")
                    out.append("")
                    continue
                out += [f"**{pair}**: {spec.name} against {', '.join(peers)}", ""] + lines + [""]
    out += _idle_lines(suite, measurements, subjects)
    out += _metrics_lines(suite, measurements)
    return out


def _idle_lines(suite, measurements, subjects):
    nginx = _reference_row(suite)
    if not nginx or not any(w.key == "idle-h2c" for w in suite.workloads):
        return []
    lines = []
    b = summarize(measurements, nginx, "idle-h2c")
    for spec in subjects:
        a = summarize(measurements, spec.name, "idle-h2c")
        if a and b:
            r = _ratio(a.get("kib_per_conn"), b.get("kib_per_conn"))
            rounds = _paired_ratios(measurements, spec.name, nginx, "idle-h2c", "kib_per_conn")
            lines.append(_line(f"idle-h2c, {spec.name}: {_fmt(a.get('kib_per_conn'))} KiB per "
                               "idle h2 connection", r,
                               f"{nginx}'s {_fmt(b.get('kib_per_conn'))}", rounds, 1.0))
    return (["**idle h2c connections** (no request reaches the origin: the upstream protocol "
             "plays no part)", ""] + lines + [""]) if lines else []


VARIANTS = {"portico-nometrics": ("metrics on → off", "metrics on vs off"),
            "portico-polled": ("admin not polled → /metrics and /stats.json polled every "
                               "second", "admin polled"),
            "portico-baseline": ("this build → the baseline build (--baseline-build-dir)",
                                 "baseline build")}


def _metrics_lines(suite, measurements):
    """Portico against its variants, same upstream, same run: metrics off (nometrics), the
    admin endpoint polled every second (polled: the dashboard's and a scraper's cost)."""
    lines = []
    for variant in suite.servers:
        label = VARIANTS.get(getattr(variant, "base", None))
        if not label:
            continue
        subject = next((s.name for s in suite.servers if getattr(s, "base", None) == "portico"
                        and upstream_of(s) == upstream_of(variant)), None)
        pairs = []
        for w in suite.workloads:
            a = summarize(measurements, variant.name, w.key)
            b = subject and summarize(measurements, subject, w.key)
            if a and b:
                rounds = _paired_ratios(measurements, variant.name, subject, w.key, "cpu_us")
                pairs.append(f"{w.key} {_fmt(b.get('cpu_us'))} → {_fmt(a.get('cpu_us'))} µs "
                             f"({_fmt(_ratio(a.get('cpu_us'), b.get('cpu_us')), 2)}×; per "
                             f"round {_rounds(rounds)})")
        if pairs:
            lines.append(f"- {label[0]}, {subject} → {variant.name} (CPU/req, same run): "
                         + "; ".join(pairs))
        else:
            why = variant.unavailable() or "not run"
            lines.append(f"- {label[1]}: {variant.name} n/a ({why})")
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
        rps_rounds = _paired_ratios(measurements, suite.subject, suite.reference, w.key)
        cpu_rounds = _paired_ratios(measurements, suite.subject, suite.reference, w.key,
                                    "cpu_us")
        lines.append(
            f"- {w.key}: req/s {_fmt(rps, 2)}×{goal}; CPU/req {_fmt(cpu, 2)}×. Per round: "
            f"req/s {_rounds(rps_rounds)}; CPU/req {_rounds(cpu_rounds)}")
    return lines


def backend_targets(suite, measurements, peer="h2o"):
    """portico-backend's CPU per request against h2o's (files and hello from h2o's file
    handler) in the same run: the bench issue's seed-1 target, ≤ 1.00."""
    lines = [f"Target (bench issue, seed 1): {suite.subject}'s CPU/request ≤ {peer}'s, same "
             "run, on every workload both serve (h2c-hello-m100 and h2c-static-m100 are "
             "seed 1: `h2load -c100 -m100` h2c on hello and on the 25-byte file).", ""]
    for w in suite.workloads:
        a = summarize(measurements, suite.subject, w.key)
        b = summarize(measurements, peer, w.key)
        if not a or not b:
            continue
        cpu = _ratio(a["cpu_us"], b["cpu_us"])
        rounds = _paired_ratios(measurements, suite.subject, peer, w.key, "cpu_us")
        rps = _ratio(a["rps"], b["rps"])
        lines.append(_line(f"{w.key} CPU/req", cpu, peer, rounds, 1.0) +
                     f"; req/s {_fmt(rps, 2)}× (no target)")
    return lines


CACHE_CPU_LIMIT = 0.70  # the cache issue: hit-path CPU/req <= 0.7x the better of the peers


def cache_targets(suite, measurements):
    """Portico's hits against the better of Varnish and nginx proxy_cache, per workload."""
    out = [f"Target (cache issue): hit-path CPU/req ≤ {CACHE_CPU_LIMIT:.2f}× the better of "
           "Varnish and nginx proxy_cache on each workload, on the medians; per round against "
           "that round's better one. req/s shown, no target.", ""]
    for w in suite.workloads:
        for key, label, limit, higher in (("cpu_us", "CPU/req", CACHE_CPU_LIMIT, False),
                                          ("rps", "req/s", None, True)):
            r, peer, rounds = _vs_best(measurements, suite, suite.subject, w.key, key, "h1")
            if r is None or peer is None:
                out.append(f"- {w.key} {label}: – (no figure to compare)")
                continue
            out.append(_line(f"{w.key} {label}", r, f"best peer {peer}", rounds, limit, higher))
    return out


def h3_targets(suite, measurements):
    """Portico's QUIC listener against Caddy's (the reference), per workload: the ratios of the
    medians and each round's own, which say whether the medians can be trusted. No target yet:
    the figures come first."""
    ref = suite.reference
    out = [f"{suite.subject} against {ref}: HTTP/3 from the client, HTTP/1.1 to the same origin "
           "(no target; per round: that round's two measurements, minutes apart).", ""]
    for w in suite.workloads:
        a, b = summarize(measurements, suite.subject, w.key), summarize(measurements, ref, w.key)
        if not a or not b:
            out.append(f"- {w.key}: – (not measured on both)")
            continue
        parts = []
        for key, label in (("rps", "req/s"), ("cpu_us", "CPU/req"), ("p99", "p99"),
                           ("rss_mib", "peak RSS")):
            rounds = _paired_ratios(measurements, suite.subject, ref, w.key, key)
            parts.append(f"{label} {_fmt(_ratio(a.get(key), b.get(key)), 2)}× "
                         f"(per round {_rounds(rounds)})")
        out.append(f"- {w.key}: " + "; ".join(parts))
    return out
