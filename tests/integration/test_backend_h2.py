"""portico-backend over h2c: prior knowledge and "Upgrade: h2c" with curl and nghttp, load with
h2load, and frame-level checks with python3-h2 (concurrent streams, flow control, resets, a slow
stream beside fast ones, GOAWAY on a graceful stop)."""
import hashlib
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
import unittest

import harness
from harness import Backend

# python3-h2 imports only under /usr/bin/python3, which ctest uses: a missing module fails.
import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings

HELLO = b"hello world\n"


def run(cmd, timeout=30):
    return subprocess.run(cmd, capture_output=True, timeout=timeout)


class Stream:
    def __init__(self):
        self.headers = None
        self.data = bytearray()
        self.ended = False
        self.reset = None  # error code of a RST_STREAM from the server

    @property
    def status(self):
        return int(dict(self.headers)[b":status"])

    def header(self, name):
        return dict(self.headers).get(name)


class H2Client:
    """A python3-h2 client connection with prior knowledge. Received DATA is acknowledged at
    once unless a stream is listed in `stalled`, whose DATA is acknowledged on the connection
    only (so its own window runs dry while the connection's stays open)."""

    def __init__(self, port, connection_window=None, stream_window=None):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.conn = h2.connection.H2Connection(
            config=h2.config.H2Configuration(client_side=True, header_encoding=None))
        self.conn.initiate_connection()
        if stream_window is not None:
            self.conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE:
                                       stream_window})
        if connection_window is not None:
            self.conn.increment_flow_control_window(connection_window - 65535)
        self.streams = {}
        self.pending = b""
        self.stalled = set()
        self.goaway = None
        self.closed = False
        self.autoflush = True  # False: frames wait until flush(force=True)
        self.outbox = b""
        self.remote_settings = {}
        self.flush()

    def close(self):
        self.sock.close()

    def take_output(self):
        data, self.outbox = self.outbox + self.conn.data_to_send(), b""
        return data

    def flush(self, force=False):
        if not (self.autoflush or force):
            return
        data = self.take_output()
        if data:
            self.sock.sendall(data)

    def request(self, path, method="GET", body=None, end_stream=True, headers=()):
        sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(sid, [(b":method", method.encode()), (b":scheme", b"http"),
                                     (b":authority", b"localhost"), (b":path", path.encode()),
                                     *headers],
                               end_stream=body is None and end_stream)
        self.streams[sid] = Stream()
        if body is not None:
            self.send_body(sid, body, end_stream)
        self.flush()
        return sid

    def send_body(self, sid, body, end_stream=True):
        """Sends as much of body as the windows allow, reading meanwhile; returns when sent."""
        view = memoryview(body)
        while view:
            window = min(self.conn.local_flow_control_window(sid),
                         self.conn.max_outbound_frame_size)
            if window <= 0:
                self.read_once()
                continue
            self.conn.send_data(sid, view[:window].tobytes())
            view = view[window:]
            self.flush()
        if end_stream:
            self.conn.end_stream(sid)
            self.flush()

    def read_once(self):
        data = self.sock.recv(1 << 20)
        if not data:
            self.closed = True
            raise ConnectionError("server closed the connection")
        self.pending += data
        # Frame by frame: python3-h2 closes its side on GOAWAY (dropping queued output, a
        # PING's ACK among it), though streams up to its last_stream_id go on (RFC 9113 6.8);
        # keep the output and reopen the connection after each GOAWAY to see them finish.
        while len(self.pending) >= 9:
            end = 9 + int.from_bytes(self.pending[:3], "big")
            if len(self.pending) < end:
                break
            frame, self.pending = self.pending[:end], self.pending[end:]
            state = self.conn.state_machine.state
            self.outbox += self.conn.data_to_send()
            for ev in self.conn.receive_data(bytes(frame)):
                self.handle(ev)
                if isinstance(ev, h2.events.ConnectionTerminated):
                    self.conn.state_machine.state = state
        self.flush()

    def handle(self, ev):
        st = self.streams.get(getattr(ev, "stream_id", None))
        if isinstance(ev, h2.events.ResponseReceived):
            st.headers = ev.headers
        elif isinstance(ev, h2.events.DataReceived):
            st.data += ev.data
            if ev.stream_id in self.stalled:
                self.conn.increment_flow_control_window(ev.flow_controlled_length)
            elif ev.flow_controlled_length:
                self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
        elif isinstance(ev, h2.events.StreamEnded):
            st.ended = True
        elif isinstance(ev, h2.events.StreamReset):
            if st is not None:
                st.reset = ev.error_code
        elif isinstance(ev, h2.events.ConnectionTerminated):
            self.goaway = ev
        elif isinstance(ev, h2.events.RemoteSettingsChanged):
            for k, v in ev.changed_settings.items():
                self.remote_settings[k] = v.new_value

    def wait(self, predicate, timeout=10):
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError("timed out waiting on the h2 connection")
            self.read_once()

    def done(self, *sids):
        return lambda: all(self.streams[s].ended or self.streams[s].reset is not None
                           for s in sids)


