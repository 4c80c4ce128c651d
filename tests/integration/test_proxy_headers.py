"""Header translation through the proxy, seen from the backend's /headers: Host from
:authority, cookie crumbs joined, hop-by-hop fields dropped, X-Forwarded-For/-Proto, Forwarded
and a request id added. And invalid HTTP/2 fields (upper case, connection-specific, CR/LF/NUL)
refused with RST_STREAM, never forwarded, without harming the connection's other streams."""
import socket
import unittest

import harness
from proxy_clients import curl
from proxy_harness import Proxy

import h2.config
import h2.connection
import h2.events


def seen(body):
    lines = body.decode().splitlines()
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(": ")
        fields.setdefault(name, []).append(value)
    return lines[0], fields


class H2Client:
    """A frame-level HTTP/2 client that sends what it is told, valid or not."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        cfg = h2.config.H2Configuration(client_side=True, validate_outbound_headers=False,
                                        normalize_outbound_headers=False,
                                        validate_inbound_headers=False)
        self.conn = h2.connection.H2Connection(config=cfg)
        self.conn.initiate_connection()
        self.flush()

    def flush(self):
        self.sock.sendall(self.conn.data_to_send())

    def request(self, headers, body=None):
        sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(sid, headers, end_stream=body is None)
        if body is not None:
            self.conn.send_data(sid, body, end_stream=True)
        self.flush()
        return sid

    def collect(self, stream_ids):
        """Runs until every stream ended or was reset: {id: (status, body, reset_code)}."""
        out = {sid: [None, b"", None] for sid in stream_ids}
        open_ids = set(stream_ids)
        while open_ids:
            data = self.sock.recv(65536)
            if not data:
                break
            for ev in self.conn.receive_data(data):
                if isinstance(ev, h2.events.ResponseReceived):
                    out[ev.stream_id][0] = int(dict(ev.headers)[b":status"])
                elif isinstance(ev, h2.events.DataReceived):
                    out[ev.stream_id][1] += ev.data
                    self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.StreamEnded):
                    open_ids.discard(ev.stream_id)
                elif isinstance(ev, h2.events.StreamReset):
                    out[ev.stream_id][2] = ev.error_code
                    open_ids.discard(ev.stream_id)
            self.flush()
        return {k: tuple(v) for k, v in out.items()}

    def close(self):
        self.sock.close()


def base_headers(port, path="/headers"):
    return [(":method", "GET"), (":scheme", "http"), (":authority", f"example.test:{port}"),
            (":path", path)]


class ProxyHeaders(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.backend = harness.Backend(workers=1, unix=True)
        try:
            cls.proxy = Proxy([f"unix:{cls.backend.sock_path}"], tls=True)
        except BaseException:
            cls.backend.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.backend.stop()

    def test_http1_translation(self):
        r = curl(self.proxy, "h1", "/headers?x=1", [
            "-H", "Connection: keep-alive, X-Hop", "-H", "X-Hop: secret", "-H", "Keep-Alive: 5",
            "-H", "X-Forwarded-For: 192.0.2.9", "-H", "X-Kept: yes", "-H", "X-Request-Id: abc-1"])
        self.assertEqual(r.status, 200, r)
        line, f = seen(r.body)
        self.assertEqual(line, "GET /headers?x=1")
        self.assertEqual(f[":authority"], [f"127.0.0.1:{self.proxy.port}"])
        self.assertNotIn("x-hop", f)
        self.assertNotIn("keep-alive", f)
        self.assertNotIn("connection", f)
        self.assertEqual(f["x-kept"], ["yes"])
        # Trusting nobody by default, the client's own X-Forwarded-For is replaced (appended
        # to only from trusted_proxies: test_proxy_forwarded).
        self.assertEqual(f["x-forwarded-for"], ["127.0.0.1"])
        self.assertEqual(f["x-forwarded-proto"], ["http"])
        self.assertEqual(f["forwarded"],
                         [f'for=127.0.0.1;proto=http;host="127.0.0.1:{self.proxy.port}"'])
        self.assertEqual(f["x-request-id"], ["abc-1"])

    def test_request_id_generated_and_tls_proto(self):
        r = curl(self.proxy, "h2-tls", "/headers")
        self.assertEqual(r.status, 200, r)
        _, f = seen(r.body)
        self.assertRegex(f["x-request-id"][0], r"^[0-9a-f]{16}$")
        self.assertEqual(f["x-forwarded-proto"], ["https"])

    def test_http2_cookie_crumbs_and_authority(self):
        c = H2Client(self.proxy.port)
        self.addCleanup(c.close)
        sid = c.request(base_headers(self.proxy.port) +
                        [("cookie", "a=1"), ("accept", "*/*"), ("cookie", "b=2")])
        status, body, reset = c.collect([sid])[sid]
        self.assertEqual((status, reset), (200, None))
        _, f = seen(body)
        self.assertEqual(f["cookie"], ["a=1; b=2"])
        self.assertEqual(f[":authority"], [f"example.test:{self.proxy.port}"])

    def test_invalid_http2_fields_are_refused(self):
        c = H2Client(self.proxy.port)
        self.addCleanup(c.close)
        bad = {
            "uppercase": [("X-Upper", "1")],
            "connection-specific": [("connection", "close")],
            "crlf": [("x-inject", "a\r\nx-evil: 1")],
            "nul": [("x-nul", "a\x00b")],
        }
        # Every request increments the same fresh counter: a bad one that got through would
        # show in the good one's count.
        key = f"/?id=h2bad{self.proxy.port}"
        ids = {name: c.request(base_headers(self.proxy.port, key) + h) for name, h in bad.items()}
        results = c.collect(list(ids.values()))
        for name, sid in ids.items():
            status, body, reset = results[sid]
            with self.subTest(name):
                self.assertIsNone(status)
                self.assertEqual(reset, 1)  # PROTOCOL_ERROR
        good = c.request(base_headers(self.proxy.port, key))
        status, body, reset = c.collect([good])[good]
        self.assertEqual((status, body), (200, b'{"counter":1}'))


if __name__ == "__main__":
    unittest.main()
