"""The amplification bounds of proxy/THREAT_MODEL.md (issue 29, item 3), measured: for each
class of hostile input, the proxy's CPU per byte the client sent is at most K times what the
cheapest legitimate traffic of the protocol costs per byte (HPACK-indexed GETs over one h2c
connection, minimal GETs over HTTP/1.1 keep-alive), and the proxy's memory high-water mark
grows by at most the per-connection limit (max_buffered_response_bytes, 4 MiB) however many
bytes the client sends. Each test prints its figures; the document quotes them.

CPU is the proxy process's user and system time (10-ms ticks): each measured input is large
enough to cost well over a tick when it is as expensive as the baseline."""
import os
import socket
import struct
import unittest

import hpack

import harness
from h2_frames import (CONTINUATION, DATA, END_HEADERS, END_STREAM, ENHANCE_YOUR_CALM, FLOOD,
                       HEADERS, PING, PREFACE, PRIORITY, RST_STREAM, SETTINGS, WINDOW_UPDATE,
                       FrameReader, frame, hpack_bomb_frames, request_block)
from proxy_harness import Proxy

# K for CPU: a hostile input may cost at most this many times the baseline's CPU per byte.
K_CPU = 1.0
MEMORY_BOUND_KIB = 4096  # max_buffered_response_bytes: what one connection may hold
# Header blocks within max_header_bytes (32 KiB) on every stream allowed at once (100): each
# is held decoded and again as the upstream request, so their bound is the configuration's.
HEADERS_BOUND_KIB = 2 * 100 * 32
# CPU time comes in clock ticks (10 ms); each measured input must be worth this many of them
# at the baseline's cost.
TICK = 1 / os.sysconf("SC_CLK_TCK")
MEASURABLE_TICKS = 10
FIELDS = [(":method", "GET"), (":scheme", "http"), (":authority", "x"), (":path", "/hello")]