class H2FrameTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.backend = Backend(workers=2)

    @classmethod
    def tearDownClass(cls):
        cls.backend.stop()

    def client(self, **kw):
        c = H2Client(self.backend.port, **kw)
        self.addCleanup(c.close)
        return c

    def test_settings_and_hello(self):
        c = self.client()
        sid = c.request("/hello")
        c.wait(c.done(sid))
        st = c.streams[sid]
        self.assertEqual((st.status, bytes(st.data)), (200, HELLO))
        self.assertEqual(st.header(b"content-length"), b"12")
        self.assertEqual(st.header(b"server"), b"portico-backend")
        self.assertEqual(c.remote_settings[h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS], 256)

    def test_many_concurrent_streams(self):
        c = self.client()
        hello = [c.request("/hello") for _ in range(100)]
        counts = [c.request("/counter?id=h2many") for _ in range(50)]
        delays = [c.request("/delay?ms=200") for _ in range(50)]
        t0 = time.monotonic()
        c.wait(c.done(*hello, *counts, *delays))
        # 50 delays of 200 ms ran side by side on one connection.
        self.assertLess(time.monotonic() - t0, 3)
        for sid in hello + delays:
            self.assertEqual((c.streams[sid].status, bytes(c.streams[sid].data)), (200, HELLO))
        values = sorted(int(re.search(rb"\d+", c.streams[s].data).group()) for s in counts)
        self.assertEqual(values, list(range(values[0], values[0] + 50)))

    def test_large_echo_respects_flow_control(self):
        # The client's windows are the default 64 KiB: the server must wait for our
        # WINDOW_UPDATEs, and ours must wait for its.
        body = os.urandom(5 * 1024 * 1024 + 7)
        c = self.client()
        sid = c.request("/echo", "POST", headers=[(b"content-type", b"application/x-test")],
                        end_stream=False)
        c.send_body(sid, body)
        c.wait(c.done(sid), timeout=30)
        st = c.streams[sid]
        self.assertEqual(st.status, 200)
        self.assertEqual(st.header(b"content-type"), b"application/x-test")
        self.assertEqual(hashlib.sha256(st.data).digest(), hashlib.sha256(body).digest())

    def test_reset_stream_leaves_the_others_alone(self):
        c = self.client()
        slow = c.request("/delay?ms=300")
        upload = c.request("/echo", "POST", end_stream=False)
        c.send_body(upload, b"x" * 10000, end_stream=False)
        big = c.request("/bytes?n=2000000")
        c.conn.reset_stream(slow)
        c.conn.reset_stream(upload)
        c.flush()
        c.wait(c.done(big), timeout=20)
        self.assertEqual(c.streams[big].status, 200)
        self.assertEqual(len(c.streams[big].data), 2000000)
        after = c.request("/counter?id=h2reset")
        c.wait(c.done(after))
        self.assertEqual(c.streams[after].status, 200)
        # The delay's timer was cancelled with its stream: nothing arrives on it later.
        ping = c.request("/delay?ms=400")
        c.wait(c.done(ping))
        self.assertIsNone(c.streams[slow].headers)
        self.assertIsNone(c.goaway)

    def test_stalled_stream_does_not_block_the_others(self):
        c = self.client(connection_window=64 * 1024 * 1024)
        stalled = c.request("/bytes?n=20000000")
        c.stalled.add(stalled)
        c.wait(lambda: len(c.streams[stalled].data) >= 65535)
        # Its window is spent and never reopened; other streams must still flow.
        for i in range(8):
            sid = c.request("/bytes?n=300000")
            c.wait(c.done(sid))
            self.assertEqual(len(c.streams[sid].data), 300000)
        self.assertFalse(c.streams[stalled].ended)
        self.assertEqual(len(c.streams[stalled].data), 65535)

    def test_echo_upload_waits_for_the_response_reader(self):
        # The response is not read (its stream window stays shut): the server stops taking
        # the upload (no WINDOW_UPDATE) instead of buffering it.
        body = os.urandom(8 * 1024 * 1024)
        c = self.client(connection_window=64 * 1024 * 1024)
        sid = c.request("/echo", "POST", end_stream=False)
        c.stalled.add(sid)
        c.sock.settimeout(1.0)
        sent = 0
        try:
            while sent < len(body):
                window = min(c.conn.local_flow_control_window(sid), c.conn.max_outbound_frame_size,
                             len(body) - sent)
                if window <= 0:
                    c.read_once()
                    continue
                c.conn.send_data(sid, body[sent:sent + window])
                c.flush()
                sent += window
        except socket.timeout:
            pass  # a second without a window to send in
        # The server's 1 MiB stream window and its bounded buffer, not the whole body.
        self.assertLess(sent, 3 * 1024 * 1024)
        # Read the response again: the upload resumes and everything comes back.
        c.stalled.discard(sid)
        c.conn.increment_flow_control_window(len(c.streams[sid].data), stream_id=sid)
        c.sock.settimeout(10)
        c.flush()
        c.send_body(sid, body[sent:])
        c.wait(c.done(sid), timeout=30)
        self.assertEqual(hashlib.sha256(c.streams[sid].data).digest(),
                         hashlib.sha256(body).digest())

    def test_header_section_too_large(self):
        c = self.client()
        sid = c.request("/hello", headers=[(b"x-big-%d" % i, b"v" * 4000) for i in range(10)])
        c.wait(c.done(sid))
        self.assertEqual(c.streams[sid].status, 431)
        ok = c.request("/hello")
        c.wait(c.done(ok))
        self.assertEqual(c.streams[ok].status, 200)

    def test_garbage_after_the_preface_gets_goaway(self):
        with socket.create_connection(("127.0.0.1", self.backend.port), timeout=10) as s:
            s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x04\x09\x00\x00\x00\x00"
                      b"\x01" + b"junk")  # CONTINUATION on stream 1 out of place
            got = b""
            while chunk := s.recv(65536):
                got += chunk
        # A GOAWAY frame (type 7) comes back before the close.
        frames, i = [], 0
        while i + 9 <= len(got):
            length = int.from_bytes(got[i:i + 3], "big")
            frames.append(got[i + 3])
            i += 9 + length
        self.assertIn(7, frames)


