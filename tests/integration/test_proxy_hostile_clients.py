"""Nothing a slow or hostile client can hold (issue 10): clients that never read, on HTTP/1.1
and on an HTTP/2 stream whose window they keep shut, are cut after send_timeout and free their
upstream connection; a client that pipelines requests and never reads its responses stops
being read instead of growing the proxy's memory; a request head that trickles in gets 408 at
header_timeout from its first byte; an HTTP/2 header block left unfinished, and an idle HTTP/2
connection kept busy with PINGs, are closed.

The pauses between a slow client's bytes are the client's shape, not synchronisation; every
wait for the proxy's reaction is a wait on a socket event or a metric, bounded in time."""
import json
import select
import socket
import struct
import time
import unittest

import h2.config
import h2.connection
import h2.events
import h2.settings
import hpack

import h2_frames
import harness
from h2_frames import END_HEADERS, END_STREAM, GOAWAY, HEADERS, RST_STREAM, SETTINGS
from proxy_harness import Proxy

SEND_TIMEOUT = 2
HUGE = "/bytes?n=500000000"  # more than any socket buffer: the client's reading is what counts






def busy_upstream(proxy):
    doc = json.loads(proxy.admin("/status"))
    return sum(e["busy"] for e in doc["clusters"][0]["endpoints"])


def timeouts(proxy, kind):
    return proxy.metric("portico_timeouts_total", kind=kind)




def slow_reader(port, path=HUGE):
    """An HTTP/1.1 client that asks for a huge body and never reads it."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    return s


def wait_closed(sock, timeout):
    """Reads and drops until the peer closes; returns the seconds that took (fails past
    timeout). What the proxy had queued before the close comes first."""
    start = time.monotonic()
    sock.settimeout(timeout)
    try:
        while sock.recv(1 << 20):
            if time.monotonic() - start > timeout:
                raise AssertionError("still open")
    except ConnectionResetError:
        pass
    return time.monotonic() - start


class H2Frames:
    """A python3-h2 client whose every stream starts with a shut window (it never reads)."""

    def __init__(self, port, window=0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        cfg = h2.config.H2Configuration(client_side=True)
        self.conn = h2.connection.H2Connection(config=cfg)
        self.conn.local_settings = h2.settings.Settings(
            client=True, initial_values={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window})
        self.conn.initiate_connection()
        self.flush()
        self.remote_settings = {}

    def flush(self):
        self.sock.sendall(self.conn.data_to_send())

    def get(self, path, port):
        sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(sid, [(":method", "GET"), (":scheme", "http"),
                                     (":authority", f"127.0.0.1:{port}"), (":path", path)],
                               end_stream=True)
        self.flush()
        return sid

    def events(self, timeout):
        """Events until the socket is quiet for timeout or closes; None at EOF."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return []
        if not data:
            return None
        evs = self.conn.receive_data(data)
        for ev in evs:
            if isinstance(ev, h2.events.RemoteSettingsChanged):
                self.remote_settings.update(
                    {k: v.new_value for k, v in ev.changed_settings.items()})
        try:
            self.flush()
        except (BrokenPipeError, ConnectionResetError):
            return None
        return evs

    def close(self):
        self.sock.close()


