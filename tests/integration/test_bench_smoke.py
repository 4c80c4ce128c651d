"""bench/run --smoke: the bench harness still starts every server, drives every workload and
writes its tables and plots (tiny counts, so the harness cannot rot between real bench runs).
The three suites and the proxy suite's second origin together take about 70 s on a quiet
2-core machine (90 s on a busy one)."""
import os
import re
import subprocess
import tempfile
import unittest

import harness

BENCH_RUN = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "run")
SERVERS = ("portico-backend", "nginx", "h2o", "starman")
# Every proxy in every upstream mode it has: (row, upstream).
PROXY_ROWS = (("portico (h1)", "h1"), ("portico-nometrics (h1)", "h1"),
              ("portico-polled (h1)", "h1"), ("nginx (h1)", "h1"),
              ("haproxy (h1)", "h1"), ("h2o (h1)", "h1"), ("nghttpx (h1)", "h1"),
              ("portico (h2c)", "h2c"), ("haproxy (h2c)", "h2c"), ("nghttpx (h2c)", "h2c"))
PROXIES = tuple(name for name, _ in PROXY_ROWS)
STACKS = ("portico (h1) → portico-backend", "portico (h2c) → portico-backend",
          "nginx (h1) → portico-backend", "nginx (h1) → starman")
PAIRS = (("h1", "h1"), ("h2c", "h1"), ("h1", "h2c"), ("h2c", "h2c"))  # (client, upstream)
SMOKE_IDLE_CONNECTIONS = 100


def tables(text):
    """Every results table: {heading: {server: {column: cell}}} (column names as printed)."""
    out, heading, header = {}, None, None
    for line in text.splitlines():
        if line.startswith("### "):
            heading, header = line[4:], None
            out[heading] = {}
        elif line.startswith("## "):
            heading = None
        elif heading and line.startswith("| "):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header = cells
            elif not cells[0].startswith("---"):
                out[heading][cells[0]] = dict(zip(header[1:], cells[1:]))
    return out


def table(test, text, heading):
    """The table under this exact heading, or else the one whose heading starts with it."""
    all_tables = tables(text)
    if heading in all_tables:
        return all_tables[heading]
    found = [rows for h, rows in all_tables.items() if h.startswith(heading)]
    test.assertEqual(len(found), 1, f"{heading!r} among {sorted(all_tables)}")
    return found[0]


def number(cell):
    return float(cell.replace(",", ""))


def not_applicable(row):
    return any(cell.startswith("n/a") for cell in row.values())


def run_smoke(test, suite, *extra):
    """bench/run --smoke for one suite; returns the markdown it wrote. The plot must be next to
    it, a PNG, linked from the report."""
    test.assertTrue(os.path.exists(harness.BACKEND), f"not built: {harness.BACKEND}")
    with tempfile.TemporaryDirectory(prefix="portico-bench-smoke-") as tmp:
        out = os.path.join(tmp, "smoke.md")
        proc = subprocess.run(
            [harness.PYTHON, BENCH_RUN, "--smoke", "--suite", suite, "-o", out,
             "--build-dir", harness.BUILD_DIR, *extra],
            capture_output=True, text=True, timeout=240)
        test.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        with open(os.path.join(tmp, "smoke.png"), "rb") as f:
            test.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", "smoke.png is not a PNG")
        with open(out) as f:
            text = f.read()
        test.assertIn("](smoke.png)", text)
        return text


