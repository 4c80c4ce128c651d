"""HTTP/2 floods end in GOAWAY within bounded work, and the h2spec cases Portico failed pass
(issue 10, items 4 and 7), on raw frames: 100,000 empty DATA frames, PRIORITY frames or zero
WINDOW_UPDATEs on one connection, rapid reset, a CONTINUATION flood; a HEADERS frame on a
stream id lower than one already opened (h2spec 5.1.1/2); an invalid connection preface on the
TLS port, where ALPN already said h2, and after HTTP/2's request line on the cleartext port
(h2spec 3.5/2)."""
import socket
import ssl
import struct
import unittest

import hpack

import harness
from h2_frames import (CONTINUATION, DATA, END_HEADERS, END_STREAM, ENHANCE_YOUR_CALM, FLOOD,
                       HEADERS, INTERNAL_ERROR, PING, PREFACE, PRIORITY, PROTOCOL_ERROR,
                       RST_STREAM, SETTINGS, WINDOW_UPDATE, FrameReader, frame,
                       goaways_sent, hpack_bomb_frames, plain_status, request_block)
from proxy_harness import Proxy


class H2Floods(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.backend = harness.Backend(workers=1)
        try:
            cls.proxy = Proxy([f"127.0.0.1:{cls.backend.port}"], workers=1, tls=True)
        except BaseException:
            cls.backend.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.backend.stop()

    def connect(self):
        s = socket.create_connection(("127.0.0.1", self.proxy.port), timeout=10)
        self.addCleanup(s.close)
        s.sendall(PREFACE + frame(SETTINGS, 0, 0))
        return s, FrameReader(self, s)

    def flood(self, opening, frames, expect=(ENHANCE_YOUR_CALM,), after_stream_end=None):
        """Sends opening, then frames (one bytes object), on a fresh connection; expects a
        GOAWAY with one of the codes in expect, then the close, for little CPU.
        after_stream_end: a stream id the server must have ended before the frames go."""
        cpu = harness.cpu_seconds(self.proxy.pid)
        sent_before = goaways_sent(self.proxy)
        s, reader = self.connect()
        try:
            if after_stream_end is not None:
                s.sendall(opening)
                self.assertTrue(reader.wait_stream_end(after_stream_end),
                                f"stream {after_stream_end} never ended")
                opening = b""
            s.sendall(opening + frames)
        except OSError:
            pass  # closed while we were still sending: what this test wants
        self.assertTrue(reader.closed.wait(15), "connection still open after the flood")
        codes = reader.goaway_codes()
        self.assertTrue(codes and codes[-1] in expect, f"GOAWAY codes {codes}")
        self.assertLess(harness.cpu_seconds(self.proxy.pid) - cpu, 2.0)
        self.assertEqual(goaways_sent(self.proxy), sent_before + 1)
        return reader

    def test_empty_data_frames(self):
        opening = frame(HEADERS, END_HEADERS, 1, request_block("/echo", "POST"))
        self.flood(opening, frame(DATA, 0, 1) * FLOOD)

    def test_priority_frames(self):
        self.flood(b"", frame(PRIORITY, 0, 3, struct.pack(">IB", 0, 15)) * FLOOD)

    def test_zero_window_updates(self):
        # nghttp2 takes the first as a connection error already (PROTOCOL_ERROR).
        opening = frame(HEADERS, END_HEADERS, 1, request_block("/delay?ms=3000"))
        self.flood(opening, frame(WINDOW_UPDATE, 0, 1, struct.pack(">I", 0)) * FLOOD,
                   expect=(ENHANCE_YOUR_CALM, PROTOCOL_ERROR))

    def test_window_updates_for_closed_streams(self):
        # nghttp2 drops these silently; the budget does not. The stream must be closed first:
        # while its response is on its way the updates are legitimate (a loaded machine once
        # read the whole flood before the origin answered).
        opening = frame(HEADERS, END_HEADERS | END_STREAM, 1, request_block())
        self.flood(opening, frame(WINDOW_UPDATE, 0, 1, struct.pack(">I", 1)) * FLOOD,
                   after_stream_end=1)

    def test_rapid_reset(self):
        frames = b"".join(
            frame(HEADERS, END_HEADERS | END_STREAM, sid, request_block("/delay?ms=50")) +
            frame(RST_STREAM, 0, sid, struct.pack(">I", 8)) for sid in range(1, 2 * 5000, 2))
        self.flood(b"", frames, expect=(ENHANCE_YOUR_CALM, INTERNAL_ERROR))

    def test_continuation_flood(self):
        block = request_block()
        frames = frame(HEADERS, 0, 1, block[:4]) + frame(CONTINUATION, 0, 1, b"") * 1000
        self.flood(b"", frames, expect=(ENHANCE_YOUR_CALM, PROTOCOL_ERROR, INTERNAL_ERROR))

    def test_ping_flood(self):
        # Each PING asks for an ACK: past nghttp2's 1,000 queued ACKs the client is flooding,
        # which is ENHANCE_YOUR_CALM (it was PROTOCOL_ERROR, as for malformed bytes).
        self.flood(b"", frame(PING, 0, 0, b"12345678") * FLOOD)

    def test_settings_flood(self):
        self.flood(b"", frame(SETTINGS, 0, 0) * FLOOD)

    def test_an_hpack_bomb_ends_the_connection(self):
        # Issue 29: one 4,000-byte field indexed, then 16,000 one-byte references to it: 64 MB
        # of fields from 20 KB on the wire. Decoded bytes past a block's allowance spend the
        # glitch budget, which ends such a connection early in its first block.
        frames = hpack_bomb_frames(1, references=16_000)
        self.flood(b"", frames, expect=(ENHANCE_YOUR_CALM,))

    def test_requests_that_each_decode_to_large_blocks_spend_the_budget(self):
        # Each request is a dozen bytes that decode to 31 KB (under max_header_bytes, 32 KiB):
        # within the limit each time, over 2,000x the client's bytes. Sent 50 at a time (under
        # the 100 streams allowed at once, whose excess nghttp2 would decode unseen), they end
        # the connection once the budget is spent, and not before some were answered.
        s, reader = self.connect()
        encoder = hpack.Encoder()
        fields = [(":method", "GET"), (":scheme", "http"), (":authority", "x"),
                  (":path", "/hello")] + [("x-big", "b" * 3900)] * 8  # one entry fits the table
        s.sendall(frame(HEADERS, END_HEADERS | END_STREAM, 1, encoder.encode(fields)))
        self.assertTrue(reader.wait_stream_end(1), "the first request unanswered")
        again = encoder.encode(fields)
        self.assertLess(len(again), 20)
        sid, answered = 3, 1
        for _ in range(20):
            batch = range(sid, sid + 100, 2)
            sid += 100
            try:
                s.sendall(b"".join(frame(HEADERS, END_HEADERS | END_STREAM, i, again)
                                   for i in batch))
            except OSError:
                break
            if not all(reader.wait_stream_end(i) for i in batch):
                break
            answered += len(batch)
        self.assertLess(answered, 1001, "1,000 requests answered: the budget never ran out")
        self.assertGreaterEqual(answered, 51)
        self.assertTrue(reader.closed.wait(15), "connection still open")
        self.assertEqual(reader.goaway_codes()[-1:], [ENHANCE_YOUR_CALM])

    def test_a_large_block_sent_plainly_is_a_431_and_the_connection_stays(self):
        # The client spent the bytes itself: no amplification, so no glitch; the request is
        # refused and the connection serves the next one.
        s, reader = self.connect()
        plain = hpack.Encoder()
        block = plain.encode([(":method", "GET"), (":scheme", "http"), (":authority", "x"),
                              (":path", "/hello"), ("x-big", "p" * 40_000)],
                             huffman=False)
        s.sendall(frame(HEADERS, END_STREAM, 1, block[:16384]) +
                  frame(CONTINUATION, 0, 1, block[16384:32768]) +
                  frame(CONTINUATION, END_HEADERS, 1, block[32768:]))
        self.assertTrue(reader.wait_stream_end(1), "the large request unanswered")
        status = [p for t, _, sid, p in reader.frames if t == HEADERS and sid == 1]
        self.assertEqual(plain_status(status[0]), "431")
        s.sendall(frame(HEADERS, END_HEADERS | END_STREAM, 3, plain.encode(
            [(":method", "GET"), (":scheme", "http"), (":authority", "x"), (":path", "/hello")])))
        self.assertTrue(reader.wait_stream_end(3), "the next request unanswered")
        self.assertEqual(reader.goaway_codes(), [])

    def test_a_normal_connection_is_untouched_by_the_budget(self):
        # 90 requests (under the 100 streams allowed at once), each with a PRIORITY frame and a
        # WINDOW_UPDATE: far below the budget.
        s, reader = self.connect()
        out = b""
        for sid in range(1, 181, 2):
            out += frame(PRIORITY, 0, sid, struct.pack(">IB", 0, 15))
            out += frame(HEADERS, END_HEADERS | END_STREAM, sid, request_block())
            out += frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 1000))
        s.sendall(out)
        harness.wait_until(
            lambda: sum(1 for t, f, _, _ in reader.frames if t == DATA and f & END_STREAM) == 90,
            what="every request answered")
        self.assertEqual(reader.goaway_codes(), [])

    def test_a_window_update_after_each_response_is_no_flood(self):
        # RFC 9113 5.1: WINDOW_UPDATE and RST_STREAM may arrive on a stream a little after it
        # closed. HAProxy's h2 backend sends a WINDOW_UPDATE for each stream whose response
        # it read: 3,000 requests so must not end in ENHANCE_YOUR_CALM (they did, past the
        # budget's burst of 1,000).
        s, reader = self.connect()
        encoder = hpack.Encoder()
        block = encoder.encode([(":method", "GET"), (":scheme", "http"), (":authority", "x"),
                                (":path", "/hello")])
        sid = 1
        for _ in range(60):
            batch = list(range(sid, sid + 100, 2))
            sid += 100
            s.sendall(b"".join(frame(HEADERS, END_HEADERS | END_STREAM, i, block)
                               for i in batch))
            for i in batch:
                self.assertTrue(reader.wait_stream_end(i), f"stream {i} unanswered")
            s.sendall(b"".join(frame(WINDOW_UPDATE, 0, i, struct.pack(">I", 12))
                               for i in batch))
        s.sendall(frame(HEADERS, END_HEADERS | END_STREAM, sid, block))
        self.assertTrue(reader.wait_stream_end(sid), "the last request unanswered")
        self.assertEqual(reader.goaway_codes(), [])

    def test_headers_on_a_lower_stream_id_is_a_connection_error(self):
        # h2spec 5.1.1/2: stream 5 opens, then a HEADERS frame on stream 3, which 5 closed.
        s, reader = self.connect()
        s.sendall(frame(HEADERS, END_HEADERS | END_STREAM, 5, request_block()))
        s.sendall(frame(HEADERS, END_HEADERS | END_STREAM, 3, request_block()))
        self.assertTrue(reader.closed.wait(10))
        self.assertEqual(reader.goaway_codes()[-1:], [PROTOCOL_ERROR])

    def test_trailers_on_an_open_stream_are_no_connection_error(self):
        s, reader = self.connect()
        s.sendall(frame(HEADERS, END_HEADERS, 1, request_block("/echo", "POST")) +
                  frame(HEADERS, END_HEADERS, 3, request_block()) +
                  frame(DATA, 0, 1, b"abc") +
                  frame(HEADERS, END_HEADERS | END_STREAM, 1,
                        hpack.Encoder().encode([("x-sum", "1")])))
        harness.wait_until(
            lambda: sum(1 for t, f, _, _ in reader.frames
                        if f & END_STREAM and t in (DATA, HEADERS)) == 2,
            what="both streams answered")
        self.assertEqual(reader.goaway_codes(), [])

    def test_bad_preface_after_the_h2_request_line(self):
        s = socket.create_connection(("127.0.0.1", self.proxy.port), timeout=10)
        self.addCleanup(s.close)
        reader = FrameReader(self, s)
        s.sendall(b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n" + frame(SETTINGS, 0, 0))
        self.assertTrue(reader.closed.wait(10))
        self.assertEqual(reader.goaway_codes(), [PROTOCOL_ERROR])

    def test_bad_preface_on_the_tls_port(self):
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols(["h2"])
        raw = socket.create_connection(("127.0.0.1", self.proxy.tls_port), timeout=10)
        s = ctx.wrap_socket(raw, server_hostname="localhost")
        self.addCleanup(s.close)
        self.assertEqual(s.selected_alpn_protocol(), "h2")
        # Sent before the reader starts: one SSL object must not be read and written by two
        # threads at once.
        s.sendall(b"INVALID CONNECTION PREFACE\r\n\r\n")
        reader = FrameReader(self, s)
        self.assertTrue(reader.closed.wait(10))
        self.assertEqual(reader.goaway_codes(), [PROTOCOL_ERROR])


if __name__ == "__main__":
    unittest.main()