class SlowReaders(unittest.TestCase):
    """send_timeout: a client that takes no byte for 2 s is cut, and the upstream connection it
    held is free for others."""

    @classmethod
    def setUpClass(cls):
        cls.backend = harness.Backend(workers=4)
        try:
            cls.proxy = Proxy([f"127.0.0.1:{cls.backend.port}"], workers=1,
                              cluster_options={"max_connections": 4},
                              server_options={"send_timeout": SEND_TIMEOUT})
        except BaseException:
            cls.backend.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.backend.stop()

    def setUp(self):
        # Each test starts with every upstream connection free (the last one's clients gone).
        harness.wait_until(lambda: busy_upstream(self.proxy) == 0, timeout=SEND_TIMEOUT + 8,
                           what="upstreams free")

    def test_h1_reader_that_never_reads_is_cut_and_frees_the_upstream(self):
        before = timeouts(self.proxy, "client_send")
        # The proxy's last write that moved bytes (where send_timeout runs from) answers this
        # request, so it comes after `asked`: the cut cannot come before SEND_TIMEOUT from here.
        asked = time.monotonic()
        s = slow_reader(self.proxy.port)
        self.addCleanup(s.close)
        harness.wait_until(lambda: busy_upstream(self.proxy) == 1, what="upstream busy")
        harness.wait_until(lambda: timeouts(self.proxy, "client_send") == before + 1,
                           timeout=SEND_TIMEOUT + 8, what="the send timeout")
        elapsed = time.monotonic() - asked
        self.assertGreater(elapsed, SEND_TIMEOUT - 0.1)
        self.assertLess(elapsed, SEND_TIMEOUT + 4)
        harness.wait_until(lambda: busy_upstream(self.proxy) == 0, what="upstream released")
        wait_closed(s, 10)

    def test_h1_reader_that_reads_slowly_but_steadily_is_not_cut(self):
        # 200 kB/s, steadily: the kernel says the socket is writable again only once much of
        # what it holds (megabytes here) has gone, which at this pace takes far longer than
        # send_timeout. The client takes bytes all along: it must not be cut. (Much slower,
        # its window opens too seldom for the proxy to see it move within 2 s.)
        before = timeouts(self.proxy, "client_send")
        s = socket.create_connection(("127.0.0.1", self.proxy.port), timeout=10)
        self.addCleanup(s.close)
        s.sendall(f"GET {HUGE} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        received, start = 0, time.monotonic()
        while time.monotonic() - start < SEND_TIMEOUT + 4:
            data = s.recv(20480)
            self.assertTrue(data, f"cut after {received} bytes")
            received += len(data)
            time.sleep(0.1)  # the client's pace
        self.assertEqual(timeouts(self.proxy, "client_send"), before)

    def test_four_readers_on_four_connections_do_not_starve_a_normal_request(self):
        socks = [slow_reader(self.proxy.port) for _ in range(4)]
        for s in socks:
            self.addCleanup(s.close)
        harness.wait_until(lambda: busy_upstream(self.proxy) == 4, what="4 upstreams busy")
        start = time.monotonic()
        status, body = harness.http_get(self.proxy.port, timeout=15)
        self.assertEqual((status, body), (200, b"hello world\n"))
        self.assertLess(time.monotonic() - start, SEND_TIMEOUT + 3)
        for s in socks:
            s.close()

    def test_h2_stream_with_a_shut_window_is_reset_and_the_connection_stays(self):
        before = timeouts(self.proxy, "h2_stream_send")
        c = H2Frames(self.proxy.port)
        self.addCleanup(c.close)
        sid = c.get(HUGE, self.proxy.port)
        start = time.monotonic()
        reset = None
        while reset is None and time.monotonic() - start < SEND_TIMEOUT + 8:
            evs = c.events(1)
            self.assertIsNotNone(evs, "connection closed")
            for ev in evs:
                if isinstance(ev, h2.events.StreamReset) and ev.stream_id == sid:
                    reset = time.monotonic() - start
        self.assertIsNotNone(reset, "stream never reset")
        self.assertGreater(reset, SEND_TIMEOUT - 0.5)
        self.assertLess(reset, SEND_TIMEOUT + 4)
        self.assertEqual(timeouts(self.proxy, "h2_stream_send"), before + 1)
        harness.wait_until(lambda: busy_upstream(self.proxy) == 0, what="upstream released")
        # The connection still serves: a stream whose window the client opens.
        sid2 = c.get("/hello", self.proxy.port)
        c.conn.increment_flow_control_window(65535, stream_id=sid2)
        c.flush()
        body, ended = b"", False
        while not ended:
            evs = c.events(5)
            self.assertTrue(evs, "no answer on the second stream")
            for ev in evs:
                if isinstance(ev, h2.events.DataReceived) and ev.stream_id == sid2:
                    body += ev.data
                elif isinstance(ev, h2.events.StreamEnded) and ev.stream_id == sid2:
                    ended = True
        self.assertEqual(body, b"hello world\n")

    def test_h2_default_stream_limit_is_100(self):
        c = H2Frames(self.proxy.port, window=65535)
        self.addCleanup(c.close)
        deadline = time.monotonic() + 5
        while h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS not in c.remote_settings:
            self.assertLess(time.monotonic(), deadline)
            self.assertIsNotNone(c.events(1))
        self.assertEqual(c.remote_settings[h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS], 100)


class PipelinerThatNeverReads(unittest.TestCase):
    """Requests pipelined without reading a response: the proxy stops reading once its output
    for the connection is above the high watermark, so its memory stays bounded."""

    def test_memory_stays_bounded(self):
        backend = harness.Backend(workers=2)
        self.addCleanup(backend.stop)
        proxy = Proxy([f"127.0.0.1:{backend.port}"], workers=1)
        self.addCleanup(proxy.stop)
        self.assertEqual(harness.http_get(proxy.port)[0], 200)
        rss_before = proxy.rss_kib()
        s = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        self.addCleanup(s.close)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.setblocking(False)
        chunk = b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n" * 2000
        sent = 0
        while sent < 50 << 20:
            # Until the proxy stops taking bytes for a second: it stopped reading.
            if not select.select([], [s], [], 1.0)[1]:
                break
            try:
                sent += s.send(chunk)
            except BlockingIOError:
                continue
        grown = proxy.rss_kib() - rss_before
        self.assertLess(sent, 50 << 20, "the proxy read 50 MB of requests it could not answer")
        self.assertLess(grown, 32 << 10, f"RSS grew by {grown} KiB after {sent} bytes")
        # Reading again, the client gets its answers, in order.
        s.setblocking(True)
        f = s.makefile("rb")
        self.addCleanup(f.close)
        for _ in range(100):
            r = harness.read_http1_response(f)
            self.assertEqual((r.status, r.body), (200, b"hello world\n"))


class TlsHandshakeDeadline(unittest.TestCase):
    """A TLS handshake left unfinished is bounded by header_timeout from its first byte, not by
    the far longer keep-alive timeout."""

    def test_a_stalled_client_hello_is_cut_at_the_header_timeout(self):
        backend = harness.Backend(workers=1)
        self.addCleanup(backend.stop)
        proxy = Proxy([f"127.0.0.1:{backend.port}"], workers=1, tls=True,
                      server_options={"header_timeout": 1, "keepalive_timeout": 30})
        self.addCleanup(proxy.stop)
        before = timeouts(proxy, "client_header")
        s = socket.create_connection(("127.0.0.1", proxy.tls_port), timeout=10)
        self.addCleanup(s.close)
        # The start of a ClientHello record (handshake, TLS 1.0 record version, 512 bytes to
        # come), and nothing more.
        s.sendall(bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc]))
        elapsed = wait_closed(s, 8)
        self.assertGreater(elapsed, 0.5)
        self.assertLess(elapsed, 4)
        harness.wait_until(lambda: timeouts(proxy, "client_header") == before + 1,
                   what="the header timeout counted")


