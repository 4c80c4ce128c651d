"""The error log: [log] file and level; a line per event with time, level and thread; upstream
connect failures, endpoints down and up, names that do not resolve, failed TLS handshakes and
limits hit, each kind at most once a second with what was held back counted; sd-daemon
priority prefixes when JOURNAL_STREAM says stderr is the journal."""
import os
import re
import shutil
import socket
import tempfile
import unittest

import harness
from harness import http_get, wait_until
from proxy_harness import Proxy, toml_string

LINE = re.compile(r"^(?:<\d>)?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \[(debug|info|warn|error)\] "
                  r"(main|worker \d+): ")


def read(path):
    try:
        with open(path) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


class ErrorLog(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="portico-errlog-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.log = os.path.join(self.tmp, "error.log")

    def proxy(self, endpoints, level="info", **kw):
        p = Proxy(endpoints, workers=1,
                  extra_config=f"[log]\nlevel = \"{level}\"\nfile = {toml_string(self.log)}\n",
                  cluster_options={"fail_timeout": "0.5"}, **kw)
        self.addCleanup(p.stop)
        return p

    def test_a_dead_upstream_is_logged_once_a_second_with_a_count(self):
        dead = os.path.join(self.tmp, "nobody.sock")
        p = self.proxy([f"unix:{dead}"])
        for _ in range(200):
            self.assertEqual(http_get(p.port, "/hello")[0], 502)
        wait_until(lambda: any("connect to unix:" in l for l in read(self.log)),
                   what="a connect failure in the error log")
        lines = read(self.log)
        for l in lines:
            self.assertRegex(l, LINE)
        connects = [l for l in lines if "connect to unix:" in l]
        self.assertIn("[warn] worker 0: cluster app: connect to unix:", connects[0])
        # 200 failures in a second or two: a line or two, not 200.
        self.assertLessEqual(len(connects), 4, connects)
        self.assertTrue(any("endpoint unix:" in l and "is down" in l for l in lines), lines)
        # The next failure after a second says how many were held back.
        wait_until(lambda: http_get(p.port, "/hello")[0] == 502 and
                   any("more like it held back" in l for l in read(self.log)),
                   what="the held-back count")
        self.assertIn("started 1 workers", "\n".join(lines))

    def test_two_clusters_failing_at_once_are_both_named_with_the_request(self):
        # Issue 22, defect 5: the once-a-second limit was per kind across every cluster, so
        # the second cluster to fail within the second went unnamed; and no line said which
        # request failed.
        routes = "".join(f"""
[[route]]
path_prefix = "/{c}/"
cluster = "{c}"

[[cluster]]
name = "{c}"
endpoints = ["unix:{self.tmp}/{c}-nobody.sock"]
""" for c in ("blue", "green"))
        dead = os.path.join(self.tmp, "nobody.sock")
        p = self.proxy([f"unix:{dead}"], routes_first=routes)
        self.assertEqual(http_get(p.port, "/blue/x")[0], 502)
        self.assertEqual(http_get(p.port, "/green/y?z=1")[0], 502)
        for c in ("blue", "green"):
            wait_until(lambda: any(f"cluster {c}: connect to unix:" in l for l in read(self.log)),
                       what=f"cluster {c}'s connect failure")
        failed = [l for l in read(self.log) if "answered 502" in l]
        self.assertEqual(len(failed), 2, failed)
        self.assertRegex(failed[0], r'\[warn\] worker 0: cluster blue: connect_refused, answered '
                                    r'502; upstream: unix:\S+/blue-nobody\.sock, client: '
                                    r'127\.0\.0\.1, host: "127\.0\.0\.1:\d+", request: '
                                    r'"GET /blue/x HTTP/1\.1"$')
        self.assertIn('cluster green: connect_refused, answered 502', failed[1])
        self.assertIn('request: "GET /green/y?z=1 HTTP/1.1"', failed[1])

    def test_a_response_timeout_is_logged(self):
        # A 504 was never logged.
        backend = harness.Backend(workers=1, unix=True)
        self.addCleanup(backend.stop)
        p = Proxy([f"unix:{backend.sock_path}"], workers=1,
                  extra_config=f"[log]\nfile = {toml_string(self.log)}\n",
                  cluster_options={"response_timeout": "0.2"})
        self.addCleanup(p.stop)
        self.assertEqual(http_get(p.port, "/delay?ms=2000")[0], 504)
        wait_until(lambda: any("answered 504" in l for l in read(self.log)), what="the 504 line")
        line = next(l for l in read(self.log) if "answered 504" in l)
        self.assertIn("cluster app: response_timeout, answered 504; upstream: unix:", line)
        self.assertIn('request: "GET /delay?ms=2000 HTTP/1.1"', line)

    def test_endpoint_up_again(self):
        backend = harness.Backend(workers=1, unix=True)
        self.addCleanup(backend.stop)
        moved = backend.sock_path + ".away"
        os.rename(backend.sock_path, moved)  # the endpoint vanishes
        p = self.proxy([f"unix:{backend.sock_path}"])
        self.assertEqual(http_get(p.port, "/hello")[0], 502)
        os.rename(moved, backend.sock_path)  # and comes back
        wait_until(lambda: http_get(p.port, "/hello")[0] == 200, what="the endpoint back")
        wait_until(lambda: any("is up again after" in l for l in read(self.log)),
                   what="the endpoint up line")

    def test_a_name_that_does_not_resolve(self):
        p = self.proxy(["no-such-host.invalid:80"])
        http_get(p.port, "/hello", timeout=15)
        wait_until(lambda: any("no-such-host.invalid did not resolve" in l
                               for l in read(self.log)), timeout=20, what="the DNS failure")

    def test_a_failed_tls_handshake(self):
        backend = harness.Backend(workers=1, unix=True)
        self.addCleanup(backend.stop)
        p = self.proxy([f"unix:{backend.sock_path}"], tls=True)
        with socket.create_connection(("127.0.0.1", p.tls_port), timeout=5) as s:
            s.sendall(b"\x00\x01 not a ClientHello\r\n\r\n")
            try:
                s.recv(100)
            except OSError:
                pass
        wait_until(lambda: any("TLS handshake with 127.0.0.1" in l for l in read(self.log)),
                   what="the handshake failure")
        line = next(l for l in read(self.log) if "TLS handshake" in l)
        self.assertRegex(line, r"failed: \S+")

    def test_level_error_keeps_warnings_out(self):
        dead = os.path.join(self.tmp, "nobody.sock")
        p = self.proxy([f"unix:{dead}"], level="error")
        for _ in range(5):
            self.assertEqual(http_get(p.port, "/hello")[0], 502)
        p.stop()
        self.assertEqual([l for l in read(self.log) if "[warn]" in l or "[info]" in l], [])

    def test_journal_priorities_on_stderr(self):
        dead = os.path.join(self.tmp, "nobody.sock")
        p = Proxy([f"unix:{dead}"], workers=1, env={**os.environ, "JOURNAL_STREAM": "8:12345"})
        self.addCleanup(p.stop)
        self.assertEqual(http_get(p.port, "/hello")[0], 502)
        wait_until(lambda: "connect to unix:" in p.process.read_log(), what="a connect failure")
        log = p.process.read_log()
        self.assertRegex(log, r"(?m)^<4>\S+ \[warn\] worker 0: cluster app: connect to unix:")
        self.assertRegex(log, r"(?m)^<6>\S+ \[info\] main: started 1 workers")


if __name__ == "__main__":
    unittest.main()
