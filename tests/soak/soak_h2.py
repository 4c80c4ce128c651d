"""The soak's HTTP/2 clients, h2c by prior knowledge and h2 over TLS, in raw frames (hpack for
the header blocks): python3-h2 refuses every frame after a GOAWAY, even those of the streams
the GOAWAY lets finish, so it cannot watch a process drain after USR2. Each connection keeps a
few streams open at once, uploads bodies under the peer's flow-control windows, reads slow
streams by giving their window back a little at a time, cancels a stream once its answer began
(a client that vanishes), and after a GOAWAY opens no stream on it: those above its
last-stream-id were not processed (not counted: the proxy never saw them)."""
import select
import struct
import threading
import time

import hpack

import soak_http
import soak_plans
from h2_frames import (CONTINUATION, DATA, GOAWAY, HEADERS, PING, PREFACE,
                       RST_STREAM, SETTINGS, WINDOW_UPDATE, END_HEADERS, END_STREAM,
                       frame)

REFUSED_STREAM, CANCEL = 0x7, 0x8
STREAM_DEADLINE = 60  # seconds: a stream open longer is a failure (the proxy's timeouts are shorter)


class _Stream:
    def __init__(self, sid, plan, window):
        self.sid, self.plan = sid, plan
        self.to_send = memoryview(plan.body) if plan.method == "POST" else None
        self.sent_end = plan.method != "POST"
        self.window = window
        self.status = None
        self.body = bytearray()
        self.credit = 0  # bytes read but not yet given back (a slow stream's window)
        self.next_credit = 0.0