class H2StreamTurns(unittest.TestCase):
    """send_timeout on an HTTP/2 stream cuts one whose window the client keeps shut, not one
    that waits for the proxy to frame the connection's other streams."""

    def setUp(self):
        self.backend = harness.Backend(workers=2)
        self.addCleanup(self.backend.stop)
        self.proxy = Proxy([f"127.0.0.1:{self.backend.port}"], workers=1,
                           server_options={"send_timeout": SEND_TIMEOUT})
        self.addCleanup(self.proxy.stop)

    def test_h2_streams_waiting_their_turn_behind_others_are_not_cut(self):
        # Thirty downloads of 4 MB on one connection, read steadily at about 2 MB/s with every
        # window open: the proxy frames a few streams at a time, and the others wait their
        # turn for longer than send_timeout. The client keeps no window shut: none may be cut
        # for that. (Read for send_timeout and 3 s more, not to the end: 120 MB.)
        before = timeouts(self.proxy, "h2_stream_send")
        sock = socket.create_connection(("127.0.0.1", self.proxy.port), timeout=10)
        self.addCleanup(sock.close)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 256 * 1024)
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        conn.initiate_connection()
        conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 2**31 - 1})
        conn.increment_flow_control_window(2**31 - 1 - 65535)
        for _ in range(30):
            conn.send_headers(conn.get_next_available_stream_id(),
                              [(":method", "GET"), (":scheme", "http"), (":authority", "x"),
                               (":path", "/bytes?n=4000000")], end_stream=True)
        sock.sendall(conn.data_to_send())
        received, start = 0, time.monotonic()
        while time.monotonic() - start < SEND_TIMEOUT + 3:
            data = sock.recv(65536)
            self.assertTrue(data, "the proxy closed the connection")
            received += len(data)
            for e in conn.receive_data(data):
                self.assertNotIsInstance(e, h2.events.StreamReset,
                                         f"a stream cut after {received} bytes in all")
            sock.sendall(conn.data_to_send())
            time.sleep(len(data) / 2e6)  # the client's pace: about 2 MB/s
        self.assertGreater(received, 4_000_000)
        self.assertEqual(timeouts(self.proxy, "h2_stream_send"), before)


