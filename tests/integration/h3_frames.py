"""HTTP/3 frames and QPACK field sections by hand (RFC 9114, RFC 9204: the static table only),
for the frame-level tests, and portico-h3load, the client that writes them on QUIC streams of
its own and reports what came back."""
import os
import re
import struct
import subprocess

from hpack.huffman_table import decode_huffman

import harness

H3LOAD = os.path.join(harness.BUILD_DIR, "bench", "h3load", "portico-h3load")

# Frame types (RFC 9114 7.2) and stream types (6.2).
DATA, HEADERS, SETTINGS, GOAWAY = 0x0, 0x1, 0x4, 0x7
CONTROL, QPACK_ENCODER, QPACK_DECODER = 0x0, 0x2, 0x3

# Error codes (RFC 9114 8.1, RFC 9204 6).
H3_NO_ERROR = 0x100
H3_GENERAL_PROTOCOL_ERROR = 0x101
H3_STREAM_CREATION_ERROR = 0x103
H3_CLOSED_CRITICAL_STREAM = 0x104
H3_FRAME_UNEXPECTED = 0x105
H3_FRAME_ERROR = 0x106
H3_MISSING_SETTINGS = 0x10A
H3_MESSAGE_ERROR = 0x10E
QPACK_DECOMPRESSION_FAILED = 0x200
QPACK_ENCODER_STREAM_ERROR = 0x201

# The static table entries these tests use (RFC 9204 Appendix A).
STATIC = {(":authority", ""): 0, (":path", "/"): 1, ("content-length", "0"): 4,
          (":method", "GET"): 17, (":method", "POST"): 20, (":scheme", "https"): 23}
STATIC_NAMES = {":authority": 0, ":path": 1, "content-length": 4, ":method": 15,
                ":scheme": 22, "user-agent": 95}
STATUS = {24: "103", 25: "200", 26: "304", 27: "404", 28: "503", 63: "100", 64: "204",
          65: "206", 66: "302", 67: "400", 68: "403", 69: "421", 70: "425", 71: "500"}


def varint(n):
    """A QUIC variable-length integer (RFC 9000 16)."""
    if n < 1 << 6:
        return bytes([n])
    if n < 1 << 14:
        return struct.pack(">H", 0x4000 | n)
    if n < 1 << 30:
        return struct.pack(">I", 0x80000000 | n)
    return struct.pack(">Q", 0xC000000000000000 | n)


def frame(kind, payload):
    return varint(kind) + varint(len(payload)) + payload


def prefixed(n, bits, flags=0):
    """A QPACK/HPACK integer with an N-bit prefix (RFC 7541 5.1)."""
    limit = (1 << bits) - 1
    if n < limit:
        return bytes([flags | n])
    out = bytearray([flags | limit])
    n -= limit
    while n >= 128:
        out.append(0x80 | (n & 0x7F))
        n >>= 7
    out.append(n)
    return bytes(out)


def field_section(fields, required_insert_count=0):
    """A QPACK field section that refers to the static table only, its strings literal."""
    out = bytearray(prefixed(required_insert_count, 8) + b"\x00")
    for name, value in fields:
        if (name, value) in STATIC:
            out += prefixed(STATIC[(name, value)], 6, 0xC0)  # indexed, static
        elif name in STATIC_NAMES:
            out += prefixed(STATIC_NAMES[name], 4, 0x50)  # literal, static name reference
            out += prefixed(len(value), 7) + value.encode()
        else:
            out += prefixed(len(name), 3, 0x20) + name.encode()  # literal name
            out += prefixed(len(value), 7) + value.encode()
    return bytes(out)


def request(method="GET", path="/", authority="localhost", extra=()):
    fields = [(":method", method), (":scheme", "https"), (":authority", authority),
              (":path", path)] + list(extra)
    return frame(HEADERS, field_section(fields))


