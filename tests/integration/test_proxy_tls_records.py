"""TLS records that arrive together: the client listener reads ahead (one read(2) takes what
the socket holds), so records after the first wait inside OpenSSL, where no socket event will
announce them. Each test sends several records in one TCP write (python's ssl over memory BIOs
makes the records; one sendall sends them) and expects every one served. Before the reads
counted OpenSSL's unprocessed records as pending, the second request here waited forever."""
import socket
import ssl
import unittest

import harness
from proxy_harness import Proxy


class RecordsTogether:
    """A TLS client over memory BIOs: records are made first and sent when asked, together."""

    def __init__(self, port, alpn):
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols([alpn])
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = ctx.wrap_bio(self.incoming, self.outgoing, server_hostname="localhost")
        while True:
            try:
                self.tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                self.sock.sendall(self.outgoing.read())
                self.feed()
        self.sock.sendall(self.outgoing.read())
        self.alpn = self.tls.selected_alpn_protocol()

    def feed(self):
        data = self.sock.recv(65536)
        if not data:
            raise AssertionError("the proxy closed the connection")
        self.incoming.write(data)

    def records(self, *parts):
        """Each part as its own record (one SSLObject.write each), sent in one sendall."""
        for p in parts:
            self.tls.write(p)
        self.sock.sendall(self.outgoing.read())

    def read_until(self, done):
        got = b""
        while not done(got):
            try:
                got += self.tls.read(65536)
            except ssl.SSLWantReadError:
                self.sock.sendall(self.outgoing.read())  # a TLS 1.3 key update, tickets
                self.feed()
        return got


class TlsRecordsTogether(unittest.TestCase):
    def setUp(self):
        self.backend = harness.Backend(workers=1)
        self.addCleanup(self.backend.stop)
        self.proxy = Proxy([f"127.0.0.1:{self.backend.port}"], workers=1, tls=True)
        self.addCleanup(self.proxy.stop)

    def test_two_http1_requests_in_two_records_of_one_segment(self):
        c = RecordsTogether(self.proxy.tls_port, "http/1.1")
        self.addCleanup(c.sock.close)
        get = b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"
        c.records(get, get)
        got = c.read_until(lambda b: b.count(b"hello world\n") == 2)
        self.assertEqual(got.count(b"HTTP/1.1 200"), 2)

    def test_an_h2_preface_settings_and_request_in_three_records(self):
        c = RecordsTogether(self.proxy.tls_port, "h2")
        self.addCleanup(c.sock.close)
        self.assertEqual(c.alpn, "h2")
        preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
        settings = bytes.fromhex("000000040000000000")
        # GET http://x/hello: :method GET, :scheme http, :authority x, :path /hello (literal).
        block = bytes.fromhex("8286") + b"\x01\x01x" + b"\x04\x06/hello"
        headers = len(block).to_bytes(3, "big") + bytes.fromhex("0105") + (1).to_bytes(
            4, "big") + block
        c.records(preface, settings, headers)
        got = c.read_until(lambda b: b"hello world\n" in b)
        self.assertIn(b"hello world\n", got)


if __name__ == "__main__":
    unittest.main()
