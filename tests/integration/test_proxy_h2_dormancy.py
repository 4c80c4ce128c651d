"""An HTTP/2 connection that has opened no stream puts its nghttp2 session away (issue 14:
memory per idle h2 connection): it sleeps once SETTINGS are exchanged, wakes for the client's
first frame with everything the client had said still in force (python3-h2 as the client, a
real upstream behind), sleeps again after a PING, and a graceful stop still tells it GOAWAY;
over TLS too. A used one does after [server] h2_sleep_after without a stream (issue 28 item 3),
with its HPACK tables, windows, settings and closed streams as they were. /metrics counts the
sleepers."""
import signal
import socket
import ssl
import time
import unittest

import h2.config
import h2.connection
import h2.events
import h2.settings
import hpack

import h2_frames
import harness
import load_clients
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

    def get(self, path, method="GET", body=b""):
        sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(sid, [(":method", method), (":scheme", "http"),
                                     (":authority", "x"), (":path", path),
                                     ("user-agent", "dormancy-test/1.0")], end_stream=not body)
        self.flush()
        while body:
            window = min(self.conn.local_flow_control_window(sid),
                         self.conn.max_outbound_frame_size)
            if window == 0:
                self.read_until(lambda: self.conn.local_flow_control_window(sid) > 0,
                                f"window on stream {sid}")
                continue
            self.conn.send_data(sid, body[:window], end_stream=len(body) <= window)
            body = body[window:]
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


class Sleepers(unittest.TestCase):
    """A proxy in front of portico-backend, and h2c clients to it."""
    proxy_options = {}

    def setUp(self):
        self.backend = harness.Backend(workers=1)
        self.addCleanup(self.backend.stop)
        self.proxy = Proxy([f"127.0.0.1:{self.backend.port}"], workers=1, **self.proxy_options)
        self.addCleanup(self.proxy.stop)

    def connect(self, settings=None):
        s = socket.create_connection(("127.0.0.1", self.proxy.port), timeout=10)
        self.addCleanup(s.close)
        c = Client(s, settings)
        c.read_until(c.settled, "SETTINGS both ways")
        return c


class H2Dormancy(Sleepers):
    proxy_options = {"tls": True}

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


def header_table_sizes(client):
    """The SETTINGS_HEADER_TABLE_SIZE values the proxy has sent, in order."""
    return [e.changed_settings[h2.settings.SettingCodes.HEADER_TABLE_SIZE].new_value
            for e in client.events if isinstance(e, h2.events.RemoteSettingsChanged)
            and h2.settings.SettingCodes.HEADER_TABLE_SIZE in e.changed_settings]


