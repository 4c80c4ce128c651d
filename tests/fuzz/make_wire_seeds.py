#!/usr/bin/python3
"""Writes the seed inputs of proxy_wire_fuzz (tests/fuzz/proxy_wire_script.h's form) into
tests/fuzz/corpus/proxy_wire/seed-*: HTTP/1.1, h2c prior knowledge and h2c Upgrade clients,
HTTP/1.1 and h2c upstreams, WebSocket, compression, redirects, timeouts, resets, garbage.
Inputs fuzzing finds are added beside them (minimised, named by libFuzzer's hash)."""
import os
import struct
import sys

import hpack

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "proxy_wire")


def cw(data):
    return bytes([0]) + struct.pack("<H", len(data)) + data


def uw(data, conn=0):
    return bytes([2 | conn << 3]) + struct.pack("<H", len(data)) + data


def clock(seconds):
    return bytes([3, min(255, int(seconds * 4))])


def client_shut():
    return bytes([4])


def upstream_close(conn=0):
    return bytes([5 | conn << 3])


def upstream_shut(conn=0):
    return bytes([6 | conn << 3])


def client_reading(on):
    return bytes([7 | (0 if on else 1) << 3])


def frame(ftype, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + \
        struct.pack(">I", stream) + payload


PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE = 0, 1, 3, 4, 6, 7, 8
END_STREAM, END_HEADERS, ACK = 1, 4, 1


def h2_request(sid=1, path="/", method="GET", end=True, extra=()):
    block = hpack.Encoder().encode([(":method", method), (":scheme", "http"),
                                    (":authority", "x"), (":path", path)] + list(extra))
    return frame(HEADERS, END_HEADERS | (END_STREAM if end else 0), sid, block)


def h2_response(sid=1, body=b"hello", status="200"):
    block = hpack.Encoder().encode([(":status", status), ("content-length", str(len(body)))])
    return (frame(HEADERS, END_HEADERS, sid, block) +
            frame(DATA, END_STREAM, sid, body))


H2_CLIENT = PREFACE + frame(SETTINGS, 0, 0)
H2_SERVER = frame(SETTINGS, 0, 0) + frame(SETTINGS, ACK, 0)
GET = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"

H1 = b"\x00"
H2C = b"\x01"

SEEDS = {
    "h1-get": H1 + cw(GET) + uw(OK),
    "h1-pipelined": H1 + cw(GET * 3) + uw(OK) + uw(OK) + uw(OK),
    "h1-post-chunked": H1 + cw(b"POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                               b"\r\n5\r\nhello\r\n0\r\n\r\n") + uw(OK),
    "h1-post-length": H1 + cw(b"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n01234")
    + cw(b"56789") + uw(OK),
    "h1-expect-continue": H1 + cw(b"PUT /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
                                  b"Expect: 100-continue\r\n\r\n")
    + uw(b"HTTP/1.1 100 Continue\r\n\r\n") + cw(b"abc") + uw(OK),
    "h1-redirect-direct": H1 + cw(b"GET /r HTTP/1.1\r\nHost: x\r\n\r\n"
                                  b"GET /d HTTP/1.1\r\nHost: x\r\n\r\n"),
    "h1-chunked-response": H1 + cw(GET) + uw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                                             b"\r\n3\r\nabc\r\n0\r\nx-t: 1\r\n\r\n"),
    "h1-close-delimited": H1 + cw(GET) + uw(b"HTTP/1.0 200 OK\r\n\r\nuntil the end")
    + upstream_close(),
    "h1-reset-mid-response": H1 + cw(GET) + uw(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"
                                               b"partial") + upstream_close(),
    "h1-garbage": H1 + cw(GET) + uw(b"HTTP/9 what\r\n\r\n\x00\x01"),
    "h1-gzip": H1 + cw(b"GET /gz HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip, br\r\n\r\n")
    + uw(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 2000\r\n\r\n"
         + b"<p>compress me</p>" * 111 + b"xx"),
    "h1-websocket": H1 + cw(b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                            b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                            b"Sec-WebSocket-Version: 13\r\n\r\n")
    + uw(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")
    + cw(b"\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58") + uw(b"\x81\x05Hello")
    + client_shut(),
    "h1-header-timeout": H1 + cw(b"GET / HTTP/1.1\r\nHost: x\r\n") + clock(12),
    "h1-response-timeout": H1 + cw(GET) + clock(45),
    "h1-slow-reader": H1 + client_reading(False) + cw(GET)
    + uw(b"HTTP/1.1 200 OK\r\nContent-Length: 60000\r\n\r\n" + b"z" * 60000)
    + clock(31) + client_reading(True),
    "h1-client-vanishes-mid-body": H1 + cw(b"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: "
                                           b"100000\r\n\r\n" + b"b" * 1000),
    "h1-half-close": H1 + cw(GET) + client_shut() + uw(OK),
    "h1-upstream-half-close": H1 + cw(GET) + upstream_shut() + uw(OK),
    "h2-get": H1 + cw(H2_CLIENT + h2_request()) + uw(OK),
    "h2-post": H1 + cw(H2_CLIENT + h2_request(path="/p", method="POST", end=False)
                       + frame(DATA, 0, 1, b"abc") + frame(DATA, END_STREAM, 1, b"def"))
    + uw(OK),
    "h2-streams-and-reset": H1 + cw(H2_CLIENT + h2_request(1) + h2_request(3, "/d")
                                    + h2_request(5, "/r") + frame(RST_STREAM, 0, 1, b"\0\0\0\x08"))
    + uw(OK),
    "h2-ping-window-goaway": H1 + cw(H2_CLIENT + frame(PING, 0, 0, b"12345678")
                                     + frame(WINDOW_UPDATE, 0, 0, b"\0\0\x10\0") + h2_request()
                                     + frame(GOAWAY, 0, 0, b"\0\0\0\x01\0\0\0\0")) + uw(OK),
    "h2-sleep-and-wake": H1 + cw(H2_CLIENT + frame(SETTINGS, ACK, 0) + h2_request()) + uw(OK)
    + clock(2) + cw(frame(SETTINGS, ACK, 0)) + clock(1) + cw(h2_request(3, "/d")),
    "h2-extended-connect": H1 + cw(H2_CLIENT + frame(HEADERS, END_HEADERS, 1, hpack.Encoder().encode(
        [(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "http"),
         (":authority", "x"), (":path", "/ws"), ("sec-websocket-version", "13")])))
    + uw(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")
    + cw(frame(DATA, 0, 1, b"\x81\x80\0\0\0\0")) + uw(b"\x81\x02hi"),
    "h2c-upgrade": H1 + cw(b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\n"
                           b"HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n"
                           b"Connection: Upgrade, HTTP2-Settings\r\n\r\n" + H2_CLIENT) + uw(OK),
    "up-h2c-h1-client": H2C + cw(GET) + uw(H2_SERVER + h2_response()),
    "up-h2c-h2-client": H2C + cw(H2_CLIENT + h2_request() + h2_request(3, "/gz"))
    + uw(H2_SERVER + h2_response(1) + h2_response(3, b"<p>x</p>" * 50)),
    "up-h2c-reset": H2C + cw(GET) + uw(H2_SERVER + frame(RST_STREAM, 0, 1, b"\0\0\0\x07")),
    "up-h2c-goaway": H2C + cw(GET) + uw(H2_SERVER + frame(GOAWAY, 0, 0, b"\0\0\0\0\0\0\0\0")),
    "up-h2c-post": H2C + cw(b"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
    + uw(H2_SERVER + frame(WINDOW_UPDATE, 0, 0, b"\0\0\x10\0") + h2_response()),
    "up-h2c-stall": H2C + cw(GET) + uw(H2_SERVER) + clock(45),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(OUT, f"seed-{name}"), "wb") as f:
            f.write(data)
    print(f"{len(SEEDS)} seeds in {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
