"""Trailers through the proxy, both ways: an HTTP/1.1 chunked request's trailer section and an
HTTP/2 request's trailing HEADERS reach the backend (over a chunked HTTP/1.1 upstream request),
whose echo sends them back as response trailers, which reach the client again. Over cleartext
and TLS clients, to unix-socket and TCP upstreams. (h2c Upgrade carries no request body, so it
has no trailers to send.)"""
import socket
import ssl
import unittest

import h2.config
import h2.connection
import h2.events

import harness
from proxy_harness import Proxy


def read_chunked_with_trailers(f):
    body, trailers = b"", {}
    while True:
        size = int(f.readline().split(b";")[0], 16)
        if size == 0:
            break
        body += f.read(size)
        f.readline()
    while True:
        line = f.readline()
        if line in (b"\r\n", b""):
            break
        k, _, v = line.decode().partition(":")
        trailers[k.strip().lower()] = v.strip()
    return body, trailers


def connect(port, tls, alpn):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    if not tls:
        return s
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols([alpn])
    s = ctx.wrap_socket(s, server_hostname="localhost")
    assert s.selected_alpn_protocol() == alpn, s.selected_alpn_protocol()
    return s


class ProxyTrailers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.backend = harness.Backend(workers=1, unix=True)
        cls.proxies = {}
        try:
            cls.proxies["unix"] = Proxy([f"unix:{cls.backend.sock_path}"], tls=True)
            cls.proxies["tcp"] = Proxy([f"127.0.0.1:{cls.backend.port}"], tls=True)
            cls.proxies["h2c"] = Proxy([f"unix:{cls.backend.sock_path}"], tls=True,
                                       cluster_options={"protocol": '"h2c"'})
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for p in cls.proxies.values():
            p.stop()
        cls.backend.stop()

    def test_backend_echoes_trailers_directly(self):
        self.http1_roundtrip(self.backend.port, tls=False)

    def test_http1_chunked_trailers(self):
        for upstream, proxy in self.proxies.items():
            for tls in (False, True):
                with self.subTest(upstream=upstream, tls=tls):
                    self.http1_roundtrip(proxy.tls_port if tls else proxy.port, tls)

    def test_http2_trailers(self):
        for upstream, proxy in self.proxies.items():
            for tls in (False, True):
                with self.subTest(upstream=upstream, tls=tls):
                    self.http2_roundtrip(proxy.tls_port if tls else proxy.port, tls)

    def http1_roundtrip(self, port, tls):
        with connect(port, tls, "http/1.1") as s:
            s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                      b"TE: trailers\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n"
                      b"X-Checksum: abc123\r\nX-Count: 2\r\n\r\n")
            f = s.makefile("rb")
            self.assertIn(b" 200 ", f.readline())
            headers = {}
            while True:
                line = f.readline()
                if line == b"\r\n":
                    break
                k, _, v = line.decode().partition(":")
                headers[k.strip().lower()] = v.strip()
            self.assertEqual(headers.get("transfer-encoding"), "chunked")
            body, trailers = read_chunked_with_trailers(f)
        self.assertEqual(body, b"hello world")
        self.assertEqual(trailers, {"x-checksum": "abc123", "x-count": "2"})

    def http2_roundtrip(self, port, tls):
        sock = connect(port, tls, "h2")
        self.addCleanup(sock.close)
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        conn.initiate_connection()
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, [(":method", "POST"), (":scheme", "https" if tls else "http"),
                                (":authority", "x"), (":path", "/echo"), ("te", "trailers")])
        conn.send_data(sid, b"hello trailers")
        conn.send_headers(sid, [("x-checksum", "h2sum")], end_stream=True)
        sock.sendall(conn.data_to_send())
        body, trailers, ended, status = b"", None, False, None
        while not ended:
            data = sock.recv(65536)
            self.assertTrue(data)
            for ev in conn.receive_data(data):
                if isinstance(ev, h2.events.ResponseReceived):
                    status = dict(ev.headers)[b":status"]
                elif isinstance(ev, h2.events.DataReceived):
                    body += ev.data
                    conn.acknowledge_received_data(ev.flow_controlled_length, sid)
                elif isinstance(ev, h2.events.TrailersReceived):
                    trailers = dict(ev.headers)
                elif isinstance(ev, h2.events.StreamEnded):
                    ended = True
                elif isinstance(ev, h2.events.StreamReset):
                    self.fail(f"reset {ev.error_code}")
            sock.sendall(conn.data_to_send())
        self.assertEqual(status, b"200")
        self.assertEqual(body, b"hello trailers")
        self.assertEqual(trailers, {b"x-checksum": b"h2sum"})


if __name__ == "__main__":
    unittest.main()
