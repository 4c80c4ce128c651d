"""The soak's clients on the proxy's "wild" listeners, whose request counts are checked only
as bounds: WebSocket sessions (python3-websockets), gRPC calls of every kind (python3-grpcio,
which retries transparently what a GOAWAY says was not processed, so a call is not one
request), and hostile clients whose floods end their connections (PRIORITY and empty DATA
floods, an HPACK bomb, rapid reset, an HTTP/1.1 header flood, a head trickled and abandoned)."""
import asyncio
import os
import socket
import struct
import threading
import time

import grpc
import websockets
import websockets.exceptions

import soak_http
import soak_plans
from h2_frames import (DATA, END_HEADERS, END_STREAM, ENHANCE_YOUR_CALM, GOAWAY,
                       HEADERS, PREFACE, PRIORITY, PROTOCOL_ERROR, RST_STREAM,
                       SETTINGS, frame, hpack_bomb_frames, request_block)


class WebSocketClients(threading.Thread):
    """n sessions at once on one asyncio loop, each: connect, five messages (text and binary,
    one of 64 KiB) echoed in order, close."""

    def __init__(self, ctx, port, tls_port, n, seed):
        super().__init__(daemon=True, name="ws")
        import random
        self.ctx, self.port, self.tls_port, self.n = ctx, port, tls_port, n
        self.rng = random.Random(seed)

    def run(self):
        try:
            asyncio.run(self.main())
        except Exception as e:  # noqa: BLE001
            self.ctx.tally.fail("ws", f"client thread died: {e!r}")

    async def main(self):
        await asyncio.gather(*(self.loop(i) for i in range(self.n)))

    async def loop(self, i):
        while not self.ctx.stopping.is_set():
            await self.session(tls=i % 2 == 1)

    async def session(self, tls):
        kind = "wss" if tls else "ws"
        token = soak_plans.unique("w")
        start = time.monotonic()
        try:
            if tls:
                url = f"wss://localhost:{self.tls_port}/ws/{token}"
                ssl_ctx = soak_http.tls_context(["http/1.1"])
            else:
                url, ssl_ctx = f"ws://127.0.0.1:{self.port}/ws/{token}", None
            async with websockets.connect(url, ssl=ssl_ctx, max_size=None, compression=None,
                                          open_timeout=20, close_timeout=10,
                                          ping_interval=None) as ws:
                for j in range(5):
                    msg = (f"{token}-{j}" if j != 2 else
                           token.encode() + os.urandom(65536))
                    await ws.send(msg)
                    got = await asyncio.wait_for(ws.recv(), 20)
                    if got != msg:
                        self.ctx.tally.fail(kind, f"wrong echo {str(got)[:60]!r}")
                        return
                    await asyncio.sleep(self.rng.random() * 0.05)
            self.ctx.tally.note(kind, "ok")
        except websockets.exceptions.InvalidStatusCode as e:
            if e.status_code in (502, 503, 504):
                self.allowed_or_fail(kind, start, f"handshake {e.status_code}", always=True)
            else:
                self.ctx.tally.fail(kind, f"handshake {e.status_code}")
        except (websockets.exceptions.WebSocketException, OSError, asyncio.TimeoutError) as e:
            self.allowed_or_fail(kind, start, type(e).__name__)

    def allowed_or_fail(self, kind, start, what, always=False):
        if self.ctx.events.crashed("ws", start, time.monotonic()):
            self.ctx.tally.note(kind, f"allowed: {what} (origin crashed)")
        elif always:
            self.ctx.tally.note(kind, f"allowed: {what} (unattributed)")
        else:
            self.ctx.tally.fail(kind, f"{what} with no fault")


ALLOWED_GRPC = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.INTERNAL, grpc.StatusCode.CANCELLED,
                grpc.StatusCode.UNKNOWN}


class GrpcClient(threading.Thread):
    """Calls of each kind one after another on one channel (h2c, or h2 over TLS), each checked:
    unary and client streaming echo their tokens, server streaming numbers three, bidi echoes
    each message as it goes."""

    def __init__(self, ctx, port, tls, cert, seed):
        super().__init__(daemon=True, name="grpc")
        import random
        self.ctx, self.port, self.tls, self.cert = ctx, port, tls, cert
        self.rng = random.Random(seed)

    def channel(self):
        if not self.tls:
            return grpc.insecure_channel(f"127.0.0.1:{self.port}")
        with open(self.cert, "rb") as f:
            creds = grpc.ssl_channel_credentials(root_certificates=f.read())
        return grpc.secure_channel(f"localhost:{self.port}", creds)

    def run(self):
        kind = "grpcs" if self.tls else "grpc"
        try:
            with self.channel() as ch:
                m = "/test.Echo/"
                calls = {"unary": ch.unary_unary(m + "Unary"),
                         "server_stream": ch.unary_stream(m + "ServerStream"),
                         "client_stream": ch.stream_unary(m + "ClientStream"),
                         "bidi": ch.stream_stream(m + "Bidi")}
                while not self.ctx.stopping.is_set():
                    self.call(kind, calls, self.rng.choice(sorted(calls)))
        except Exception as e:  # noqa: BLE001
            self.ctx.tally.fail(kind, f"client thread died: {e!r}")

    def call(self, kind, calls, name):
        t = soak_plans.unique("g").encode()
        start = time.monotonic()
        try:
            if name == "unary":
                body = t + os.urandom(self.rng.choice([0, 100, 70000]))
                ok = calls[name](body, timeout=20) == body
            elif name == "server_stream":
                ok = list(calls[name](t, timeout=20)) == [t + b"-0", t + b"-1", t + b"-2"]
            elif name == "client_stream":
                ok = calls[name](iter([t, b"b", b"c"]), timeout=20) == t + b"+b+c"
            else:
                msgs = [t + b"-%d" % i for i in range(4)]
                ok = list(calls[name](iter(msgs), timeout=20)) == msgs
            if ok:
                self.ctx.tally.note(f"{kind}-{name}", "ok")
            else:
                self.ctx.tally.fail(f"{kind}-{name}", "wrong answer")
        except grpc.RpcError as e:
            code = e.code()
            if self.ctx.events.crashed("grpc", start, time.monotonic()) and code in ALLOWED_GRPC:
                self.ctx.tally.note(f"{kind}-{name}", f"allowed: {code.name} (origin crashed)")
            elif code == grpc.StatusCode.UNAVAILABLE:
                self.ctx.tally.note(f"{kind}-{name}", "allowed: UNAVAILABLE (unattributed)")
            else:
                self.ctx.tally.fail(f"{kind}-{name}", f"{code.name}: {e.details()}")


