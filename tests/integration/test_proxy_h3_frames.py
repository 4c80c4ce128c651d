"""HTTP/3 at the frame level: portico-h3load (bench/h3load, on ngtcp2 and nghttp3 like the
proxy) writes hand-made frames and QPACK field sections on streams of its own, and reads how the
proxy ends the stream or the connection: each malformed case gets the error code RFC 9114 and
RFC 9204 give it, and the proxy serves on. The caps of the [[listener]] quic table hold (streams
advertised and renewed, connections refused at once), and before a client's address is
validated the proxy sends no more than three times what it received (RFC 9000 8.1)."""
import shutil
import subprocess
import tempfile
import unittest

from fake_origins import Http1Origin
from harness import Backend
from proxy_harness import Proxy, make_certificate
import h3_frames as h3
from h3_frames import frame, request, varint, field_section, prefixed


class QuicProxy(unittest.TestCase):
    """A proxy of the class's own, to portico-backend, with `quic = QUIC` on its TLS listener."""
    QUIC = "true"

    @classmethod
    def setUpClass(cls):
        cls.backend = Backend(workers=1)
        cls.proxy = Proxy([f"127.0.0.1:{cls.backend.port}"], tls=True, workers=1,
                          tls_listener_options={"quic": cls.QUIC})
        cls.port = cls.proxy.tls_port

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.backend.stop()