def high_water_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def open_h2c(port):
    """An h2c connection whose window never shuts: the baseline's answers must all come."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(PREFACE + frame(SETTINGS, 0, 0) +
              frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 1 << 30)))
    return s


class Amplification(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.backend = harness.Backend(workers=1)
        try:
            cls.proxy = Proxy([f"127.0.0.1:{cls.backend.port}"], workers=1)
        except BaseException:
            cls.backend.stop()
            raise
        try:
            cls.h2_baseline = cls.measure_h2_gets(cls)
            cls.h1_baseline = cls.measure_h1_gets(cls)
        except BaseException:  # tearDownClass does not run after a failed setUpClass
            cls.tearDownClass()
            raise
        print(f"\nbaseline: h2c indexed GETs {cls.h2_baseline:.0f} ns/B, "
              f"HTTP/1.1 GETs {cls.h1_baseline:.0f} ns/B")

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.backend.stop()

    def connect(self):
        s = open_h2c(self.proxy.port)
        self.addCleanup(s.close)
        return s, FrameReader(self, s)

    def measure_h2_gets(self):
        """CPU ns per client byte of 9,000 GETs, 90 at a time, on one h2c connection."""
        s = open_h2c(self.proxy.port)
        reader = FrameReader(None, s)
        try:
            encoder = hpack.Encoder()
            sent, sid = 0, 1
            ended, read = set(), [0]

            def batch_ended(ids):
                # Every stream of the batch, not only its last: the next 90 on top of ones
                # still open would pass the 100 streams allowed at once, and each one refused
                # is a glitch to the proxy (a client that ignores the limit).
                frames = reader.frames
                while read[0] < len(frames):
                    t, f, i, _ = frames[read[0]]
                    read[0] += 1
                    if t == RST_STREAM or (t in (DATA, HEADERS) and f & END_STREAM):
                        ended.add(i)
                return ids <= ended or reader.closed.is_set()

            cpu = harness.cpu_seconds(self.proxy.pid)
            for _ in range(100):
                ids = set(range(sid, sid + 180, 2))
                out = b"".join(frame(HEADERS, END_HEADERS | END_STREAM, i, encoder.encode(FIELDS))
                               for i in sorted(ids))
                s.sendall(out)
                sent += len(out)
                harness.wait_until(lambda: batch_ended(ids), what="the baseline's GETs answered")
                if not ids <= ended:
                    raise AssertionError("the baseline's GETs were not answered")
                sid += 180
            return (harness.cpu_seconds(self.proxy.pid) - cpu) * 1e9 / sent
        finally:
            reader.stop()
            s.close()

    def measure_h1_gets(self):
        """CPU ns per client byte of 9,000 minimal GETs, 90 pipelined at a time."""
        s = socket.create_connection(("127.0.0.1", self.proxy.port), timeout=10)
        try:
            request = b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"
            sent = 0
            cpu = harness.cpu_seconds(self.proxy.pid)
            for _ in range(100):
                s.sendall(request * 90)
                sent += len(request) * 90
                got = b""
                while got.count(b"HTTP/1.1 200") < 90:
                    data = s.recv(1 << 16)
                    if not data:
                        raise AssertionError("the baseline's connection closed")
                    got += data
            return (harness.cpu_seconds(self.proxy.pid) - cpu) * 1e9 / sent
        finally:
            s.close()

    @staticmethod
    def measurable(sent, baseline):
        """The clock counts whole ticks: an input is measured only if the baseline's cost for
        its bytes spans MEASURABLE_TICKS of them, so that one tick more or less decides
        nothing."""
        return K_CPU * baseline * sent / 1e9 >= MEASURABLE_TICKS * TICK

    def assert_measurable(self, name, sent, baseline):
        self.assertTrue(self.measurable(sent, baseline),
                        f"{name}: {sent} bytes are too few to measure")

    def hostile(self, name, data, baseline, opening=b"", memory_bound=MEMORY_BOUND_KIB):
        """Sends data on a fresh h2c connection that reads what comes, and waits for the proxy
        to close it; again on another, until the bytes sent are enough to measure. Returns the
        last connection's reader and asserts the bounds."""
        hwm = high_water_kib(self.proxy.pid)
        cpu = harness.cpu_seconds(self.proxy.pid)
        sent, connections = 0, 0
        while connections == 0 or not self.measurable(sent, baseline):
            s, reader = self.connect()
            connections += 1
            try:
                s.sendall(opening)
                for i in range(0, len(data), 1 << 16):
                    s.sendall(data[i:i + (1 << 16)])
                    sent += min(1 << 16, len(data) - i)
            except OSError:
                pass  # closed while we were still sending
            self.assertTrue(reader.closed.wait(20), f"{name}: connection still open")
            s.close()
        spent = harness.cpu_seconds(self.proxy.pid) - cpu
        grown = high_water_kib(self.proxy.pid) - hwm
        ns_per_byte = spent * 1e9 / max(sent, 1)
        print(f"\n{name}: {sent} bytes sent on {connections} connection(s), "
              f"{spent * 1000:.0f} ms CPU, {ns_per_byte:.1f} ns/B "
              f"({ns_per_byte / baseline:.3f}x the baseline), high water +{grown} KiB, "
              f"GOAWAY {reader.goaway_codes()}")
        self.assert_measurable(name, sent, baseline)
        self.assertLessEqual(ns_per_byte, K_CPU * baseline, name)
        self.assertLessEqual(grown, memory_bound, name)
        return reader

    def test_frames_that_serve_no_request(self):
        opening = frame(HEADERS, END_HEADERS, 1, request_block("/echo", "POST"))
        for name, data, first in [
                ("PING", frame(PING, 0, 0, b"12345678") * FLOOD, b""),
                ("SETTINGS", frame(SETTINGS, 0, 0) * FLOOD, b""),
                ("PRIORITY", frame(PRIORITY, 0, 3, struct.pack(">IB", 0, 15)) * FLOOD, b""),
                ("empty DATA", frame(DATA, 0, 1) * FLOOD, opening),
                ("WINDOW_UPDATE on a closed stream",
                 frame(WINDOW_UPDATE, 0, 99, struct.pack(">I", 1)) * FLOOD, b""),
                ("CONTINUATION", frame(HEADERS, 0, 1, request_block()[:4]) +
                 frame(CONTINUATION, 0, 1, b"") * 1000, b"")]:
            with self.subTest(name):
                reader = self.hostile(name, data, self.h2_baseline, first)
                self.assertTrue(reader.goaway_codes(), name)

    def test_streams_opened_and_reset(self):
        data = b"".join(
            frame(HEADERS, END_HEADERS | END_STREAM, sid, request_block("/delay?ms=50")) +
            frame(RST_STREAM, 0, sid, struct.pack(">I", 8)) for sid in range(1, 2 * 5000, 2))
        reader = self.hostile("rapid reset", data, self.h2_baseline)
        self.assertTrue(reader.goaway_codes())

    def test_header_blocks_hpack_multiplies(self):
        # A bomb (64 MB of fields from 20 KB) and requests of a dozen bytes that decode to 31 KB
        # each: the glitch budget charges what is decoded past a block's allowance.
        reader = self.hostile("HPACK bomb", hpack_bomb_frames(1, 16_000), self.h2_baseline)
        self.assertEqual(reader.goaway_codes()[-1:], [ENHANCE_YOUR_CALM])
        encoder = hpack.Encoder()
        fields = FIELDS + [("x-big", "b" * 3900)] * 8
        first = frame(HEADERS, END_HEADERS | END_STREAM, 1, encoder.encode(fields))
        again = encoder.encode(fields)
        data = b"".join(frame(HEADERS, END_HEADERS | END_STREAM, sid, again)
                        for sid in range(3, 3 + 2 * 2000, 2))
        reader = self.hostile("requests HPACK multiplies", data, self.h2_baseline, first,
                              memory_bound=HEADERS_BOUND_KIB)
        self.assertEqual(reader.goaway_codes()[-1:], [ENHANCE_YOUR_CALM])

    def test_an_http1_head_that_never_ends(self):
        # 8 MB of one header field: refused with 431 at max_header_bytes (32 KiB); what
        # follows is never parsed.
        hwm = high_water_kib(self.proxy.pid)
        cpu = harness.cpu_seconds(self.proxy.pid)
        s = socket.create_connection(("127.0.0.1", self.proxy.port), timeout=10)
        self.addCleanup(s.close)
        sent = 0
        try:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nx-long: ")
            chunk = b"a" * (1 << 16)
            for _ in range(128):
                s.sendall(chunk)
                sent += len(chunk)
        except OSError:
            pass
        answer = b""
        try:
            while data := s.recv(1 << 16):
                answer += data
        except OSError:
            pass
        spent = harness.cpu_seconds(self.proxy.pid) - cpu
        grown = high_water_kib(self.proxy.pid) - hwm
        ns_per_byte = spent * 1e9 / max(sent, 1)
        print(f"\nHTTP/1.1 endless head: {sent} bytes sent, {spent * 1000:.0f} ms CPU, "
              f"{ns_per_byte:.1f} ns/B ({ns_per_byte / self.h1_baseline:.3f}x), high water "
              f"+{grown} KiB")
        self.assertTrue(answer.startswith(b"HTTP/1.1 431"), answer[:40])
        self.assert_measurable("HTTP/1.1 endless head", sent, self.h1_baseline)
        self.assertLessEqual(ns_per_byte, K_CPU * self.h1_baseline)
        self.assertLessEqual(grown, MEMORY_BOUND_KIB)


if __name__ == "__main__":
    unittest.main()
