"""Raw HTTP/2 frames for tests of hostile clients: frames built by hand, a reader of the
server's frames, header blocks that HPACK multiplies."""
import socket
import struct
import threading
import time

import hpack

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = (
    0, 1, 2, 3, 4, 6, 7, 8, 9)
END_STREAM, END_HEADERS = 0x1, 0x4
PROTOCOL_ERROR, INTERNAL_ERROR, ENHANCE_YOUR_CALM = 0x1, 0x2, 0xB
FLOOD = 100_000


def frame(ftype, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + \
        struct.pack(">I", stream) + payload


def request_block(path="/hello", method="GET"):
    return hpack.Encoder().encode([(":method", method), (":scheme", "http"),
                                   (":authority", "x"), (":path", path)])


def hpack_bomb_frames(sid, references):
    """A request's header block that indexes one 4,000-byte field and then refers to it
    `references` times (one byte each: dynamic index 62), cut into HEADERS and CONTINUATION
    frames of at most 16,384 bytes."""
    block = request_block() + hpack.Encoder().encode([("x-bomb", "b" * 4000)])
    block += b"\xbe" * references
    chunks = [block[i:i + 16384] for i in range(0, len(block), 16384)]
    out = frame(HEADERS, END_STREAM | (END_HEADERS if len(chunks) == 1 else 0), sid, chunks[0])
    for i, chunk in enumerate(chunks[1:], 1):
        out += frame(CONTINUATION, END_HEADERS if i == len(chunks) - 1 else 0, sid, chunk)
    return out


def split_frames(buf):
    """The whole frames in buf: (type, flags, stream, payload) tuples."""
    frames = []
    while len(buf) >= 9:
        n = int.from_bytes(buf[:3], "big")
        frames.append((buf[3], buf[4], int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF,
                       buf[9:9 + n]))
        buf = buf[9 + n:]
    return frames


def reset_within(sock, ms):
    """Whether a TCP reset comes within ms milliseconds: it shows as POLLERR (recv says only
    EOF once the FIN came first). A server that lingers reads what follows its FIN and
    answers nothing."""
    import select
    poller = select.poll()
    poller.register(sock, select.POLLERR)
    return any(e & select.POLLERR for _, e in poller.poll(ms))


def plain_status(block):
    """The :status of a response header block (the server's first, so no dynamic entry)."""
    return dict(hpack.Decoder().decode(block))[":status"]


class FrameReader(threading.Thread):
    """Reads the server's frames until EOF, while the test sends: (type, flags, stream,
    payload) tuples. Registered with the test so that it ends before its socket is closed: a
    reader left blocked on a closed descriptor number reads from whatever socket gets the
    number next (another test's connection). Without a test, the caller stops it."""

    def __init__(self, test, sock):
        super().__init__(daemon=True)
        self.sock, self.frames, self.closed = sock, [], threading.Event()
        if test is not None:
            test.addCleanup(self.stop)
        self.start()

    def stop(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.join(10)

    def run(self):
        buf = b""
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    break
                buf += data
                while len(buf) >= 9:
                    length = int.from_bytes(buf[:3], "big")
                    if len(buf) < 9 + length:
                        break
                    sid = int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
                    self.frames.append((buf[3], buf[4], sid, buf[9:9 + length]))
                    buf = buf[9 + length:]
        except OSError:
            pass
        self.closed.set()

    def wait_stream_end(self, sid, timeout=10):
        """True once the server has ended stream sid (a frame with END_STREAM, or RST_STREAM)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(s == sid and (t == RST_STREAM or (t in (DATA, HEADERS) and f & END_STREAM))
                   for t, f, s, _ in list(self.frames)):
                return True
            if self.closed.wait(0.01):
                break
        return False

    def goaway_codes(self):
        return [int.from_bytes(p[4:8], "big") for t, _, _, p in self.frames if t == GOAWAY]


def goaways_sent(proxy):
    """GOAWAY frames the proxy has counted, every reason together."""
    text = proxy.admin("/metrics")
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("portico_h2_goaways_sent_total{"))