class MalformedFrames(QuicProxy):
    QUIC = "{ max_streams = 10 }"

    def tearDown(self):
        # Whatever a case did, a well-formed request on a new connection is still answered.
        r = h3.raw(self.port, ("bidi", request()))
        self.assertEqual(r.status(0), 200, r.text)

    def assert_connection_error(self, code, *streams):
        r = h3.raw(self.port, *streams, await_close=True)
        self.assertEqual(r.close, "peer application %#x" % code, r.text)

    def assert_stream_error(self, code, *streams):
        r = h3.raw(self.port, *streams)
        self.assertEqual(r.streams[0][:2], ("reset", code), r.text)
        self.assertEqual(r.close, "open", r.text)  # the connection itself serves on

    def test_a_request_is_answered(self):
        r = h3.raw(self.port, ("bidi", request(path="/")))
        self.assertEqual(r.streams[0][0], "fin", r.text)
        self.assertEqual(r.status(0), 200)
        data = [p for kind, p in h3.frames(r.streams[0][2]) if kind == h3.DATA]
        self.assertEqual(b"".join(data), b"hello world\n")

    def test_trailers_go_both_ways(self):
        # portico-backend's /echo sends the request's trailers back as its own.
        r = h3.raw(self.port, ("bidi", request("POST", "/echo", extra=[("te", "trailers")]) +
                               frame(h3.DATA, b"hello h3") +
                               frame(h3.HEADERS, field_section([("x-checksum", "h3sum")]))))
        self.assertEqual(r.streams[0][0], "fin", r.text)
        parts = h3.frames(r.streams[0][2])
        sections = [p for kind, p in parts if kind == h3.HEADERS]
        self.assertEqual(len(sections), 2, parts)
        self.assertEqual(h3.status_of(sections[0]), 200)
        self.assertEqual(b"".join(p for kind, p in parts if kind == h3.DATA), b"hello h3")
        self.assertEqual(h3.fields_of(sections[1]), [("x-checksum", "h3sum")])

    # Request streams (RFC 9114 7.1, 7.2).

    def test_data_before_headers_is_frame_unexpected(self):
        self.assert_connection_error(h3.H3_FRAME_UNEXPECTED, ("bidi", frame(h3.DATA, b"abc")))

    def test_settings_on_a_request_stream_is_frame_unexpected(self):
        self.assert_connection_error(h3.H3_FRAME_UNEXPECTED, ("bidi", frame(h3.SETTINGS, b"")))

    def test_an_http2_frame_type_is_frame_unexpected(self):
        # 0x2 was HTTP/2's PRIORITY; RFC 9114 7.2.8 reserves it.
        self.assert_connection_error(h3.H3_FRAME_UNEXPECTED, ("bidi", frame(0x2, b"\x00")))

    def test_a_frame_cut_by_the_end_of_its_stream_is_a_frame_error(self):
        # A HEADERS frame of 100 bytes whose stream ends after 3.
        self.assert_connection_error(
            h3.H3_FRAME_ERROR, ("bidi", varint(h3.HEADERS) + varint(100) + b"\x00\x00\xd1"))

    def test_unknown_frame_types_are_ignored(self):
        # Reserved types 0x1f * N + 0x21 (RFC 9114 7.2.8) are for greasing: skipped.
        r = h3.raw(self.port, ("bidi", frame(0x21, b"grease") + request()))
        self.assertEqual(r.status(0), 200, r.text)

    # Malformed messages (RFC 9114 4.1.2): the stream, or the connection (8: an endpoint may
    # treat a stream error as a connection's; nghttp3 hands a body's length mismatch to the
    # application only as the connection's).

    def test_a_request_without_path_is_a_message_error(self):
        section = field_section([(":method", "GET"), (":scheme", "https"),
                                 (":authority", "localhost")])
        self.assert_stream_error(h3.H3_MESSAGE_ERROR, ("bidi", frame(h3.HEADERS, section)))

    def test_an_upper_case_field_name_is_a_message_error(self):
        self.assert_stream_error(h3.H3_MESSAGE_ERROR,
                                 ("bidi", request(extra=[("X-Upper", "1")])))

    def test_a_body_shorter_than_its_content_length_is_a_message_error(self):
        self.assert_connection_error(
            h3.H3_MESSAGE_ERROR,
            ("bidi", request("POST", extra=[("content-length", "10")]) + frame(h3.DATA, b"abc")))

    def refusals(self, code):
        return self.proxy.metric("portico_requests_total", protocol="h3", route="none",
                                 code=code, answered_by="proxy")

    def test_a_field_section_over_the_limit_is_431(self):
        before = self.refusals("431")
        r = h3.raw(self.port, ("bidi", request(extra=[("x-big", "a" * 40000)])))
        self.assertEqual(r.status(0), 431, r.text)
        self.assertEqual(self.refusals("431"), before + 1)  # counted, though no route saw it

    def test_a_long_target_is_414(self):
        before = self.refusals("414")
        r = h3.raw(self.port, ("bidi", request(path="/" + "p" * 9000)))
        self.assertEqual(r.status(0), 414, r.text)
        self.assertEqual(self.refusals("414"), before + 1)

    # QPACK (RFC 9204).

    def test_an_impossible_required_insert_count_is_decompression_failed(self):
        section = field_section([(":method", "GET")], required_insert_count=200)
        self.assert_connection_error(h3.QPACK_DECOMPRESSION_FAILED,
                                     ("bidi", frame(h3.HEADERS, section)))

    def test_a_table_capacity_over_the_limit_is_an_encoder_stream_error(self):
        # Set Dynamic Table Capacity 100000, past the 4,096 bytes the proxy allows.
        self.assert_connection_error(
            h3.QPACK_ENCODER_STREAM_ERROR,
            ("uni", varint(h3.QPACK_ENCODER) + prefixed(100000, 5, 0x20)))

    # The control stream (RFC 9114 6.2.1).

    def test_a_control_stream_must_start_with_settings(self):
        self.assert_connection_error(
            h3.H3_MISSING_SETTINGS, ("uni", varint(h3.CONTROL) + frame(h3.GOAWAY, varint(0))))

    def test_a_second_control_stream_is_a_stream_creation_error(self):
        control = varint(h3.CONTROL) + frame(h3.SETTINGS, b"")
        self.assert_connection_error(h3.H3_STREAM_CREATION_ERROR, ("uni", control),
                                     ("uni", control))

    def test_closing_the_control_stream_is_closed_critical_stream(self):
        self.assert_connection_error(
            h3.H3_CLOSED_CRITICAL_STREAM,
            ("uni-fin", varint(h3.CONTROL) + frame(h3.SETTINGS, b"")))

    def test_data_on_the_control_stream_is_frame_unexpected(self):
        self.assert_connection_error(
            h3.H3_FRAME_UNEXPECTED,
            ("uni", varint(h3.CONTROL) + frame(h3.SETTINGS, b"") + frame(h3.DATA, b"x")))


class StreamLimit(QuicProxy):
    QUIC = ("{ max_streams = 10, idle_timeout = 7, stream_window = 131072, "
            "connection_window = 524288 }")

    def test_the_configured_limits_are_advertised(self):
        r = h3.raw(self.port)
        self.assertEqual(r.params, {"max_streams_bidi": 10, "initial_max_data": 524288,
                                    "initial_max_stream_data_bidi_remote": 131072,
                                    "max_idle_timeout_ms": 7000}, r.text)

    def test_a_connection_serves_more_requests_than_its_stream_limit(self):
        # The limit is on streams open at once: each one that ends gives the client another.
        figures = h3.load(self.port, "-n", "60", "-m", "5", timeout=5)
        self.assertEqual((figures["succeeded"], figures["stalled"]), (60, False), figures["text"])


