"""bench/run --smoke: the bench harness still starts every server, drives every workload and
writes its table (tiny counts, so the harness cannot rot between real bench runs)."""
import os
import re
import subprocess
import tempfile
import unittest

import harness

BENCH_RUN = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "run")
SERVERS = ("portico-backend", "nginx", "starman")
PROXIES = ("portico", "nginx", "haproxy", "h2o", "nghttpx")


def table_rows(text, heading):
    """The data rows of the markdown table under heading, as {server: [cells]}."""
    lines = text.splitlines()
    start = lines.index(heading)
    rows = {}
    for line in lines[start + 1:]:
        if line.startswith("#"):
            break
        if not line.startswith("| ") or line.startswith("| server") or line.startswith("| ---"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


def number(cell):
    return float(cell.replace(",", ""))


def run_smoke(test, suite):
    """bench/run --smoke for one suite; returns the markdown it wrote."""
    test.assertTrue(os.path.exists(harness.BACKEND), f"not built: {harness.BACKEND}")
    with tempfile.TemporaryDirectory(prefix="portico-bench-smoke-") as tmp:
        out = os.path.join(tmp, "smoke.md")
        proc = subprocess.run(
            [harness.PYTHON, BENCH_RUN, "--smoke", "--suite", suite, "-o", out,
             "--build-dir", harness.BUILD_DIR],
            capture_output=True, text=True, timeout=60)
        test.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        with open(out) as f:
            return f.read()


class BenchSmokeTest(unittest.TestCase):
    def test_backend_suite_smoke(self):
        harness.need("nginx", "starman", "wrk", "h2load", "taskset")
        text = run_smoke(self, "backend")

        self.assertIn("# Portico bench: backend suite", text)
        self.assertRegex(text, r"- machine: .+ kernel ")
        self.assertRegex(text, r"- nginx: nginx/\d")

        h1 = table_rows(text, "### HTTP/1.1 keep-alive, GET / (hello)")
        self.assertEqual(sorted(h1), sorted(SERVERS))
        for server in SERVERS:
            cells = h1[server]
            self.assertGreater(number(cells[0]), 0, f"{server}: req/s {cells}")
        # Errors from Portico's server or the reference are bugs; starman's one-connection-
        # per-worker model may time clients out on a loaded machine.
        for server in ("portico-backend", "nginx"):
            self.assertEqual(h1[server][5], "0", f"{server}: errors {h1[server]}")

        h2 = table_rows(text, "### h2c (prior knowledge), GET / (hello)")
        self.assertEqual(sorted(h2), sorted(SERVERS))
        for server in ("portico-backend", "nginx"):
            self.assertGreater(number(h2[server][0]), 0, f"{server}: h2c req/s {h2[server]}")
        self.assertTrue(h2["starman"][0].startswith("n/a"), h2["starman"])

        counter = table_rows(text, "### HTTP/1.1 keep-alive, GET /?id=1 (counter, shm store)")
        self.assertGreater(number(counter["portico-backend"][0]), 0)

        self.assertTrue(re.search(r"^- h1-hello: req/s [\d.]+× nginx", text, re.M), text)

    def test_proxy_suite_smoke(self):
        """The peers' proxy configs (bench/peers/) still start and proxy to the origin."""
        harness.need("nginx", "haproxy", "h2o", "nghttpx", "wrk", "h2load", "taskset")
        text = run_smoke(self, "proxy")
        self.assertIn("# Portico bench: proxy suite", text)
        for heading in ("### HTTP/1.1 keep-alive, GET / (hello)",
                        "### h2c (prior knowledge), GET / (hello)"):
            rows = table_rows(text, heading)
            self.assertEqual(sorted(rows), sorted(PROXIES), heading)
            for proxy in PROXIES:
                cells = rows[proxy]
                if proxy == "portico" and cells[0].startswith("n/a"):
                    continue  # until the portico binary and its bench config exist
                self.assertGreater(number(cells[0]), 0, f"{heading} {proxy}: {cells}")
                self.assertEqual(cells[5], "0", f"{heading} {proxy}: errors {cells}")


if __name__ == "__main__":
    unittest.main()