class BenchSmokeTest(unittest.TestCase):
    def check_rows(self, rows, names, column, errors_free=(), heading=""):
        """Every server has a row; where it ran, column is > 0; errors_free ran without errors."""
        self.assertEqual(sorted(rows), sorted(names), heading)
        for name in names:
            row = rows[name]
            if not_applicable(row):
                continue
            self.assertGreater(number(row[column]), 0, f"{heading} {name}: {row}")
            if name in errors_free and "errors" in row:
                self.assertEqual(row["errors"], "0", f"{heading} {name}: errors {row}")

    def check_upstreams(self, rows, heading):
        """Every proxy row says which protocol it speaks to the origin, as its name does."""
        for name, upstream in PROXY_ROWS:
            self.assertEqual(rows[name]["upstream"], upstream, f"{heading} {name}")

    def test_backend_suite_smoke(self):
        harness.need("nginx", "starman", "h2o", "memcached", "wrk", "h2load", "taskset",
                     "gnuplot")
        text = run_smoke(self, "backend")

        self.assertIn("# Portico bench: backend suite", text)
        self.assertRegex(text, r"- machine: .+ kernel ")
        self.assertRegex(text, r"- nginx: nginx/\d")

        # Errors from Portico's server or the reference are bugs; starman's one-connection-
        # per-worker model may time clients out on a loaded machine.
        ok = ("portico-backend", "nginx")
        h1 = table(self, text, "HTTP/1.1 keep-alive, GET / (hello)")
        self.check_rows(h1, SERVERS, "req/s", ok, "h1-hello")
        self.assertFalse(not_applicable(h1["starman"]))

        h2 = table(self, text, "h2c (prior knowledge), GET / (hello)")
        self.check_rows(h2, SERVERS, "req/s", ok, "h2c-hello")
        self.assertTrue(not_applicable(h2["starman"]), h2["starman"])
        self.assertFalse(not_applicable(h2["portico-backend"]))

        # The seed-1 workload: h2load -c100 -m100 (here -c10) on hello and on the 25-byte file,
        # portico-backend against h2o serving the same bytes.
        ok = ("portico-backend", "nginx", "h2o")
        for heading, key in (("h2c (prior knowledge), GET / (hello) -m100", "h2c-hello-m100"),
                             ("h2c (prior knowledge), GET /static.txt (25-byte file) -m100",
                              "h2c-static-m100")):
            rows = table(self, text, heading)
            self.check_rows(rows, SERVERS, "req/s", ok, key)
            for name in ok:
                self.assertFalse(not_applicable(rows[name]), f"{key} {name}")
            self.assertTrue(not_applicable(rows["starman"]), rows["starman"])
            # A counted h2load run may take less CPU than one 10 ms tick: no figure then.
            self.assertRegex(text, rf"(?m)^- {key} CPU/req: ([\d.]+× h2o, target ≤ 1\.00: "
                                   r"(ok|NOT MET)\. Per round: [\d.]+|– against h2o)")

        shm = table(self, text, "HTTP/1.1 keep-alive, GET /?id=1 (counter, shm store)")
        self.assertGreater(number(shm["portico-backend"]["req/s"]), 0)
        mc = table(self, text, "HTTP/1.1 keep-alive, GET /?id=1 (counter, memcached store)")
        self.check_rows(mc, SERVERS, "req/s", ok, "h1-counter-mc")
        self.assertFalse(not_applicable(mc["starman"]), mc["starman"])

        self.assertTrue(re.search(r"^- h1-hello: req/s [\d.]+× nginx", text, re.M), text)

    def test_proxy_suite_smoke(self):
        """Every proxy's config (bench/peers/) still starts, in each upstream mode it has,
        reaches the h2o origin's unix socket (HTTP/1.1 or h2c), and serves every workload: h1,
        h2c -m1/-m10/-m100, 1 MiB bodies, fixed rate, TLS (new, full, resumed) and idle h2c
        connections; the counter reads n/a (h2o has no counter app)."""
        harness.need("nginx", "haproxy", "h2o", "nghttpx", "openssl", "wrk", "h2load", "curl",
                     "taskset", "gnuplot")
        text = run_smoke(self, "proxy")
        self.assertIn("# Portico bench: proxy suite", text)
        self.assertRegex(text, r"- h2o \(origin\) \(shared, not measured\): "
                               r"peers/h2o-files\.conf")
        throughput = ("HTTP/1.1 keep-alive, GET / (hello)",
                      "h2c (prior knowledge), GET / (hello) -m1",
                      "h2c (prior knowledge), GET / (hello) -m10",
                      "h2c (prior knowledge), GET / (hello) -m100")
        for heading in throughput:
            rows = table(self, text, heading)
            self.check_rows(rows, PROXIES, "req/s", PROXIES, heading)
            self.check_upstreams(rows, heading)
            for name in ("portico (h1)", "portico (h2c)", "haproxy (h2c)", "nghttpx (h2c)"):
                self.assertFalse(not_applicable(rows[name]), f"{heading} {name}")
        counter = table(self, text, "HTTP/1.1 keep-alive, GET /?id=1 (counter, memcached store)")
        for name in PROXIES:
            if name not in ("portico-nometrics (h1)", "portico-polled (h1)"):  # a few only
                self.assertIn("n/a: the h2o origin has no counter app", " ".join(
                    counter[name].values()), name)
        for heading in ("HTTP/1.1 keep-alive, GET /bytes", "h2c, GET /bytes"):
            self.check_rows(table(self, text, heading), PROXIES, "MB/s", PROXIES, heading)
        for heading in ("h2c at a fixed rate", "HTTP/1.1 at a fixed rate"):
            rows = table(self, text, heading)
            self.check_rows(rows, PROXIES, "req/s", PROXIES, heading)
            self.check_upstreams(rows, heading)
            for name in PROXIES:
                if not not_applicable(rows[name]):
                    self.assertNotEqual(rows[name]["p99.9 ms"], "–", f"{heading} {name}")
        rows = table(self, text, "h2 over TLS, new connections")
        self.check_rows(rows, PROXIES, "conn/s", PROXIES, "tls-h2-new")
        for name in PROXIES:
            if not not_applicable(rows[name]):
                self.assertEqual(rows[name]["TLS"], "TLSv1.3 h2", f"tls-h2-new {name}")
        full = table(self, text, "TLS full handshakes")
        self.check_rows(full, PROXIES, "conn/s", PROXIES, "tls-full")
        resumed = table(self, text, "TLS resumed sessions")
        self.check_rows(resumed, PROXIES, "conn/s", PROXIES, "tls-resumed")
        for name in PROXIES:
            if not not_applicable(resumed[name]):
                self.assertEqual(resumed[name]["resumed %"], "100", f"tls-resumed {name}")
                self.assertEqual(full[name]["resumed %"], "0", f"tls-full {name}")
        idle = table(self, text, f"{SMOKE_IDLE_CONNECTIONS} idle h2c connections")
        self.assertEqual(sorted(idle), sorted(PROXIES))
        for name in PROXIES:
            if not not_applicable(idle[name]):
                self.assertEqual(number(idle[name]["connections"]), SMOKE_IDLE_CONNECTIONS, name)
                self.assertEqual(idle[name]["errors"], "0", f"idle {name}: {idle[name]}")
                self.assertNotEqual(idle[name]["KiB/conn"], "–", name)

        # Target lines per (client → upstream) pair, each against a peer of that pair only.
        verdict = r"(ok|NOT MET)\. Per round: [\d.]+"
        for client, upstream in PAIRS:
            subject = f"portico ({upstream})"
            peers = "|".join(re.escape(n) for n, u in PROXY_ROWS
                             if u == upstream and not n.startswith("portico"))
            block = re.search(rf"(?ms)^\*\*{client} → {upstream}\*\*: {re.escape(subject)} "
                              rf"against [^\n]*\n\n(.*?)\n\n", text)
            self.assertIsNotNone(block, f"no {client} → {upstream} targets")
            lines = block.group(1)
            headline = ("h1-hello",) if client == "h1" else (
                "h2c-hello-m1", "h2c-hello-m10", "h2c-hello-m100")
            for key in headline:
                self.assertRegex(lines, rf"(?m)^- {key} req/s: [\d.]+× best peer ({peers}), "
                                        rf"target ≥ 1\.00: {verdict}")
                self.assertRegex(lines, rf"(?m)^- {key} CPU/req: ")
                self.assertRegex(lines, rf"(?m)^- {key} peak RSS [\d.]+ MiB: [\d.]+× "
                                        rf"nginx \(h1\)'s [\d.]+ MiB, target ≤ 1\.00: {verdict}")
            rate = "h1-rate" if client == "h1" else "h2c-rate"
            self.assertRegex(lines, rf"(?m)^- {rate} p99: [\d.]+× best peer ({peers}), "
                                    rf"target ≤ 1\.00: {verdict}")
            if client == "h1":  # wrk's timed second: a CPU figure well above the 10 ms tick
                self.assertRegex(lines, rf"(?m)^- h1-hello CPU/req: [\d.]+× best peer "
                                        rf"({peers}), target ≤ 0\.70: {verdict}")
        self.assertRegex(text, r"(?m)^- idle-h2c, portico \(h1\): [\d.-]+ KiB per idle h2 "
                               r"connection: ")
        self.assertRegex(text, r"(?m)^- metrics on (→ off, portico \(h1\) → portico-nometrics "
                               r"\(h1\) \(CPU/req, same run\)|vs off: )")
        self.assertRegex(text, r"(?m)^- admin (not polled → /metrics and /stats.json polled "
                               r"every second, portico \(h1\) → portico-polled \(h1\) "
                               r"\(CPU/req, same run\)|polled: )")

    def test_proxy_suite_portico_backend_origin_smoke(self):
        """--origin portico-backend (the old origin): the counter on memcached through Portico
        in both upstream modes, the h2c peers and nginx (a subset: the rows are the main
        proxy smoke's)."""
        harness.need("nginx", "haproxy", "nghttpx", "memcached", "wrk", "h2load", "curl",
                     "taskset", "gnuplot")
        text = run_smoke(self, "proxy", "--origin", "portico-backend",
                         "--workloads", "h1-counter-mc",
                         "--servers", "portico,nginx,haproxy-h2c,nghttpx-h2c")
        self.assertRegex(text, r"- portico-backend \(origin\) \(shared, not measured\): ")
        heading = "HTTP/1.1 keep-alive, GET /?id=1 (counter, memcached store)"
        rows = table(self, text, heading)
        names = ("portico (h1)", "nginx (h1)", "portico (h2c)", "haproxy (h2c)", "nghttpx (h2c)")
        # haproxy (h2c) too: its h2 backend sends a WINDOW_UPDATE for each stream just after
        # the response ended (RFC 9113 5.1 allows it), which portico-backend once counted as
        # a flood (GOAWAY after ~1,000 requests).
        self.check_rows(rows, names, "req/s", names, heading)
        for name in names:
            self.assertFalse(not_applicable(rows[name]), f"{heading} {name}")
            self.assertEqual(rows[name]["upstream"], re.search(r"\((\w+)\)$", name)[1], name)

    def test_stack_suite_smoke(self):
        """A proxy and its app server measured together, both on unix sockets."""
        harness.need("nginx", "starman", "memcached", "wrk", "h2load", "taskset", "gnuplot")
        text = run_smoke(self, "stack")
        self.assertIn("# Portico bench: stack suite", text)
        for heading in ("HTTP/1.1 keep-alive, GET / (hello)",
                        "h2c (prior knowledge), GET / (hello)",
                        "HTTP/1.1 keep-alive, GET /?id=1 (counter, memcached store)"):
            rows = table(self, text, heading)
            # starman's one-connection-per-worker model may time a client out on a loaded
            # machine; errors through the other two stacks are bugs.
            self.check_rows(rows, STACKS, "req/s", STACKS[:2], heading)
        self.assertRegex(text, r"(?m)^- h1-hello: req/s [\d.]+×, target ≥ 5: ")


if __name__ == "__main__":
    unittest.main()