def _read_until_closed(sock, timeout):
    """Frames the server sent until it closed the connection: (GOAWAY codes, closed in time)."""
    sock.settimeout(timeout)
    deadline = time.monotonic() + timeout
    buf, codes = b"", []
    try:
        while time.monotonic() < deadline:
            data = sock.recv(65536)
            if not data:
                break
            buf += data
            while len(buf) >= 9:
                length = int.from_bytes(buf[:3], "big")
                if len(buf) < 9 + length:
                    break
                if buf[3] == GOAWAY:
                    codes.append(int.from_bytes(buf[13:17], "big"))
                buf = buf[9 + length:]
        else:
            return codes, False
    except socket.timeout:
        return codes, False
    except OSError:
        pass
    return codes, True


class HostileClient(threading.Thread):
    """One hostile connection after another, each of which must be ended by the proxy (GOAWAY
    and close) within bounded time; the proxy serves everyone else meanwhile."""

    FLOOD = 5000  # frames: well past the glitch budget's burst of 1,000

    def __init__(self, ctx, port, seed):
        super().__init__(daemon=True, name="hostile")
        import random
        self.ctx, self.port = ctx, port
        self.rng = random.Random(seed)

    def run(self):
        kinds = ["priority", "empty_data", "hpack_bomb", "rapid_reset", "header_flood",
                 "trickle"]
        try:
            while not self.ctx.stopping.is_set():
                kind = self.rng.choice(kinds)
                getattr(self, kind)()
                self.ctx.stopping.wait(0.2)
        except Exception as e:  # noqa: BLE001
            self.ctx.tally.fail("hostile", f"client thread died: {e!r}")

    def h2_flood(self, kind, payload, codes_ok=(ENHANCE_YOUR_CALM,)):
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        except OSError as e:
            self.ctx.tally.fail(f"flood-{kind}", f"connect: {e!r}")
            return
        with s:
            try:
                s.sendall(PREFACE + frame(SETTINGS, 0, 0) + payload)
            except OSError:
                pass  # closed while still sending: the proxy stopped reading the flood
            codes, closed = _read_until_closed(s, 20)
        if not closed:
            self.ctx.tally.fail(f"flood-{kind}", f"still open 20 s after the flood ({codes})")
        elif codes and codes[-1] not in codes_ok:
            self.ctx.tally.fail(f"flood-{kind}", f"GOAWAY codes {codes}")
        else:
            self.ctx.tally.note(f"flood-{kind}", "ended" + (" (GOAWAY)" if codes else
                                                            " (closed)"))

    def priority(self):
        prio = struct.pack(">IB", 0, 15)
        self.h2_flood("priority", b"".join(frame(PRIORITY, 0, 2 * i + 1, prio)
                                           for i in range(self.FLOOD)))

    def empty_data(self):
        opening = frame(HEADERS, END_HEADERS, 1, request_block("/echo", "POST"))
        self.h2_flood("empty_data", opening + frame(DATA, 0, 1) * self.FLOOD)

    def hpack_bomb(self):
        self.h2_flood("hpack_bomb", hpack_bomb_frames(1, 16000))

    def rapid_reset(self):
        block = request_block("/hello")
        out = b"".join(frame(HEADERS, END_HEADERS | END_STREAM, 2 * i + 1, block) +
                       frame(RST_STREAM, 0, 2 * i + 1, struct.pack(">I", 8))
                       for i in range(1500))
        self.h2_flood("rapid_reset", out, codes_ok=(ENHANCE_YOUR_CALM, PROTOCOL_ERROR))

    def header_flood(self):
        """An HTTP/1.1 head past max_header_bytes: 431, and the proxy goes on."""
        head = b"GET /hello HTTP/1.1\r\nHost: soak\r\n" + b"".join(
            b"x-flood-%d: %s\r\n" % (i, b"f" * 1000) for i in range(40)) + b"\r\n"
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=20) as s:
                try:
                    s.sendall(head)
                except OSError:
                    pass
                line = s.makefile("rb").readline()
        except OSError as e:
            line = repr(e).encode()
        if line.startswith(b"HTTP/1.1 431"):
            self.ctx.tally.note("flood-header", "431")
        else:
            self.ctx.tally.fail("flood-header", f"answered {line[:60]!r}")

    def trickle(self):
        """A head sent a few bytes at a time, then abandoned half-way (a slowloris that gives
        up): the proxy holds nothing for it after."""
        head = b"GET /hello HTTP/1.1\r\nHost: soak\r\nX-Slow: "
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
                for i in range(0, len(head), 4):
                    s.sendall(head[i:i + 4])
                    time.sleep(0.02)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, soak_http.LINGER_RESET)
        except OSError:
            pass
        self.ctx.tally.note("trickle", "abandoned")
