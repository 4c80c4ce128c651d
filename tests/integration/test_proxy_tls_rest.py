"""A quiet TLS connection gives its record buffers back: OpenSSL's read and write buffers (about
34 KiB) are kept while a connection is busy, so that no record pays for them, and released a
second after its last read or write; the next record makes them again. /metrics counts the
connections resting (portico_tls_resting_connections). One holding bytes OpenSSL has not
processed (a record half here) keeps them, and the record completes as if nothing happened."""
import socket
import ssl
import unittest

import harness
from proxy_harness import Proxy
from test_proxy_tls_records import RecordsTogether

GET = b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"
ANSWER = b"hello world\n"


def client_context():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


def get(conn):
    """One GET on a TLS socket, read to the end of its body."""
    conn.sendall(GET)
    got = b""
    while not got.endswith(ANSWER):
        data = conn.recv(65536)
        if not data:
            raise AssertionError(f"closed after {got!r}")
        got += data
    return got


class TlsRest(unittest.TestCase):
    def setUp(self):
        self.backend = harness.Backend(workers=1)
        self.addCleanup(self.backend.stop)
        self.proxy = Proxy([f"127.0.0.1:{self.backend.port}"], workers=1, tls=True)
        self.addCleanup(self.proxy.stop)

    def resting(self):
        return self.proxy.metric("portico_tls_resting_connections")

    def connect(self):
        raw = socket.create_connection(("127.0.0.1", self.proxy.tls_port), timeout=10)
        conn = client_context().wrap_socket(raw, server_hostname="localhost")
        self.addCleanup(conn.close)
        return conn

    def test_quiet_connections_rest_and_serve_on_waking(self):
        conns = [self.connect() for _ in range(20)]
        for c in conns:
            self.assertTrue(get(c).startswith(b"HTTP/1.1 200"))
        harness.wait_until(lambda: self.resting() == 20, timeout=15,
                           what="20 quiet TLS connections resting")
        for c in conns:  # each wakes: its buffers are made again, and it answers
            self.assertTrue(get(c).startswith(b"HTTP/1.1 200"))
        harness.wait_until(lambda: self.resting() == 20, timeout=15,
                           what="the 20 resting again")
        for c in conns[:5]:
            c.close()
        harness.wait_until(lambda: self.resting() == 15, timeout=15,
                           what="closed connections no longer counted")

    def test_a_connection_holding_half_a_record_keeps_its_buffers(self):
        half = RecordsTogether(self.proxy.tls_port, "http/1.1")
        self.addCleanup(half.sock.close)
        half.tls.write(GET)
        record = half.outgoing.read()
        half.sock.sendall(record[:-10])
        # A connection quiet since after the half record: once it rests, the other one's rest
        # (due earlier, on its own timer) has been tried too.
        control = self.connect()
        get(control)
        harness.wait_until(lambda: self.resting() >= 1, timeout=15, what="the control resting")
        self.assertEqual(self.resting(), 1, "the connection holding half a record rested")
        half.sock.sendall(record[-10:])
        got = half.read_until(lambda b: b.endswith(ANSWER))
        self.assertTrue(got.startswith(b"HTTP/1.1 200"), got)


if __name__ == "__main__":
    unittest.main()