def read_prefixed(data, i, bits):
    limit = (1 << bits) - 1
    n = data[i] & limit
    i += 1
    if n < limit:
        return n, i
    shift = 0
    while True:
        b = data[i]
        i += 1
        n += (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def read_string(data, i, bits):
    huffman = data[i] & (1 << bits)
    n, i = read_prefixed(data, i, bits)
    raw = data[i:i + n]
    return (decode_huffman(raw) if huffman else raw).decode(), i + n


def fields_of(section):
    """[(name, value)] of a field section with no dynamic references (these clients allow the
    server none); a static entry's name is given as "static:INDEX" but for :status."""
    out, i = [], 2
    while i < len(section):
        b = section[i]
        if b & 0xC0 == 0xC0:
            index, i = read_prefixed(section, i, 6)
            out.append((":status", STATUS[index]) if index in STATUS
                       else ("static:%d" % index, None))
        elif b & 0xC0 == 0x40:
            index, i = read_prefixed(section, i, 4)
            value, i = read_string(section, i, 7)
            out.append((":status" if index in STATUS else "static:%d" % index, value))
        elif b & 0xE0 == 0x20:
            name, i = read_string(section, i, 3)
            value, i = read_string(section, i, 7)
            out.append((name, value))
        else:
            raise ValueError("a dynamic reference in %r" % section)
    return out


def status_of(section):
    """The :status of a response's field section."""
    for name, value in fields_of(section):
        if name == ":status":
            return int(value)
    return None


def frames(data):
    """[(type, payload)] of a stream's bytes."""
    out, i = [], 0
    while i < len(data):
        kind, i = read_varint(data, i)
        n, i = read_varint(data, i)
        out.append((kind, data[i:i + n]))
        i += n
    return out


def read_varint(data, i):
    size = 1 << (data[i] >> 6)
    n = data[i] & 0x3F
    for b in data[i + 1:i + size]:
        n = n << 8 | b
    return n, i + size


class RawResult:
    """What portico-h3load --raw-* printed: its streams, and how the connection ended."""

    def __init__(self, text):
        self.text = text
        self.streams = {}
        self.params = {}
        self.close = None
        self.local_port = self.migrations = None
        for line in text.splitlines():
            words = line.split()
            if words[:1] == ["stream"]:
                data = bytes.fromhex(words[-1]) if words[-2] == "data" else b""
                state = words[2]
                code = int(words[3], 16) if state == "reset" else None
                self.streams[int(words[1])] = (state, code, data)
            elif words[:2] == ["local", "port"]:
                self.local_port, self.migrations = int(words[2]), int(words[4])
            elif words[:1] == ["params"]:
                self.params = {k: int(v) for k, v in zip(words[1::2], words[2::2])}
            elif words[:1] == ["close"] or words in (["timeout"], ["open"]):
                self.close = " ".join(words[1:]) if words[0] == "close" else words[0]

    def status(self, stream_id=0):
        """The :status of the response on a stream (None if no HEADERS came)."""
        for kind, payload in frames(self.streams[stream_id][2]):
            if kind == HEADERS:
                return status_of(payload)
        return None


def raw(port, *streams, await_close=False, timeout=10):
    """Opens one connection, writes streams (("bidi"|"bidi-open"|"uni"|"uni-fin", bytes)) after
    the handshake, and returns what came back. ("migrate", b"") among them moves the client to
    a new local port once the streams before it are answered."""
    args = [H3LOAD, "--timeout", str(timeout)]
    for kind, data in streams:
        args += ["--migrate"] if kind == "migrate" else ["--raw-" + kind, data.hex()]
    if await_close:
        args.append("--await-close")
    if not streams:
        args.append("--params")
    args.append("127.0.0.1:%d" % port)
    out = subprocess.run(args, capture_output=True, timeout=timeout + 30, text=True)
    if out.returncode != 0:
        raise AssertionError("portico-h3load: %d\n%s%s" % (out.returncode, out.stdout, out.stderr))
    return RawResult(out.stdout)


def load(port, *options, timeout=10):
    """portico-h3load's figures of a load run: {"succeeded": n, "done": n, ...}."""
    out = subprocess.run([H3LOAD, "--timeout", str(timeout), *options, "127.0.0.1:%d" % port],
                         capture_output=True, timeout=timeout + 120, text=True)
    text = out.stdout
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                  r"(\d+) failed, (\d+) errored", text)
    if not m:
        raise AssertionError("portico-h3load: %d\n%s%s" % (out.returncode, text, out.stderr))
    keys = ("total", "started", "done", "succeeded", "failed", "errored")
    figures = dict(zip(keys, map(int, m.groups())))
    figures["stalled"] = "stalled:" in text
    figures["text"] = text
    figures["code"] = out.returncode
    return figures
