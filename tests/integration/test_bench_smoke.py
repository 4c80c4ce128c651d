"""bench/run --smoke: the bench harness still starts every server, drives every workload and
writes its tables (tiny counts, so the harness cannot rot between real bench runs). The three
suites together take about 45 s on a quiet 2-core machine."""
import os
import re
import subprocess
import tempfile
import unittest

import harness

BENCH_RUN = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "run")
SERVERS = ("portico-backend", "nginx", "starman")
PEERS = ("nginx", "haproxy", "h2o", "nghttpx")
PROXIES = ("portico", "portico-h2c", "portico-nometrics") + PEERS
STACKS = ("portico → portico-backend", "portico-h2c → portico-backend", "nginx → portico-backend",
          "nginx → starman")
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
    return next(iter(row.values())).startswith("n/a")


def run_smoke(test, suite):
    """bench/run --smoke for one suite; returns the markdown it wrote."""
    test.assertTrue(os.path.exists(harness.BACKEND), f"not built: {harness.BACKEND}")
    with tempfile.TemporaryDirectory(prefix="portico-bench-smoke-") as tmp:
        out = os.path.join(tmp, "smoke.md")
        proc = subprocess.run(
            [harness.PYTHON, BENCH_RUN, "--smoke", "--suite", suite, "-o", out,
             "--build-dir", harness.BUILD_DIR],
            capture_output=True, text=True, timeout=240)
        test.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        with open(out) as f:
            return f.read()


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

    def test_backend_suite_smoke(self):
        harness.need("nginx", "starman", "memcached", "wrk", "h2load", "taskset")
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

        shm = table(self, text, "HTTP/1.1 keep-alive, GET /?id=1 (counter, shm store)")
        self.assertGreater(number(shm["portico-backend"]["req/s"]), 0)
        mc = table(self, text, "HTTP/1.1 keep-alive, GET /?id=1 (counter, memcached store)")
        self.check_rows(mc, SERVERS, "req/s", ok, "h1-counter-mc")
        self.assertFalse(not_applicable(mc["starman"]), mc["starman"])

        self.assertTrue(re.search(r"^- h1-hello: req/s [\d.]+× nginx", text, re.M), text)

    def test_proxy_suite_smoke(self):
        """Every proxy's config (bench/peers/) still starts, reaches the origin's unix socket,
        and serves every workload: h1, h2c -m1/-m10/-m100, counter on memcached, 1 MiB bodies,
        fixed rate, TLS (new, full, resumed) and idle h2c connections."""
        harness.need("nginx", "haproxy", "h2o", "nghttpx", "memcached", "openssl", "wrk",
                     "h2load", "taskset")
        text = run_smoke(self, "proxy")
        self.assertIn("# Portico bench: proxy suite", text)
        self.assertRegex(text, r"origin, not measured|shared, not measured")
        throughput = ("HTTP/1.1 keep-alive, GET / (hello)",
                      "h2c (prior knowledge), GET / (hello) -m1",
                      "h2c (prior knowledge), GET / (hello) -m10",
                      "h2c (prior knowledge), GET / (hello) -m100",
                      "HTTP/1.1 keep-alive, GET /?id=1 (counter, memcached store)")
        for heading in throughput:
            rows = table(self, text, heading)
            self.check_rows(rows, PROXIES, "req/s", PROXIES, heading)
            self.assertFalse(not_applicable(rows["portico"]), heading)
        for heading in ("HTTP/1.1 keep-alive, GET /bytes", "h2c, GET /bytes"):
            self.check_rows(table(self, text, heading), PROXIES, "MB/s", PROXIES, heading)
        for heading in ("h2c at a fixed rate", "HTTP/1.1 at a fixed rate"):
            rows = table(self, text, heading)
            self.check_rows(rows, PROXIES, "req/s", PROXIES, heading)
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

        self.assertRegex(text, r"(?m)^- h1-hello: CPU/req [\d.]+× best peer \(\w+\)")
        self.assertRegex(text, r"(?m)^- idle-h2c: [\d.-]+ KiB per idle h2 connection")
        self.assertRegex(text, r"(?m)^- metrics on (→ off \(CPU/req, same run\)|vs off: )")

    def test_stack_suite_smoke(self):
        """A proxy and its app server measured together, both on unix sockets."""
        harness.need("nginx", "starman", "memcached", "wrk", "h2load", "taskset")
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