class ConnectionCap(QuicProxy):
    QUIC = "{ max_connections = 1 }"

    def test_a_connection_past_the_cap_is_refused_at_once(self):
        before = self.proxy.metric("portico_quic_refused_total")
        holder = subprocess.Popen([h3.H3LOAD, "--hold", "127.0.0.1:%d" % self.port],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            self.assertIn("ready", [holder.stdout.readline().strip() for _ in range(3)])
            # CONNECTION_REFUSED (RFC 9000 20.1) in an Initial: the client need not wait for
            # its handshake to time out before it falls back to TCP.
            r = h3.raw(self.port, timeout=5)
            self.assertEqual(r.close, "peer transport 0x2", r.text)
        finally:
            holder.stdin.close()
            holder.wait(timeout=30)
            holder.stdout.close()
        self.assertEqual(self.proxy.metric("portico_quic_refused_total") - before, 1)


class EndOfRequest(unittest.TestCase):
    """A request whose HEADERS frame ends its stream: nghttp3 tells both that its headers ended
    with the stream and that the stream ended; the upstream must hear of the end once."""

    def test_a_bodiless_request_ends_once_upstream(self):
        origin = Http1Origin()
        self.addCleanup(origin.stop)
        proxy = Proxy([origin.endpoint], tls=True, workers=1,
                      tls_listener_options={"quic": "true"})
        self.addCleanup(proxy.stop)
        for _ in range(3):
            r = h3.raw(proxy.tls_port, ("bidi", request(path="/x")))
            self.assertEqual(r.status(0), 200, r.text)
        self.assertEqual([a[:2] for a in origin.applied], [("GET", "/x")] * 3)
        # No stray bytes after a request broke the pooled connection: all three went on one.
        self.assertEqual(origin.connections, 1)


class Migration(unittest.TestCase):
    """A client whose address changes mid-connection (a NAT rebinding, or a phone changing
    networks) keeps its connection: ngtcp2 validates the new path, and with two workers the
    steering program still hands its packets, from a port the kernel's hash has never seen, to
    the worker that holds the connection (the first byte of the connection ID)."""

    def test_a_connection_survives_a_new_client_port(self):
        backend = Backend(workers=1)
        self.addCleanup(backend.stop)
        proxy = Proxy([f"127.0.0.1:{backend.port}"], tls=True, workers=2,
                      tls_listener_options={"quic": "true"})
        self.addCleanup(proxy.stop)
        # Without steering, each new port would reach the other worker one time in two.
        for _ in range(6):
            r = h3.raw(proxy.tls_port, ("bidi", request()), ("migrate", b""),
                       ("bidi", request()), ("bidi", request()))
            self.assertEqual([r.status(i) for i in (0, 4, 8)], [200, 200, 200], r.text)
            self.assertEqual((r.migrations, r.close), (1, "open"), r.text)


class AmplificationLimit(unittest.TestCase):
    def test_an_unvalidated_client_gets_at_most_three_times_what_it_sent(self):
        # A certificate of some 6 KB: the proxy's first flight is larger than three times the
        # client's 1,200-byte Initial, so the limit is what stops it.
        certdir = tempfile.mkdtemp(prefix="portico-h3-amp-")
        self.addCleanup(shutil.rmtree, certdir, True)
        cert, key = make_certificate(certdir, extra_names=[f"n{i}.example.test"
                                                           for i in range(300)])
        backend = Backend(workers=1)
        self.addCleanup(backend.stop)
        proxy = Proxy([f"127.0.0.1:{backend.port}"], tls=True, workers=1,
                      certificate=(cert, key), tls_listener_options={"quic": "true"})
        self.addCleanup(proxy.stop)
        out = subprocess.run([h3.H3LOAD, "--first-flight", "--timeout", "3",
                              "127.0.0.1:%d" % proxy.tls_port],
                             capture_output=True, text=True, timeout=60, check=True).stdout
        words = out.split()
        sent, received = int(words[words.index("sent") + 1]), int(words[words.index("received") + 1])
        self.assertGreater(sent, 0, out)
        self.assertGreater(received, 2 * sent, out)  # it did answer, up to its limit
        self.assertLessEqual(received, 3 * sent, out)
        # And a client that answers gets the whole handshake and its response.
        r = h3.raw(proxy.tls_port, ("bidi", request()))
        self.assertEqual(r.status(0), 200, r.text)


if __name__ == "__main__":
    unittest.main()