class H2LifecycleTest(unittest.TestCase):
    def test_graceful_stop_finishes_streams_and_sends_goaway(self):
        b = Backend(workers=1)
        self.addCleanup(b.stop)
        c = H2Client(b.port)
        self.addCleanup(c.close)
        sids = [c.request("/delay?ms=500") for _ in range(5)]
        first = c.request("/hello")
        c.wait(c.done(first))  # the delays were read before the hello was answered
        b.signal(signal.SIGTERM)
        c.wait(lambda: c.goaway is not None and c.done(*sids)())
        for sid in sids:
            self.assertEqual((c.streams[sid].status, bytes(c.streams[sid].data)), (200, HELLO))
        self.assertEqual(c.goaway.error_code, 0)
        self.assertEqual(b.proc.wait(timeout=10), 0)

    def test_requests_sent_after_the_shutdown_notice_are_served(self):
        b = Backend(workers=1)
        self.addCleanup(b.stop)
        c = H2Client(b.port)
        self.addCleanup(c.close)
        first = c.request("/hello")
        c.wait(c.done(first))
        c.autoflush = False
        b.signal(signal.SIGTERM)
        c.wait(lambda: c.goaway is not None)
        # The first GOAWAY takes no stream away; its PING is still unanswered.
        self.assertEqual(c.goaway.last_stream_id, 2**31 - 1)
        ping_ack = c.take_output()
        late = [c.request("/hello") for _ in range(3)]
        c.sock.sendall(c.take_output() + ping_ack)  # the requests, then the PING's ACK
        c.autoflush = True
        c.wait(lambda: c.done(*late)() and c.goaway.last_stream_id != 2**31 - 1)
        for sid in late:
            self.assertEqual((c.streams[sid].status, bytes(c.streams[sid].data)), (200, HELLO))
        self.assertEqual(c.goaway.last_stream_id, late[-1])
        self.assertEqual(b.proc.wait(timeout=10), 0)

    def test_idle_connection_closed_after_keepalive_timeout(self):
        b = Backend("--keepalive-timeout", "1", workers=1)
        self.addCleanup(b.stop)
        c = H2Client(b.port)
        self.addCleanup(c.close)
        sid = c.request("/hello")
        c.wait(c.done(sid))
        t0 = time.monotonic()
        with self.assertRaises(ConnectionError):
            c.wait(lambda: False, timeout=10)  # reads until the server closes
        self.assertLess(time.monotonic() - t0, 5)
        self.assertIsNotNone(c.goaway)

    def test_max_requests_over_h2(self):
        b = Backend("--max-requests", "3", workers=1)
        self.addCleanup(b.stop)
        first = b.worker_pids()
        c = H2Client(b.port)
        self.addCleanup(c.close)
        sids = [c.request("/hello") for _ in range(3)]
        c.wait(lambda: c.done(*sids)() and c.goaway is not None)
        for sid in sids:
            self.assertEqual(c.streams[sid].status, 200)
        harness.wait_until(lambda: (p := b.worker_pids()) and p != first, what="a new worker")


