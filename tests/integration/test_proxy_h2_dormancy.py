"""An HTTP/2 connection that has opened no stream puts its nghttp2 session away (issue 14:
memory per idle h2 connection): it sleeps once SETTINGS are exchanged, wakes for the client's
first frame with everything the client had said still in force (python3-h2 as the client, a
real upstream behind), sleeps again after a PING, and a graceful stop still tells it GOAWAY;
over TLS too. /metrics counts the sleepers."""
import signal
import socket
import ssl
import unittest

import h2.config
import h2.connection
import h2.events
import h2.settings

import harness
from proxy_harness import Proxy


def sleepers(proxy):
    return proxy.metric("portico_h2_dormant_connections")


class Client:
    """python3-h2 over a socket: what it sends goes at once; read() handles one recv."""

    def __init__(self, sock, settings=None):
        self.sock = sock
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.conn.initiate_connection()
        if settings:
            self.conn.update_settings(settings)
        self.events = []
        self.flush()

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def read_until(self, done, what):
        while not done():
            data = self.sock.recv(65536)
            self.assert_data(data, what)
            for e in self.conn.receive_data(data):
                self.events.append(e)
                if isinstance(e, h2.events.DataReceived):
                    self.conn.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
            self.flush()

    @staticmethod
    def assert_data(data, what):
        if not data:
            raise AssertionError(f"the proxy closed the connection waiting for {what}")

    def settled(self):
        return (any(isinstance(e, h2.events.RemoteSettingsChanged) for e in self.events) and
                any(isinstance(e, h2.events.SettingsAcknowledged) for e in self.events))

    def get(self, path):
        sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(sid, [(":method", "GET"), (":scheme", "http"),
                                     (":authority", "x"), (":path", path)], end_stream=True)
        self.flush()
        body, sizes = b"", []

        def ended():
            return any(isinstance(e, h2.events.StreamEnded) and e.stream_id == sid
                       for e in self.events)
        self.read_until(ended, f"stream {sid}")
        for e in self.events:
            if isinstance(e, h2.events.DataReceived) and e.stream_id == sid:
                body += e.data
                sizes.append(len(e.data))
        return body, sizes


class H2Dormancy(unittest.TestCase):
    def setUp(self):
        self.backend = harness.Backend(workers=1)
        self.addCleanup(self.backend.stop)
        self.proxy = Proxy([f"127.0.0.1:{self.backend.port}"], workers=1, tls=True)
        self.addCleanup(self.proxy.stop)

    def connect(self, settings=None):
        s = socket.create_connection(("127.0.0.1", self.proxy.port), timeout=10)
        self.addCleanup(s.close)
        c = Client(s, settings)
        c.read_until(c.settled, "SETTINGS both ways")
        return c

    def test_sleeps_and_wakes_with_the_clients_settings(self):
        # A 5-byte stream window: a session that forgot it would send hello in one frame.
        c = self.connect({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 5})
        harness.wait_until(lambda: sleepers(self.proxy) == 1, what="the connection asleep")
        c.conn.ping(b"12345678")
        c.flush()
        c.read_until(lambda: any(isinstance(e, h2.events.PingAckReceived) for e in c.events),
                     "the PING's answer")
        harness.wait_until(lambda: sleepers(self.proxy) == 1, what="asleep again")
        body, sizes = c.get("/hello")
        self.assertEqual(body, b"hello world\n")
        self.assertEqual(sizes[0], 5)
        self.assertEqual(sleepers(self.proxy), 0)
        self.assertEqual(c.get("/hello")[0], b"hello world\n")

    def test_many_sleepers_all_wake(self):
        clients = [self.connect() for _ in range(50)]
        harness.wait_until(lambda: sleepers(self.proxy) == 50, what="fifty asleep")
        for c in clients:
            self.assertEqual(c.get("/hello")[0], b"hello world\n")
        self.assertEqual(sleepers(self.proxy), 0)

    def test_over_tls(self):
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols(["h2"])
        raw = socket.create_connection(("127.0.0.1", self.proxy.tls_port), timeout=10)
        s = ctx.wrap_socket(raw, server_hostname="localhost")
        self.addCleanup(s.close)
        c = Client(s)
        c.read_until(c.settled, "SETTINGS both ways")
        harness.wait_until(lambda: sleepers(self.proxy) == 1, what="the TLS connection asleep")
        self.assertEqual(c.get("/hello")[0], b"hello world\n")

    def test_a_graceful_stop_tells_a_sleeper_goaway(self):
        c = self.connect()
        harness.wait_until(lambda: sleepers(self.proxy) == 1, what="the connection asleep")
        self.proxy.process.proc.send_signal(signal.SIGTERM)
        c.read_until(lambda: any(isinstance(e, h2.events.ConnectionTerminated)
                                 for e in c.events), "GOAWAY")
        self.assertEqual(self.proxy.process.proc.wait(timeout=30), 0)


if __name__ == "__main__":
    unittest.main()
