"""PROXY protocol (HAProxy's) both ways, against HAProxy itself. In front of Portico: HAProxy
with send-proxy-v2 and send-proxy connects to a listener with proxy_protocol = true, and the
client's own address (a second loopback address, 127.0.0.2) is what Portico forwards in
X-Forwarded-For and logs. Behind Portico: a cluster with send_proxy_protocol = "v2" or "v1"
reaches an HAProxy bind with accept-proxy, which answers with the source it was told; two
clients never share a connection (a header names one). Raw peers: no header, a malformed one,
one trickled byte by byte, one that stops half way."""
import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

import harness
from harness import wait_until
from proxy_harness import Proxy, toml_string


def get(port, path, source="127.0.0.2", prefix=b""):
    """GET path on a connection from source: (status line, body)."""
    s = socket.socket()
    s.settimeout(10)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    with s, s.makefile("rb") as f:
        s.sendall(prefix + f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        r = harness.read_http1_response(f)
        return r.status, r.body.decode()


def unanswered(port, data):
    """What the server says to data before it closes (reset or not)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        got = b""
        try:
            while chunk := s.recv(4096):
                got += chunk
        except ConnectionResetError:
            pass
        return got


class HAProxy:
    def __init__(self, tmp, config):
        harness.need("haproxy")
        self.path = os.path.join(tmp, "haproxy.cfg")
        with open(self.path, "w") as f:
            f.write(config)
        check = subprocess.run(["haproxy", "-c", "-f", self.path], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
        self.process = harness.Process(["haproxy", "-db", "-f", self.path],
                                       os.path.join(tmp, "haproxy.log"))

    def stop(self):
        self.process.stop()


DEFAULTS = """global
  maxconn 256
defaults
  timeout connect 5s
  timeout client 30s
  timeout server 30s
"""


class ProxyProtocol(unittest.TestCase):
    def setUp(self):
        self.backend = harness.Backend(workers=1)
        self.addCleanup(self.backend.stop)
        self.tmp = tempfile.mkdtemp(prefix="portico-pp-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def test_haproxy_in_front_sends_the_client_address(self):
        self.log = os.path.join(self.tmp, "access.log")
        proxy = Proxy([f"127.0.0.1:{self.backend.port}"], workers=2,
                      listener_options={"proxy_protocol": "true",
                                        "access_log": toml_string(self.log)})
        self.addCleanup(proxy.stop)
        v1, v2 = harness.free_port(), harness.free_port()
        hap = HAProxy(self.tmp, DEFAULTS + f"""
frontend v2
  mode tcp
  bind 127.0.0.1:{v2}
  default_backend portico_v2
backend portico_v2
  mode tcp
  server p 127.0.0.1:{proxy.port} send-proxy-v2
frontend v1
  mode tcp
  bind 127.0.0.1:{v1}
  default_backend portico_v1
backend portico_v1
  mode tcp
  server p 127.0.0.1:{proxy.port} send-proxy
""")
        self.addCleanup(hap.stop)
        wait_until(lambda: harness.port_open("127.0.0.1", v1) and
                   harness.port_open("127.0.0.1", v2), what="haproxy")
        for port, source in ((v2, "127.0.0.2"), (v1, "127.0.0.3")):
            status, body = get(port, "/headers", source)
            self.assertEqual(status, 200, body)
            self.assertIn(f"x-forwarded-for: {source}\n", body)
        def lines():
            if not os.path.exists(self.log):
                return 0
            with open(self.log) as f:
                return f.read().count("GET /headers")
        wait_until(lambda: lines() == 2, what="two log lines")
        with open(self.log) as f:
            text = f.read()
        self.assertIn("127.0.0.2", text)
        self.assertIn("127.0.0.3", text)

    def test_portico_sends_the_header_to_haproxy_behind_it(self):
        b1, b2 = harness.free_port(), harness.free_port()
        hap = HAProxy(self.tmp, DEFAULTS + f"""
frontend accept_v2
  mode http
  bind 127.0.0.1:{b2} accept-proxy
  http-request return status 200 content-type text/plain lf-string "src=%[src] dst=%[dst]\\n"
frontend accept_v1
  mode http
  bind 127.0.0.1:{b1} accept-proxy
  http-request return status 200 content-type text/plain lf-string "src=%[src] dst=%[dst]\\n"
""")
        self.addCleanup(hap.stop)
        wait_until(lambda: harness.port_open("127.0.0.1", b1) and
                   harness.port_open("127.0.0.1", b2), what="haproxy")
        routes = "\n".join([
            "[[cluster]]", 'name = "v2"', f'endpoints = ["127.0.0.1:{b2}"]',
            'send_proxy_protocol = "v2"', "",
            "[[cluster]]", 'name = "v1"', f'endpoints = ["127.0.0.1:{b1}"]',
            'send_proxy_protocol = "v1"', "",
            "[[route]]", 'path_prefix = "/v2"', 'cluster = "v2"', "",
            "[[route]]", 'path_prefix = "/v1"', 'cluster = "v1"', ""])
        proxy = Proxy([f"127.0.0.1:{self.backend.port}"], workers=1, routes_first=routes)
        self.addCleanup(proxy.stop)
        for path in ("/v2", "/v1"):
            # One after another from two addresses: the second must not ride the first's
            # connection, whose header named the first.
            for source in ("127.0.0.2", "127.0.0.3", "127.0.0.2"):
                status, body = get(proxy.port, path, source)
                self.assertEqual(status, 200, body)
                self.assertEqual(body, f"src={source} dst=127.0.0.1\n", path)

    def test_the_header_comes_before_tls(self):
        import ssl
        proxy = Proxy([f"127.0.0.1:{self.backend.port}"], workers=1, tls=True,
                      tls_listener_options={"proxy_protocol": "true"})
        self.addCleanup(proxy.stop)
        ctx = ssl.create_default_context(cafile=proxy.cert)
        raw = socket.create_connection(("127.0.0.1", proxy.tls_port), timeout=10)
        raw.sendall(b"PROXY TCP4 192.0.2.9 127.0.0.1 5000 443\r\n")
        with ctx.wrap_socket(raw, server_hostname="localhost") as s, s.makefile("rb") as f:
            s.sendall(b"GET /headers HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            body = harness.read_http1_response(f).body.decode()
        self.assertIn("x-forwarded-for: 192.0.2.9\n", body)
        self.assertIn("x-forwarded-proto: https\n", body)

    def test_raw_peers_without_or_with_a_bad_header(self):
        proxy = Proxy([f"127.0.0.1:{self.backend.port}"], workers=1,
                      listener_options={"proxy_protocol": "true"},
                      server_options={"header_timeout": 1})
        self.addCleanup(proxy.stop)
        # No header: closed unanswered, and said why.
        self.assertEqual(unanswered(proxy.port, b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"), b"")
        wait_until(lambda: "PROXY protocol header missing" in proxy.read_log(),
                   what="the refusal logged")
        self.assertEqual(unanswered(proxy.port, b"PROXY TCP4 1.2.3.4 5.6.7.8 99999 80\r\n"), b"")
        # Byte by byte is fine.
        s = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        with s, s.makefile("rb") as f:
            for b in b"PROXY TCP4 192.0.2.7 127.0.0.1 4000 80\r\n":
                s.sendall(bytes([b]))
            s.sendall(b"GET /headers HTTP/1.1\r\nHost: x\r\n\r\n")
            body = harness.read_http1_response(f).body.decode()
        self.assertIn("x-forwarded-for: 192.0.2.7\n", body)
        # Half a header, then nothing: closed at header_timeout (1 s), which runs from the
        # header's first byte (so from no sooner than `start`), and counted as that timeout.
        before = proxy.metric("portico_timeouts_total", kind="client_header")
        s = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        with s:
            start = time.monotonic()
            s.sendall(b"PROXY TCP4 192.0.2.7 ")
            self.assertEqual(s.recv(100), b"")
            elapsed = time.monotonic() - start
        self.assertGreater(elapsed, 1 - 0.1)
        self.assertLess(elapsed, 5)
        wait_until(lambda: proxy.metric("portico_timeouts_total", kind="client_header")
                   == before + 1, what="the header timeout counted")


if __name__ == "__main__":
    unittest.main()