class H2ToolsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.backend = Backend(workers=2)
        cls.url = cls.backend.url

    @classmethod
    def tearDownClass(cls):
        cls.backend.stop()

    def curl(self, *args):
        harness.need("curl")
        out = run(["curl", "-sS", "--max-time", "20", "-w", "\\n%{http_version} %{http_code}",
                   *args])
        self.assertEqual(out.returncode, 0, out.stderr)
        body, _, meta = out.stdout.rpartition(b"\n")
        return body, meta.decode()

    def test_curl_prior_knowledge(self):
        self.assertEqual(self.curl("--http2-prior-knowledge", f"{self.url}/hello"),
                         (HELLO, "2 200"))
        body, meta = self.curl("--http2-prior-knowledge", "--data-binary", "ping",
                               f"{self.url}/echo")
        self.assertEqual((body, meta), (b"ping", "2 200"))
        # (Several URLs on one prior-knowledge connection fail in curl 7.88 itself: curl
        # issue 10634, fixed in 7.89. nghttp covers streams sharing a connection below.)

    def test_curl_upgrade(self):
        harness.need("curl")
        out = run(["curl", "-sSv", "--max-time", "20", "--http2", f"{self.url}/hello"])
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout, HELLO)
        self.assertIn(b"< HTTP/1.1 101 Switching Protocols", out.stderr)
        self.assertIn(b"< HTTP/2 200", out.stderr)
        # With a body there is no upgrade: served over HTTP/1.1 as usual.
        body, meta = self.curl("--http2", "--data-binary", "ping", f"{self.url}/echo")
        self.assertEqual((body, meta), (b"ping", "1.1 200"))

    def test_nghttp_prior_knowledge(self):
        harness.need("nghttp")
        out = run(["nghttp", "-nv", f"{self.url}/"])
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertRegex(out.stdout, rb"recv \(stream_id=(\d+)\) :status: 200")
        self.assertRegex(out.stdout, rb"recv DATA frame <length=12, flags=0x01, stream_id=\d+>")
        # Three streams on one connection, bodies printed (nghttp fetches a repeated URI once).
        out = run(["nghttp", f"{self.url}/hello", f"{self.url}/hello?again",
                   f"{self.url}/counter?id=nghttp"])
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.count(HELLO), 2)
        self.assertRegex(out.stdout, rb'\{"counter":\d+\}')

    def test_nghttp_upgrade(self):
        harness.need("nghttp")
        out = run(["nghttp", "-nuv", f"{self.url}/"])
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn(b"HTTP/1.1 101 Switching Protocols", out.stdout)
        self.assertIn(b"HTTP Upgrade success", out.stdout)
        self.assertIn(b"recv (stream_id=1) :status: 200", out.stdout)

    def test_nghttp_upload(self):
        harness.need("nghttp")
        with tempfile.NamedTemporaryFile() as f:
            data = os.urandom(3 * 1024 * 1024)
            f.write(data)
            f.flush()
            out = run(["nghttp", "-d", f.name, f"{self.url}/echo"])
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout, data)

    def test_h2load(self):
        harness.need("h2load")
        out = run(["h2load", "-n", "2000", "-c", "10", "-m", "10", f"{self.url}/hello"], 60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn(b"2000 succeeded, 0 failed, 0 errored", out.stdout)
        self.assertIn(b"status codes: 2000 2xx", out.stdout)


if __name__ == "__main__":
    unittest.main()