class HeaderDeadline(unittest.TestCase):
    """header_timeout runs from a request head's first byte, however slowly it comes."""

    @classmethod
    def setUpClass(cls):
        cls.backend = harness.Backend(workers=1)
        try:
            cls.proxy = Proxy([f"127.0.0.1:{cls.backend.port}"], workers=1,
                              server_options={"header_timeout": 2, "keepalive_timeout": 2})
        except BaseException:
            cls.backend.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.backend.stop()

    def test_one_byte_per_half_second_gets_408_at_the_deadline(self):
        before = timeouts(self.proxy, "client_header")
        s = socket.create_connection(("127.0.0.1", self.proxy.port), timeout=10)
        self.addCleanup(s.close)
        head = b"GET /hello HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 40
        start = time.monotonic()
        got = b""
        for b in head:
            s.send(bytes([b]))
            if select.select([s], [], [], 0.5)[0]:
                got = s.recv(4096)
                break
        elapsed = time.monotonic() - start
        self.assertTrue(got.startswith(b"HTTP/1.1 408 "), got)
        self.assertGreater(elapsed, 1.5)
        self.assertLess(elapsed, 4)
        self.assertEqual(timeouts(self.proxy, "client_header"), before + 1)

    def test_the_rest_of_a_body_after_its_answer_is_bounded_by_keepalive_timeout(self):
        # The upstream answers before the body is whole; the client sends no more of it. The
        # exchange is over, so no handler paces the connection any longer: it is idle, and
        # goes at keepalive_timeout (2 s), not never.
        s = socket.create_connection(("127.0.0.1", self.proxy.port), timeout=10)
        self.addCleanup(s.close)
        s.sendall(b"POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345")
        got = b""
        while b"hello world\n" not in got:
            data = s.recv(4096)
            self.assertTrue(data, "closed before the answer")
            got += data
        self.assertTrue(got.startswith(b"HTTP/1.1 200 "), got)
        self.assertLess(wait_closed(s, 10), 6)

    def test_empty_lines_before_a_request_line_do_not_keep_a_connection(self):
        # RFC 9112 2.2 lets a server ignore empty lines before a request line; each is still
        # a byte of the head to come, so header_timeout (2 s) bounds them: a CRLF every half
        # second must not hold the connection open.
        s = socket.create_connection(("127.0.0.1", self.proxy.port), timeout=10)
        self.addCleanup(s.close)
        start, closed = time.monotonic(), None
        while closed is None and time.monotonic() - start < 8:
            try:
                s.sendall(b"\r\n")
            except (BrokenPipeError, ConnectionResetError):
                closed = time.monotonic() - start
                break
            if select.select([s], [], [], 0.5)[0]:  # the client's pace, or the close
                try:
                    if not s.recv(4096):
                        closed = time.monotonic() - start
                except ConnectionResetError:
                    closed = time.monotonic() - start
        self.assertIsNotNone(closed, "empty lines kept the connection for 8 s")
        self.assertLess(closed, 5)

    def test_unfinished_h2_header_block_is_closed(self):
        s = socket.create_connection(("127.0.0.1", self.proxy.port), timeout=10)
        self.addCleanup(s.close)
        block = hpack.Encoder().encode([(":method", "GET"), (":scheme", "http"),
                                        (":authority", "x"), (":path", "/hello")])
        half = block[:len(block) // 2]
        settings = struct.pack(">I", 0)[1:] + bytes([4, 0]) + struct.pack(">I", 0)
        headers = struct.pack(">I", len(half))[1:] + bytes([1, 0]) + struct.pack(">I", 1) + half
        s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + settings + headers)
        elapsed = wait_closed(s, 8)
        self.assertGreater(elapsed, 1.5)
        self.assertLess(elapsed, 4)

    def test_a_stream_reset_inside_its_header_block_leaves_no_deadline_behind(self):
        # Stream 3's header block carries a field HTTP/2 forbids: nghttp2 resets the stream
        # before the block is delivered. Its header deadline must go with it, or it would
        # end the connection, and stream 1 still waiting for its answer, 2 s later.
        s = socket.create_connection(("127.0.0.1", self.proxy.port), timeout=10)
        self.addCleanup(s.close)
        reader = h2_frames.FrameReader(self, s)
        enc = hpack.Encoder()
        base = [(":method", "GET"), (":scheme", "http"), (":authority", "x")]
        slow = enc.encode(base + [(":path", "/delay?ms=4000")])
        bad = enc.encode(base + [(":path", "/hello"), ("connection", "close")])
        flags = END_STREAM | END_HEADERS
        s.sendall(h2_frames.PREFACE + h2_frames.frame(SETTINGS, 0, 0) +
                  h2_frames.frame(HEADERS, flags, 1, slow) + h2_frames.frame(HEADERS, flags, 3, bad))
        self.assertTrue(reader.wait_stream_end(3), "stream 3 not reset")
        self.assertIn((RST_STREAM, 3), [(t, sid) for t, _, sid, _ in list(reader.frames)])
        self.assertTrue(reader.wait_stream_end(1, timeout=10),
                        f"stream 1 cut: GOAWAY codes {reader.goaway_codes()}")
        kinds = [t for t, _, _, _ in list(reader.frames)]
        ended = next(i for i, (t, f, sid, _) in enumerate(list(reader.frames))
                     if sid == 1 and f & END_STREAM)
        self.assertNotIn(GOAWAY, kinds[:ended])

    def test_an_idle_close_lingers_for_a_request_already_on_its_way(self):
        # The idle GOAWAY and a request the client sent before it could read it cross: the
        # proxy reads and drops that request, so that its close is a FIN, not a reset, which
        # on a real network can destroy the GOAWAY (and its last-stream-id) on its way.
        s = socket.create_connection(("127.0.0.1", self.proxy.port), timeout=10)
        self.addCleanup(s.close)
        s.sendall(h2_frames.PREFACE + h2_frames.frame(SETTINGS, 0, 0))
        # Until the proxy's FIN, keepalive_timeout (2 s) from now.
        frames = h2_frames.split_frames(harness.read_to_eof(s))
        self.assertIn(GOAWAY, [t for t, _, _, _ in frames])  # before the FIN
        s.sendall(h2_frames.frame(HEADERS, END_STREAM | END_HEADERS, 1,
                                  h2_frames.request_block()))
        self.assertFalse(h2_frames.reset_within(s, 500),
                         "the crossing request was answered with a reset: no lingering")

    def test_idle_h2_connection_kept_busy_with_pings_is_closed(self):
        start = time.monotonic()  # the idle clock starts once the connection is accepted
        c = H2Frames(self.proxy.port, window=65535)
        self.addCleanup(c.close)
        closed = None
        while closed is None and time.monotonic() - start < 8:
            c.conn.ping(b"12345678")
            try:
                c.flush()
                evs = c.events(0.5)
            except (BrokenPipeError, ConnectionResetError):
                evs = None
            if evs is None or any(isinstance(e, h2.events.ConnectionTerminated) for e in evs):
                closed = time.monotonic() - start
        self.assertIsNotNone(closed, "PINGs kept an idle connection open")
        self.assertGreater(closed, 2 - 0.1)  # keepalive_timeout, not sooner
        self.assertLess(closed, 4)


if __name__ == "__main__":
    unittest.main()
