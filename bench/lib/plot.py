"""The plot of a suite's report: server CPU µs per request, one group of bars per workload and
one bar per server, drawn by gnuplot (pngcairo) into a PNG next to the markdown report.

It reads the report itself (its "Every round" table: one line per measurement), so a PNG can be
made again from any results file (bench/plot), and bench/run draws it from the text it has just
written. Bars are medians over the rounds, on a log scale: hello costs ~10 µs per request, a
1 MiB response or a TLS handshake hundreds.
"""
import os
import re
import statistics
import subprocess
import tempfile

from .servers import BenchError

ROUNDS_HEADING = "## Every round"
# One colour per program (Portico's in red and orange), the same in every suite; a row whose
# upstream is h2c is hatched in its program's colour, so a proxy's two modes sit side by side.
COLOURS = {"portico": "#d62728", "portico-nometrics": "#ff9896", "portico-polled": "#ff7f0e",
           "portico-backend": "#d62728",
           "nginx": "#2ca02c", "haproxy": "#1f77b4", "h2o": "#9467bd", "nghttpx": "#17becf",
           "starman": "#8c564b", "caddy": "#e377c2"}
TITLE = ("{suite} suite: server CPU µs per request (median over the rounds; per connection for "
         "TLS and idle; lower is better)")
OTHER_COLOURS = ("#7f7f7f", "#bcbd22", "#e377c2", "#393b79", "#637939", "#ff7f0e")


def _style(server, index):
    """gnuplot colour and fill of one server's bars (a stack row: its proxy's)."""
    proxy = server.split(" →")[0]
    colour = COLOURS.get(proxy.split(" (")[0], OTHER_COLOURS[index % len(OTHER_COLOURS)])
    if proxy.endswith("(h2c)"):
        return f"lc rgb '{colour}' fs pattern 4 border rgb '{colour}'"
    return f"lc rgb '{colour}' fs solid 0.9 border -1"


def split_suites(text):
    """[(suite name, its section of the report)] in the order they appear."""
    heads = list(re.finditer(r"(?m)^# Portico bench: (\S+) suite$", text))
    return [(m.group(1), text[m.start():heads[i + 1].start() if i + 1 < len(heads) else None])
            for i, m in enumerate(heads)]


def png_names(report_path, suites):
    """{suite: PNG path}: the report's stem + .png, or stem-SUITE.png when it holds several."""
    stem = os.path.splitext(report_path)[0]
    if len(suites) == 1:
        return {suites[0]: stem + ".png"}
    return {s: f"{stem}-{s}.png" for s in suites}


def _number(cell):
    try:
        return float(cell.replace(",", ""))
    except ValueError:
        return None


def cpu_per_request(section):
    """(workloads, servers, {(server, workload): median CPU µs per request}) of one suite."""
    lines = section.split(ROUNDS_HEADING, 1)[-1].splitlines()
    header, values = None, {}
    workloads, servers = [], []
    for line in lines:
        if not line.startswith("| "):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if cells[0].startswith("---"):
            continue
        row = dict(zip(header, cells))
        workload, server = row.get("workload"), row.get("server")
        cpu = _number(row.get("CPU µs/req (/conn)", ""))
        if not workload or not server or cpu is None:
            continue
        if workload not in workloads:
            workloads.append(workload)
        if server not in servers:
            servers.append(server)
        values.setdefault((server, workload), []).append(cpu)
    return workloads, servers, {k: statistics.median(v) for k, v in values.items()}


def _quote(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def draw(section, suite, png_path, timeout=60):
    """One PNG for one suite's section of a report; False when it has no measurement."""
    workloads, servers, cpu = cpu_per_request(section)
    if not workloads:
        return False
    with tempfile.TemporaryDirectory(prefix="portico-bench-plot-") as tmp:
        data = os.path.join(tmp, "cpu.tsv")
        with open(data, "w") as f:
            f.write("\t".join(["workload"] + [_quote(s) for s in servers]) + "\n")
            for w in workloads:
                f.write("\t".join([w] + [f"{cpu[(s, w)]:.3f}" if (s, w) in cpu else "-"
                                         for s in servers]) + "\n")
        width = max(900, 160 + len(workloads) * (len(servers) * 16 + 40))
        script = "\n".join([
            "set encoding utf8",
            f"set terminal pngcairo size {width},620 font 'sans,10'",
            f"set output {_quote(png_path)}",
            "set datafile separator '\\t'",
            "set datafile missing '-'",
            f"set title {_quote(TITLE.format(suite=suite))}",
            "set ylabel 'CPU µs per request (log scale)'",
            "set logscale y",
            "set grid ytics",
            "set style data histograms",
            "set style histogram clustered gap 1",
            "set style fill solid 0.9 border -1",
            "set boxwidth 0.9",
            "set xtics rotate by -30 nomirror",
            "set key outside right top vertical",
            "set bmargin 6",
            "plot " + ", \\\n     ".join(
                f"{_quote(data)} using {i + 2}:xtic(1) title columnheader({i + 2}) "
                f"{_style(s, i)}" for i, s in enumerate(servers)), ""])
        script_path = os.path.join(tmp, "cpu.gp")
        with open(script_path, "w") as f:
            f.write(script)
        proc = subprocess.run(["gnuplot", script_path], capture_output=True, text=True,
                              timeout=timeout)
        if proc.returncode != 0 or not os.path.exists(png_path):
            raise BenchError(f"gnuplot failed ({proc.returncode}): {proc.stderr[-1000:]}")
    return True


def draw_report(report_path, text=None):
    """Every suite of a markdown report drawn next to it; returns the PNGs written."""
    if text is None:
        with open(report_path) as f:
            text = f.read()
    sections = split_suites(text)
    names = png_names(report_path, [s for s, _ in sections])
    written = []
    for suite, section in sections:
        if draw(section, suite, names[suite]):
            written.append(names[suite])
    return written
