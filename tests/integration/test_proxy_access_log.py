"""The access log: off unless a listener names a file; one line per request with the client,
protocol, method, authority, path, status, bytes and phase times, upstream and retries; text or
JSON lines."""
import json
import os
import re
import shutil
import signal
import tempfile
import unittest

import harness
from proxy_clients import curl
from proxy_harness import Proxy, toml_string


class AccessLog(unittest.TestCase):
    def setUp(self):
        self.backend = harness.Backend(workers=1, unix=True)
        self.addCleanup(self.backend.stop)
        self.tmp = tempfile.mkdtemp(prefix="portico-log-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def run_requests(self, fmt):
        path = os.path.join(self.tmp, f"access-{fmt}.log")
        proxy = Proxy([f"unix:{self.backend.sock_path}"], workers=2,
                      listener_options={"access_log": toml_string(path),
                                        "access_log_format": f'"{fmt}"'})
        self.addCleanup(proxy.stop)
        self.assertEqual(curl(proxy, "h1", "/hello?x=1").status, 200)
        self.assertEqual(curl(proxy, "h2c", "/status/404").status, 404)
        self.assertEqual(curl(proxy, "h1", "/echo", ["--data-binary", "12345"]).status, 200)
        # Lines are written once a second, and at exit: stop to read them all.
        proxy.process.proc.send_signal(signal.SIGTERM)
        self.assertEqual(proxy.process.proc.wait(timeout=20), 0)
        with open(path) as f:
            return f.read().splitlines()

    def test_text_lines(self):
        lines = self.run_requests("text")
        self.assertEqual(len(lines), 3, lines)
        by_path = {re.search(r'"\S+ (\S+) HTTP', l).group(1): l for l in lines}
        hello = by_path["/hello?x=1"]
        self.assertRegex(hello, r'^127\.0\.0\.1 - - \[\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d \+0000\] '
                                r'"GET /hello\?x=1 HTTP/1\.1" 200 12 in=0 proto=h1 ')
        self.assertRegex(hello, r'queue=\d+\.\d{6} connect=\d+\.\d{6} ttfb=\d+\.\d{6} '
                                r'total=\d+\.\d{6} upstream=unix:\S+ retries=0$')
        self.assertIn('" 404 ', by_path["/status/404"])
        self.assertIn("proto=h2c", by_path["/status/404"])
        self.assertIn("200 5 in=5", by_path["/echo"])

    def test_json_lines(self):
        lines = self.run_requests("json")
        docs = [json.loads(l) for l in lines]
        self.assertEqual(len(docs), 3)
        echo = next(d for d in docs if d["path"] == "/echo")
        self.assertEqual((echo["method"], echo["status"], echo["bytes_in"], echo["bytes_out"]),
                         ("POST", 200, 5, 5))
        self.assertEqual(echo["protocol"], "h1")
        self.assertTrue(echo["upstream"].startswith("unix:"))
        for d in docs:
            self.assertGreaterEqual(d["total"], d["ttfb"])
            self.assertRegex(d["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")

    def test_bytes_out_is_each_requests_own_on_a_keep_alive_connection(self):
        # Three requests on one HTTP/1.1 connection: each line counts its own response's body,
        # not the connection's bytes so far (the soak found 509187 logged for a 1 KB answer).
        path = os.path.join(self.tmp, "access-keepalive.log")
        proxy = Proxy([f"unix:{self.backend.sock_path}"], workers=1,
                      listener_options={"access_log": toml_string(path),
                                        "access_log_format": '"$path $bytes_out"'})
        self.addCleanup(proxy.stop)
        with harness.connection(proxy.port) as (s, f):
            for n in (1000, 10, 300):
                s.sendall(f"GET /bytes?n={n} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                self.assertEqual(len(harness.read_http1_response(f).body), n)
        proxy.process.proc.send_signal(signal.SIGTERM)
        self.assertEqual(proxy.process.proc.wait(timeout=20), 0)
        with open(path) as f:
            self.assertEqual(f.read().splitlines(),
                             ["/bytes?n=1000 1000", "/bytes?n=10 10", "/bytes?n=300 300"])

    def test_bytes_out_is_each_streams_own_on_http2(self):
        # HTTP/2 streams one after another on one connection (their exchange objects are
        # recycled within the worker): each line counts its own stream's body.
        import h2.config
        import h2.connection
        import h2.events
        path = os.path.join(self.tmp, "access-h2.log")
        proxy = Proxy([f"unix:{self.backend.sock_path}"], workers=1,
                      listener_options={"access_log": toml_string(path),
                                        "access_log_format": '"$path $bytes_out"'})
        self.addCleanup(proxy.stop)
        with harness.connection(proxy.port) as (s, _):
            c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
            c.initiate_connection()
            for i, n in enumerate((1000, 10, 300)):
                sid = 2 * i + 1
                c.send_headers(sid, [(":method", "GET"), (":scheme", "http"),
                                     (":authority", "x"), (":path", f"/bytes?n={n}")],
                               end_stream=True)
                s.sendall(c.data_to_send())
                got, done = 0, False
                while not done:
                    for ev in c.receive_data(s.recv(65536)):
                        if isinstance(ev, h2.events.DataReceived):
                            got += len(ev.data)
                            c.acknowledge_received_data(ev.flow_controlled_length, sid)
                        done = done or isinstance(ev, h2.events.StreamEnded)
                    s.sendall(c.data_to_send())
                self.assertEqual(got, n)
        proxy.process.proc.send_signal(signal.SIGTERM)
        self.assertEqual(proxy.process.proc.wait(timeout=20), 0)
        with open(path) as f:
            self.assertEqual(f.read().splitlines(),
                             ["/bytes?n=1000 1000", "/bytes?n=10 10", "/bytes?n=300 300"])

    def test_answers_of_the_proxys_own_are_logged_too(self):
        # A direct response, a redirect and a request no route matched each get their line,
        # as a proxied one does, with no upstream.
        path = os.path.join(self.tmp, "access-own.log")
        routes = r"""
[[route]]
path_prefix = "/private/"
direct_response = { status = 403, body = "no\n" }

[[route]]
host = "old.test"
redirect = { host = "new.test", code = 308 }
"""
        proxy = Proxy([f"unix:{self.backend.sock_path}"], workers=1, routes_first=routes,
                      catch_all=False,
                      listener_options={"access_log": toml_string(path),
                                        "access_log_format": '"json"'})
        self.addCleanup(proxy.stop)
        self.assertEqual(curl(proxy, "h1", "/private/x").status, 403)
        self.assertEqual(curl(proxy, "h2c", "/a", ["-H", "Host: old.test"]).status, 308)
        self.assertEqual(curl(proxy, "h1", "/nowhere").status, 404)
        proxy.process.proc.send_signal(signal.SIGTERM)
        self.assertEqual(proxy.process.proc.wait(timeout=20), 0)
        with open(path) as f:
            docs = [json.loads(l) for l in f.read().splitlines()]
        self.assertEqual(sorted((d["path"], d["status"], d["upstream"]) for d in docs),
                         [("/a", 308, ""), ("/nowhere", 404, ""), ("/private/x", 403, "")])

    def test_off_by_default(self):
        # No listener names a file: portico holds no file open but its own output.
        proxy = Proxy([f"unix:{self.backend.sock_path}"], workers=1)
        self.addCleanup(proxy.stop)
        self.assertEqual(curl(proxy, "h1", "/hello").status, 200)
        fd_dir = f"/proc/{proxy.pid}/fd"
        files = [os.readlink(os.path.join(fd_dir, fd)) for fd in os.listdir(fd_dir)]
        self.assertEqual([f for f in files if f.startswith("/") and not f.startswith("/dev/")
                          and f != proxy.process.log_path], [])

    def test_what_was_asked_what_was_sent_and_by_whom(self):
        # Issue 22, defect 4: the path logged was the rewritten one, a 502 logged 0 bytes
        # although "Bad Gateway" was sent, and there was no user agent, referer, or choice of
        # fields.
        path = os.path.join(self.tmp, "access-fields.log")
        routes = f"""
[[route]]
name = "api"
path_prefix = "/api/"
prefix_rewrite = "/"
cluster = "app"

[[route]]
path_prefix = "/down/"
cluster = "down"

[[cluster]]
name = "down"
endpoints = ["unix:{self.tmp}/nobody-listens.sock"]
"""
        fmt = ('$status $bytes_out $route "$request" up=$upstream_path '
               'ua="$user_agent" ref="$referer" t=$http_x_tenant')
        proxy = Proxy([f"unix:{self.backend.sock_path}"], workers=1, routes_first=routes,
                      listener_options={"access_log": toml_string(path),
                                        "access_log_format": toml_string(fmt)})
        self.addCleanup(proxy.stop)
        self.assertEqual(curl(proxy, "h1", "/api/hello", ["-A", "tester/1", "-e",
                                                          "http://a.test/", "-H",
                                                          "X-Tenant: blue"]).status, 200)
        reply = curl(proxy, "h2c", "/down/x", ["-A", "tester/2"])
        self.assertEqual(reply.status, 502)
        proxy.process.proc.send_signal(signal.SIGTERM)
        self.assertEqual(proxy.process.proc.wait(timeout=20), 0)
        with open(path) as f:
            lines = sorted(f.read().splitlines())
        self.assertEqual(lines, [
            '200 12 api "GET /api/hello HTTP/1.1" up=/hello ua="tester/1" '
            'ref="http://a.test/" t=blue',
            f'502 {len(reply.body)} */down/ "GET /down/x HTTP/2" up=/down/x ua="tester/2" '
            'ref="-" t=-'])
        self.assertEqual(reply.body, b"Bad Gateway\n")

    def test_requests_refused_for_their_head_are_logged_and_counted(self):
        # Refused before any route sees them (malformed, a target or header section too long, a
        # body announced too large), on HTTP/1.1 and HTTP/2: each has its line, with the route
        # "none", and is counted in portico_requests_total as Portico's own answer.
        import h2.config
        import h2.connection
        import h2.events
        path = os.path.join(self.tmp, "access-refused.log")
        proxy = Proxy([f"unix:{self.backend.sock_path}"], workers=1,
                      server_options={"max_body_bytes": "100", "max_header_bytes": "16384",
                                      "header_timeout": "0.5"},
                      listener_options={"access_log": toml_string(path),
                                        "access_log_format": '"json"'})
        self.addCleanup(proxy.stop)
        long_target = "/" + "a" * 9000
        for request, status in [
                (b"GET /a b HTTP/1.1\r\nHost: x\r\n\r\n", 400),
                (f"GET {long_target} HTTP/1.1\r\nHost: x\r\n\r\n".encode(), 414),
                (b"GET /big HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 20000 + b"\r\n\r\n",
                 431),
                (b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n", 413),
                (b"GET /slow HTTP/1.1\r\nHost: x\r\n", 408)]:  # never finished
            with harness.connection(proxy.port) as (s, f):
                s.sendall(request)
                self.assertEqual(harness.read_http1_response(f).status, status, request[:40])
        with harness.connection(proxy.port) as (s, _):
            c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True,
                                                                     validate_outbound_headers=False))
            c.initiate_connection()
            base = [(":method", "POST"), (":scheme", "http"), (":authority", "x")]
            c.send_headers(1, base + [(":path", long_target)], end_stream=True)
            c.send_headers(3, base + [(":path", "/upload"), ("content-length", "1000")])
            c.send_headers(5, base + [(":path", "/big"), ("x-big", "b" * 20000)], end_stream=True)
            s.sendall(c.data_to_send())
            statuses = {}
            while len(statuses) < 3:
                data = s.recv(65536)
                self.assertTrue(data, statuses)
                for ev in c.receive_data(data):
                    if isinstance(ev, h2.events.ResponseReceived):
                        statuses[ev.stream_id] = int(dict(ev.headers)[b":status"])
                s.sendall(c.data_to_send())
            self.assertEqual(statuses, {1: 414, 3: 413, 5: 431})
        for protocol, code, n in [("h1", "400", 1), ("h1", "414", 1), ("h1", "431", 1),
                                  ("h1", "413", 1), ("h1", "408", 1), ("h2c", "414", 1),
                                  ("h2c", "413", 1), ("h2c", "431", 1)]:
            self.assertEqual(proxy.metric("portico_requests_total", protocol=protocol,
                                          route="none", code=code, answered_by="proxy"), n,
                             (protocol, code))
        proxy.process.proc.send_signal(signal.SIGTERM)
        self.assertEqual(proxy.process.proc.wait(timeout=20), 0)
        with open(path) as f:
            docs = [json.loads(l) for l in f.read().splitlines()]
        self.assertEqual(sorted((d["protocol"], d["status"], d["method"], d["path"][:10],
                                 d["route"], d["upstream"]) for d in docs),
                         [("h1", 400, "", "", "none", ""),  # a request line refused whole
                          ("h1", 408, "GET", "/slow", "none", ""),
                          ("h1", 413, "POST", "/upload", "none", ""),
                          ("h1", 414, "GET", "", "none", ""),
                          ("h1", 431, "GET", "/big", "none", ""),
                          ("h2c", 413, "POST", "/upload", "none", ""),
                          ("h2c", 414, "POST", long_target[:10], "none", ""),
                          ("h2c", 431, "POST", "/big", "none", "")])

    def test_a_body_refused_midway_is_logged_with_its_413(self):
        # A body with no length that passes max_body_bytes once the route has it: the client is
        # answered 413 by the session, and the line and the series say 413, not 499.
        import h2.config
        import h2.connection
        import h2.events
        path = os.path.join(self.tmp, "access-midway.log")
        proxy = Proxy([f"unix:{self.backend.sock_path}"], workers=1,
                      server_options={"max_body_bytes": "100"},
                      listener_options={"access_log": toml_string(path),
                                        "access_log_format": '"$protocol $status $path"'})
        self.addCleanup(proxy.stop)
        with harness.connection(proxy.port) as (s, f):
            s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                      b"c8\r\n" + b"x" * 200 + b"\r\n")
            self.assertEqual(harness.read_http1_response(f).status, 413)
        with harness.connection(proxy.port) as (s, _):
            c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
            c.initiate_connection()
            c.send_headers(1, [(":method", "POST"), (":scheme", "http"), (":authority", "x"),
                               (":path", "/echo")])
            c.send_data(1, b"x" * 200)
            s.sendall(c.data_to_send())
            status = None
            while status is None:
                data = s.recv(65536)
                self.assertTrue(data)
                for ev in c.receive_data(data):
                    if isinstance(ev, h2.events.ResponseReceived):
                        status = int(dict(ev.headers)[b":status"])
            self.assertEqual(status, 413)
        harness.wait_until(lambda: proxy.metric("portico_requests_total", protocol="h2c",
                                                code="413") == 1, what="the h2c 413 counted")
        for protocol in ("h1", "h2c"):
            self.assertEqual(proxy.metric("portico_requests_total", protocol=protocol,
                                          code="413", answered_by="proxy"), 1, protocol)
            self.assertEqual(proxy.metric("portico_requests_total", protocol=protocol,
                                          code="499"), 0, protocol)
        proxy.process.proc.send_signal(signal.SIGTERM)
        self.assertEqual(proxy.process.proc.wait(timeout=20), 0)
        with open(path) as f:
            self.assertEqual(sorted(f.read().splitlines()), ["h1 413 /echo", "h2c 413 /echo"])

if __name__ == "__main__":
    unittest.main()
