"""bench/scale's plot: each cost against the size of the configuration (log scale), one panel
per shape and cost, one line per server, drawn by gnuplot (pngcairo) next to the report."""
import subprocess

from .plot import COLOURS, OTHER_COLOURS

# (row key, axis label): the costs that have a value at every size of a shape.
COSTS = [("cpu_us", "CPU µs/request"), ("rss_start_kb", "RSS at start, MB"),
         ("start_s", "start, s")]
SCALE = {"rss_start_kb": 1 / 1024}


def _data(results, shape, server, key):
    rows = sorted((n, row) for (s, n), row in results[shape].items() if s == server)
    return "\n".join(f"{n} {row[key] * SCALE.get(key, 1):.6g}" for n, row in rows if key in row)


def draw(results, servers, png_path, timeout=60):
    """results: {shape: {(server, size): row}}. Panels for the costs each shape has."""
    panels = [(shape, key, label) for shape in results for key, label in COSTS
              if any(key in row for row in results[shape].values())]
    if not panels:
        return
    cols = len(COSTS)
    rows = -(-len(panels) // cols)
    script = [f"set terminal pngcairo size {420 * cols},{300 * rows} font ',9'",
              f"set output '{png_path}'", f"set multiplot layout {rows},{cols}",
              "set logscale x", "set key top left", "set grid", "set xlabel 'size'"]
    for shape, key, label in panels:
        plots = []
        for i, server in enumerate(servers):
            data = _data(results, shape, server, key)
            if not data:
                continue
            name = f"${shape}_{key}_{i}".replace("-", "_")
            script.append(f"{name} << EOD\n{data}\nEOD")
            colour = COLOURS.get(server, OTHER_COLOURS[i % len(OTHER_COLOURS)])
            plots.append(f"{name} using 1:2 with linespoints lw 2 lc rgb '{colour}' "
                         f"title '{server}'")
        script.append(f"set title '{shape}: {label}'")
        script.append(f"set ylabel '{label}'")
        script.append("set yrange [0:*]")
        script.append("plot " + ", ".join(plots))
    script.append("unset multiplot")
    subprocess.run(["gnuplot"], input="\n".join(script) + "\n", text=True, check=True,
                   timeout=timeout)