class H2DormancyAfterStreams(Sleepers):
    """A connection that has served streams sleeps after h2_sleep_after (50 ms here)."""
    proxy_options = {"server_options": {"h2_sleep_after": "0.05"}}

    def asleep(self, c, n=1):
        """Waits until n connections sleep, answering what the proxy sends meanwhile (its
        SETTINGS asking for an empty HPACK table, which it waits for the ACK of)."""
        c.sock.setblocking(False)
        try:
            def check():
                try:
                    data = c.sock.recv(65536)
                    Client.assert_data(data, "sleep")
                    c.events.extend(c.conn.receive_data(data))
                    c.flush()
                except BlockingIOError:
                    pass
                return sleepers(self.proxy) == n
            harness.wait_until(check, what=f"{n} asleep after streams")
        finally:
            c.sock.setblocking(True)

    def test_a_used_connection_sleeps_and_wakes_with_its_hpack_state(self):
        c = self.connect()
        for _ in range(3):
            self.assertEqual(c.get("/hello")[0], b"hello world\n")
        # The client's encoder has indexed user-agent and :authority: our decoder's table must
        # be emptied, by the client, before the session can go.
        self.asleep(c)
        self.assertEqual(header_table_sizes(c), [0])
        for cycle in range(3):
            self.assertEqual(c.get("/hello")[0], b"hello world\n")
            self.assertEqual(sleepers(self.proxy), 0)
            self.assertEqual(c.get("/hello")[0], b"hello world\n")  # indexed again
            self.asleep(c)
        # Asked for 0 each time it slept, given 4,096 back each time it woke.
        self.assertEqual(header_table_sizes(c), [0, 4096] * 3 + [0])
        self.assertFalse(any(isinstance(e, h2.events.ConnectionTerminated) for e in c.events))

    def test_a_ping_wakes_a_used_sleeper_which_sleeps_again(self):
        c = self.connect()
        c.get("/hello")
        self.asleep(c)
        c.conn.ping(b"12345678")
        c.flush()
        c.read_until(lambda: any(isinstance(e, h2.events.PingAckReceived) for e in c.events),
                     "the PING's answer")
        # Asleep again after h2_sleep_after, not at the connection timer's next check (30 s).
        self.asleep(c)
        self.assertEqual(c.get("/hello")[0], b"hello world\n")

    def test_windows_and_settings_survive_the_sleep(self):
        # A 100-byte stream window and a connection window spent below its initial size by a
        # 100 KiB response: a new session that forgot either would overrun the client's.
        c = self.connect({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 100})
        body, sizes = c.get("/bytes?n=102400")
        self.assertEqual(len(body), 102400)
        self.assertLessEqual(max(sizes), 100)
        self.asleep(c)
        body, sizes = c.get("/bytes?n=102400")
        self.assertEqual(len(body), 102400)
        self.assertLessEqual(max(sizes), 100)
        # Our receive windows: an upload of 3 MiB, more than the 1 MiB of a stream's window.
        self.asleep(c)
        upload = bytes(range(256)) * (3 * 4096)
        self.assertEqual(c.get("/echo", "POST", upload)[0], upload)
        self.assertFalse(any(isinstance(e, h2.events.ConnectionTerminated) for e in c.events))

    def test_a_frame_half_received_keeps_the_session_awake(self):
        # A client that indexes nothing (our HPACK table stays empty, so the session sleeps
        # without asking for it) sends half a PING, its header and 3 of 8 bytes, and the rest
        # later: a session that slept in between would lose the first half and read the rest
        # as a frame header.
        s = socket.create_connection(("127.0.0.1", self.proxy.port), timeout=10)
        self.addCleanup(s.close)
        reader = h2_frames.FrameReader(self, s)
        block = hpack.Encoder().encode([hpack.NeverIndexedHeaderTuple(n, v) for n, v in (
            (":method", "GET"), (":scheme", "http"), (":authority", "x"), (":path", "/hello"))])
        s.sendall(h2_frames.PREFACE + h2_frames.frame(h2_frames.SETTINGS, 0, 0))
        harness.wait_until(lambda: any(t == h2_frames.SETTINGS and not f & 1
                                       for t, f, _, _ in list(reader.frames)),
                           what="the proxy's SETTINGS")
        s.sendall(h2_frames.frame(h2_frames.SETTINGS, 1, 0) +
                  h2_frames.frame(h2_frames.HEADERS, 0x5, 1, block))
        self.assertTrue(reader.wait_stream_end(1), "no answer")
        harness.wait_until(lambda: sleepers(self.proxy) == 1, what="asleep after the stream")
        ping = h2_frames.frame(h2_frames.PING, 0, 0, b"12345678")
        s.sendall(ping[:12])
        harness.wait_until(lambda: sleepers(self.proxy) == 0, what="woken by the first half")
        deadline = time.monotonic() + 0.5  # ten times h2_sleep_after: it must not sleep
        while time.monotonic() < deadline:
            self.assertEqual(sleepers(self.proxy), 0, "asleep with half a frame read")
        s.sendall(ping[12:])
        harness.wait_until(lambda: any(t == h2_frames.PING and f & 1
                                       for t, f, _, _ in list(reader.frames)),
                           what="the PING's answer")
        self.assertNotIn(h2_frames.GOAWAY, [t for t, _, _, _ in list(reader.frames)])

    def test_uploads_between_sleeps_leave_the_clients_window_whole(self):
        # nghttp2 acknowledges request DATA in WINDOW_UPDATEs of half the 16 MiB connection
        # window: 5 MiB consumed and not yet acknowledged must be acknowledged before the
        # session goes, or each sleep takes that much from the client's window for good and
        # the fourth upload waits for a WINDOW_UPDATE that never comes.
        c = self.connect()
        upload = bytes(range(256)) * (5 * 4096)
        for cycle in range(4):
            self.assertEqual(c.get("/echo", "POST", upload)[0], upload, f"upload {cycle}")
            self.asleep(c)
        self.assertFalse(any(isinstance(e, h2.events.ConnectionTerminated) for e in c.events))

    def test_the_connection_window_left_is_kept_across_the_sleep(self):
        # 30,000 bytes leave the connection window at 35,535: python3-h2 sends WINDOW_UPDATE
        # only once half of it is spent. A new session that assumed 65,535 would send 65,535
        # bytes at once, which the client's h2 refuses (FlowControlError).
        c = self.connect({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 1 << 20})
        self.assertEqual(len(c.get("/bytes?n=30000")[0]), 30000)
        self.asleep(c)
        self.assertEqual(len(c.get("/bytes?n=65535")[0]), 65535)
        self.assertFalse(any(isinstance(e, h2.events.ConnectionTerminated) for e in c.events))

    def test_frames_for_closed_streams_are_judged_as_before(self):
        c = self.connect()
        c.get("/hello")
        self.asleep(c)
        # A late WINDOW_UPDATE for stream 1, closed before the sleep: allowed (RFC 9113 5.1).
        # To a session that had not seen stream 1 it would be a frame on an idle stream.
        c.sock.sendall(bytes.fromhex("000004080000000001000003e8"))
        c.flush()
        self.assertEqual(c.get("/hello")[0], b"hello world\n")
        self.assertFalse(any(isinstance(e, h2.events.ConnectionTerminated) for e in c.events))
        self.asleep(c)
        # HEADERS on stream 1 again: nghttp2 takes it for trailers of a stream it closed and
        # drops it. A session that had not seen stream 1 would serve it as a new request.
        responses = sum(isinstance(e, h2.events.ResponseReceived) for e in c.events)
        c.sock.sendall(bytes.fromhex("000006010500000001828684010178"))
        self.assertEqual(c.get("/hello")[0], b"hello world\n")
        self.assertEqual(sum(isinstance(e, h2.events.ResponseReceived) for e in c.events),
                         responses + 1)
        self.assertFalse(any(isinstance(e, h2.events.ConnectionTerminated) for e in c.events))

    def test_a_request_while_the_table_shrinks_is_served_and_the_table_restored(self):
        c = self.connect()
        c.get("/hello")
        # The proxy's SETTINGS asking for a table of 0, read but acknowledged only after the
        # next request has gone: the session must stay awake and give the table back.
        while header_table_sizes(c) != [0]:
            data = c.sock.recv(65536)
            Client.assert_data(data, "SETTINGS_HEADER_TABLE_SIZE 0")
            c.events.extend(c.conn.receive_data(data))
        ack = c.conn.data_to_send()
        sid = c.conn.get_next_available_stream_id()
        c.conn.send_headers(sid, [(":method", "GET"), (":scheme", "http"), (":authority", "x"),
                                  (":path", "/hello")], end_stream=True)
        c.sock.sendall(c.conn.data_to_send() + ack)
        c.read_until(lambda: any(isinstance(e, h2.events.StreamEnded) and e.stream_id == sid
                                 for e in c.events), f"stream {sid}")
        c.read_until(lambda: header_table_sizes(c) == [0, 4096], "the table given back")
        self.assertEqual(c.get("/hello")[0], b"hello world\n")
        self.assertFalse(any(isinstance(e, h2.events.ConnectionTerminated) for e in c.events))


class H2DormancyUnderLoad(Sleepers):
    """Under load_clients.H2Load (eight streams at a time on each of four connections), a
    connection sleeps whenever its client pauses 10 ms with every stream answered: each time
    the proxy first asks for an empty HPACK table, which the client's next header block must
    acknowledge (RFC 7541 4.2). The tests that reload under load depend on that client."""
    proxy_options = {"server_options": {"h2_sleep_after": "0.01"}}

    def test_the_load_client_follows_the_table_size_and_loses_nothing(self):
        load = load_clients.H2Load(self.proxy.port, connections=4, streams=8)
        self.addCleanup(load.stop)
        harness.wait_until(lambda: load.total() > 1000 and load.table_sizes() >= 20,
                           timeout=60, what="a thousand requests and twenty table sizes")
        r = load.stop()
        self.assertEqual(r["failed"], 0, r)
        self.assertEqual(r["goaways"], 0, r)


if __name__ == "__main__":
    unittest.main()