class Http2Client(threading.Thread):
    def __init__(self, ctx, name, port, tls, seed, kinds, streams=4):
        super().__init__(daemon=True, name=name)
        import random
        self.ctx, self.port, self.tls, self.kinds = ctx, port, tls, kinds
        self.listener = "tls" if tls else "plain"
        self.prefix = "h2s-" if tls else "h2c-"
        self.rng = random.Random(seed)
        self.max_streams = streams

    def run(self):
        try:
            while not self.ctx.stopping.is_set():
                self.connection()
        except Exception as e:  # noqa: BLE001 - a client's own error is the soak's failure
            self.ctx.tally.fail(self.prefix + "conn", f"client thread died: {e!r}")

    def note(self, stream, outcome, seen):
        plan = stream.plan
        plan.end = time.monotonic()
        self.ctx.tally.note(self.prefix + plan.kind, outcome, self.listener, seen,
                           (plan.method, plan.path))
        soak_plans.note_post(self.ctx.tally, plan, outcome)

    def connection(self):
        try:
            sock = soak_http.connect(self.port, self.tls, ["h2"])
        except OSError as e:
            self.ctx.tally.fail(self.prefix + "conn", f"connect: {e!r}")
            time.sleep(0.1)
            return
        if self.tls and sock.selected_alpn_protocol() != "h2":
            self.ctx.tally.fail(self.prefix + "conn", f"ALPN {sock.selected_alpn_protocol()}")
            sock.close()
            return
        try:
            self.session(sock)
        finally:
            sock.close()

    def session(self, sock):
        enc, dec = hpack.Encoder(), hpack.Decoder()
        streams, next_id = {}, 1
        budget = self.rng.randint(5, 200)  # streams before this connection is left on purpose
        peer_window, conn_window, max_frame = 65535, 65535, 16384
        goaway, buf, block = None, b"", None  # block: (sid, bytes, end_stream) being read
        sock.setblocking(False)
        out = bytearray(PREFACE + frame(SETTINGS, 0, 0, struct.pack(">HI", 2, 0)))

        def send_data():
            nonlocal conn_window
            for s in list(streams.values()):
                while s.to_send is not None and not s.sent_end:
                    n = min(len(s.to_send), s.window, conn_window, max_frame)
                    if n <= 0 and len(s.to_send):
                        break
                    chunk = bytes(s.to_send[:n])
                    s.to_send = s.to_send[n:]
                    s.window -= n
                    conn_window -= n
                    end = len(s.to_send) == 0
                    out.extend(frame(DATA, END_STREAM if end else 0, s.sid, chunk))
                    s.sent_end = end

        while True:
            now = time.monotonic()
            stopping = self.ctx.stopping.is_set()
            while (goaway is None and not stopping and budget > 0
                   and len(streams) < self.max_streams):
                kind = self.rng.choices([k for k, _ in self.kinds],
                                        [w for _, w in self.kinds])[0]
                plan = soak_plans.make_plan(self.rng, kind)
                plan.start = now
                fields = [(":method", plan.method), (":scheme", "https" if self.tls else "http"),
                          (":authority", "soak"), (":path", plan.path), *plan.headers]
                if plan.method == "POST":
                    fields.append(("content-length", str(len(plan.body))))
                flags = END_HEADERS | (0 if plan.method == "POST" else END_STREAM)
                out.extend(frame(HEADERS, flags, next_id, enc.encode(fields)))
                streams[next_id] = _Stream(next_id, plan, peer_window)
                next_id += 2
                budget -= 1
            send_data()
            for s in streams.values():  # slow streams get their window back bit by bit
                if s.credit and now >= s.next_credit:
                    give = min(s.credit, 32768)
                    s.credit -= give
                    s.next_credit = now + 0.05
                    out.extend(frame(WINDOW_UPDATE, 0, s.sid, struct.pack(">I", give)))
            if not streams and (goaway is not None or stopping or budget <= 0):
                try:
                    self._flush(sock, out)  # SETTINGS or WINDOW_UPDATE acks: best effort
                except (OSError, ValueError):
                    pass
                return
            for s in list(streams.values()):
                if now - s.plan.start > STREAM_DEADLINE:
                    self.note(s, f"FAIL: stream open for {STREAM_DEADLINE} s", None)
                    del streams[s.sid]
                    out.extend(frame(RST_STREAM, 0, s.sid, struct.pack(">I", CANCEL)))
            try:
                self._flush(sock, out)
                r, _, _ = select.select([sock], [], [], 0.05)
                data = b""
                if r or (self.tls and sock.pending()):
                    data = sock.recv(65536)
                    if not data:
                        raise ConnectionResetError("EOF")
            except (BlockingIOError, InterruptedError):
                continue
            except (OSError, ValueError) as e:
                import ssl
                if isinstance(e, ssl.SSLWantReadError):
                    continue
                self.lost(streams, goaway, repr(e))
                return
            buf += data
            while len(buf) >= 9:
                length = int.from_bytes(buf[:3], "big")
                if len(buf) < 9 + length:
                    break
                ftype, flags = buf[3], buf[4]
                sid = int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
                payload, buf = buf[9:9 + length], buf[9 + length:]
                if ftype == SETTINGS and not flags & 1:
                    for i in range(0, len(payload), 6):
                        key, value = struct.unpack(">HI", payload[i:i + 6])
                        if key == 4:  # INITIAL_WINDOW_SIZE
                            for s in streams.values():
                                s.window += value - peer_window
                            peer_window = value
                        elif key == 5:
                            max_frame = value
                        elif key == 1:  # HEADER_TABLE_SIZE: said first in the next block
                            enc.header_table_size = value
                    out.extend(frame(SETTINGS, 1, 0))
                elif ftype == WINDOW_UPDATE:
                    inc = struct.unpack(">I", payload)[0] & 0x7FFFFFFF
                    if sid == 0:
                        conn_window += inc
                    elif sid in streams:
                        streams[sid].window += inc
                elif ftype == PING and not flags & 1:
                    out.extend(frame(PING, 1, 0, payload))
                elif ftype == GOAWAY:
                    goaway = int.from_bytes(payload[:4], "big") & 0x7FFFFFFF
                    for s in [s for s in streams.values() if s.sid > goaway]:
                        self.note(s, "allowed: above a GOAWAY's last stream (not processed)",
                                  False)
                        del streams[s.sid]
                elif ftype in (HEADERS, CONTINUATION):
                    if ftype == HEADERS:
                        if flags & 0x8:
                            payload = payload[1:len(payload) - payload[0]]
                        if flags & 0x20:
                            payload = payload[5:]
                        block = (sid, b"", bool(flags & END_STREAM))
                    block = (block[0], block[1] + payload, block[2])
                    if flags & END_HEADERS:
                        fields = dec.decode(block[1])
                        s = streams.get(sid)
                        if s is not None and s.status is None:
                            status = int(dict(fields).get(":status", "0"))
                            if status >= 200:
                                s.status = status
                                if s.plan.vanish:
                                    out.extend(frame(RST_STREAM, 0, sid,
                                                     struct.pack(">I", CANCEL)))
                                    self.note(s, "vanished", True)
                                    del streams[sid]
                                    block = None
                                    continue
                        if block[2]:
                            self.ended(streams, sid)
                        block = None
                elif ftype == DATA:
                    if flags & 0x8:
                        payload = payload[1:len(payload) - payload[0]]
                    if length:
                        out.extend(frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", length)))
                    s = streams.get(sid)
                    if s is not None:
                        s.body += payload
                        if s.plan.slow:
                            s.credit += length
                        elif length:
                            out.extend(frame(WINDOW_UPDATE, 0, sid, struct.pack(">I", length)))
                    if flags & END_STREAM:
                        self.ended(streams, sid)
                elif ftype == RST_STREAM:
                    s = streams.pop(sid, None)
                    if s is not None:
                        code = struct.unpack(">I", payload)[0]
                        if s.status is not None:
                            plan = s.plan
                            plan.end = time.monotonic()
                            self.note(s, plan.judge(s.status, bytes(s.body), True,
                                                    self.ctx.events), True)
                        elif code == REFUSED_STREAM:
                            self.note(s, "allowed: refused stream (not processed)", False)
                        else:
                            # The proxy reset a stream it had taken: counted, and judged as
                            # a cut answer (an origin that died before the proxy sent the
                            # head on).
                            s.plan.end = time.monotonic()
                            self.note(s, s.plan.judge(0, b"", True, self.ctx.events), True)

    def ended(self, streams, sid):
        s = streams.pop(sid, None)
        if s is None:
            return
        s.plan.end = time.monotonic()
        if s.status is None:
            self.note(s, "FAIL: stream ended without a final status", True)
            return
        if not s.sent_end:
            pass  # answered before its body was all sent (an early 502): still an answer
        self.note(s, s.plan.judge(s.status, bytes(s.body), False, self.ctx.events), True)

    def lost(self, streams, goaway, why):
        """The connection ended under open streams."""
        for s in streams.values():
            s.plan.end = time.monotonic()
            if s.status is not None:
                self.note(s, s.plan.judge(s.status, bytes(s.body), True, self.ctx.events), True)
            elif goaway is not None and s.sid > goaway:
                self.note(s, "allowed: above a GOAWAY's last stream (not processed)", False)
            else:
                self.note(s, f"FAIL: connection lost before an answer ({why})", None)
        streams.clear()

    @staticmethod
    def _flush(sock, out):
        deadline = time.monotonic() + 30
        while out:
            try:
                n = sock.send(out)
                del out[:n]
            except (BlockingIOError, InterruptedError):
                if time.monotonic() > deadline:
                    raise TimeoutError("could not send for 30 s")
                select.select([], [sock], [], 0.05)
            except Exception as e:
                import ssl
                if isinstance(e, (ssl.SSLWantWriteError, ssl.SSLWantReadError)):
                    select.select([], [sock], [], 0.05)
                    continue
                raise
