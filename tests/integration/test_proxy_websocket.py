"""WebSocket through Portico to a real WebSocket server (python3-websockets) behind an
HTTP/1.1 cluster, on routes that opt in (`websocket = true`): the HTTP/1.1 Upgrade with its 101
passed through, then text and binary messages both ways, a 10 MB message, the close handshake;
an upstream that refuses the handshake is answered as such; a route without the opt-in does
not forward the Upgrade; an idle tunnel closes after upgrade_timeout. From HTTP/2 (h2c), RFC
8441's extended CONNECT (SETTINGS_ENABLE_CONNECT_PROTOCOL, :protocol websocket) is tunnelled
to the same HTTP/1.1 upgrade upstream, spoken here in raw frames."""
import asyncio
import os
import socket
import struct
import sys
import time
import unittest

import harness
from harness import wait_until
from proxy_harness import Proxy

import hpack
import websockets
import websockets.exceptions

HERE = os.path.dirname(os.path.abspath(__file__))


class WsServer:
    def __init__(self, tmp):
        self.port = harness.free_port()
        self.process = harness.Process([sys.executable, os.path.join(HERE, "ws_echo_server.py"),
                                        str(self.port)], os.path.join(tmp, "ws.log"))
        wait_until(lambda: self.process.proc.poll() is not None or
                   harness.port_open("127.0.0.1", self.port), what="the WebSocket server")
        assert self.process.proc.poll() is None, self.process.read_log()

    def stop(self):
        self.process.stop()


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


class WebSocket(unittest.TestCase):
    def setUp(self):
        self.backend = harness.Backend(workers=1)
        self.addCleanup(self.backend.stop)
        self.tmp = os.path.join(self.backend.tmp, "ws")
        os.makedirs(self.tmp)
        self.ws = WsServer(self.tmp)
        self.addCleanup(self.ws.stop)
        routes = "\n".join([
            "[[cluster]]", 'name = "ws"', f'endpoints = ["127.0.0.1:{self.ws.port}"]', "",
            "[[route]]", 'path_prefix = "/ws"', 'cluster = "ws"', "websocket = true", "",
            "[[route]]", 'path_prefix = "/idle"', 'cluster = "ws"', "websocket = true",
            "upgrade_timeout = 1", "",
            "[[route]]", 'path_prefix = "/slow"', 'cluster = "ws"', "websocket = true", "",
            "[[route]]", 'path_prefix = "/reject"', 'cluster = "ws"', "websocket = true", "",
            "[[route]]", 'path_prefix = "/plain"', 'cluster = "ws"', "",
            "[[cluster]]", 'name = "plainhttp"', f'endpoints = ["127.0.0.1:{self.backend.port}"]',
            "", "[[route]]", 'path_prefix = "/h1only"', 'cluster = "plainhttp"',
            'prefix_rewrite = "/hello"', "websocket = true", ""])
        self.proxy = Proxy([f"127.0.0.1:{self.backend.port}"], workers=2, routes_first=routes)
        self.addCleanup(self.proxy.stop)
        self.url = f"ws://127.0.0.1:{self.proxy.port}"

    def test_text_binary_large_and_close_through_http1(self):
        async def talk():
            async with websockets.connect(self.url + "/ws", max_size=None,
                                          compression=None) as ws:
                await ws.send("héllo")
                self.assertEqual(await ws.recv(), "héllo")
                await ws.send(b"\x00\x01\xfe\xff")
                self.assertEqual(await ws.recv(), b"\x00\x01\xfe\xff")
                big = os.urandom(10 * 1024 * 1024)
                await ws.send(big)
                self.assertEqual(await ws.recv(), big)
                for i in range(50):  # many small ones, interleaved
                    await ws.send(f"m{i}")
                for i in range(50):
                    self.assertEqual(await ws.recv(), f"m{i}")
                await ws.close(code=1000, reason="done")
                return ws.close_code, ws.close_reason
        self.assertEqual(run(talk()), (1000, "done"))
        log = self.proxy.read_log()
        self.assertNotIn("ERROR", log)

    def test_wss_over_a_tls_listener(self):
        import ssl
        proxy = Proxy([f"127.0.0.1:{self.backend.port}"], workers=1, tls=True,
                      routes_first="\n".join([
                          "[[cluster]]", 'name = "ws"', f'endpoints = ["127.0.0.1:{self.ws.port}"]',
                          "[[route]]", 'path_prefix = "/ws"', 'cluster = "ws"',
                          "websocket = true", ""]))
        self.addCleanup(proxy.stop)
        ctx = ssl.create_default_context(cafile=proxy.cert)
        ctx.set_alpn_protocols(["http/1.1"])

        async def talk():
            async with websockets.connect(f"wss://localhost:{proxy.tls_port}/ws", ssl=ctx) as ws:
                await ws.send("secret")
                return await ws.recv()
        self.assertEqual(run(talk()), "secret")

    def test_an_upstream_refusing_the_handshake_is_answered_as_it_said(self):
        async def talk():
            async with websockets.connect(self.url + "/reject/x"):
                pass
        with self.assertRaises(websockets.exceptions.InvalidStatusCode) as e:
            run(talk())
        self.assertEqual(e.exception.status_code, 403)
        # The proxy still serves the next one on the same cluster.
        self.test_text_binary_large_and_close_through_http1()

    def test_a_route_without_websocket_does_not_forward_the_upgrade(self):
        async def talk():
            async with websockets.connect(self.url + "/plain"):
                pass
        # The WebSocket server, handed a GET without Upgrade, says 426.
        with self.assertRaises(websockets.exceptions.InvalidStatusCode) as e:
            run(talk())
        self.assertEqual(e.exception.status_code, 426)

    def test_a_handshake_with_a_body_is_refused(self):
        # A body on the handshake would reach the upstream after the head, raw: a server that
        # declines the upgrade would read it as a second request (smuggled past the routes).
        smuggled = b"GET /admin HTTP/1.1\r\nHost: x\r\n\r\n"
        head = (b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                b"Content-Length: " + str(len(smuggled)).encode() + b"\r\n\r\n")
        with socket.create_connection(("127.0.0.1", self.proxy.port), timeout=10) as s, \
                s.makefile("rb") as f:
            s.sendall(head + smuggled)
            r = harness.read_http1_response(f)
        self.assertEqual(r.status, 400)

    def test_an_h2_connect_the_upstream_does_not_upgrade_is_not_a_tunnel(self):
        # Bytes sent before the 200 wait for it; an upstream that answers the handshake with
        # a 2xx of its own (no 101) opened no tunnel: 502, not a 200 the client would take
        # for one.
        with H2Client(self.proxy.port) as c:
            self.assertEqual(c.connect("/h1only")[0], "502")

    def test_an_idle_tunnel_closes_after_upgrade_timeout(self):
        async def talk():
            async with websockets.connect(self.url + "/idle/slow", ping_interval=None) as ws:
                start = time.monotonic()
                with self.assertRaises(websockets.exceptions.ConnectionClosed):
                    await asyncio.wait_for(ws.recv(), 20)
                return time.monotonic() - start
        elapsed = run(talk())
        self.assertGreaterEqual(elapsed, 0.9)
        self.assertLess(elapsed, 10)

    def test_rfc8441_extended_connect_from_h2c(self):
        with H2Client(self.proxy.port) as c:
            self.assertEqual(c.settings.get(0x8), 1, c.settings)  # ENABLE_CONNECT_PROTOCOL
            status, headers = c.connect("/ws/chat")
            self.assertEqual(status, "200", headers)
            self.assertNotIn("sec-websocket-accept", headers)
            c.send_data(ws_frame(0x1, b"hello over h2"))
            self.assertEqual(c.read_ws_message(), (0x1, b"hello over h2"))
            big = os.urandom(300 * 1024)  # past the initial windows both ways
            c.send_data(ws_frame(0x2, big))
            self.assertEqual(c.read_ws_message(), (0x2, big))
            c.send_data(ws_frame(0x8, struct.pack(">H", 1000)))  # close
            self.assertEqual(c.read_ws_message()[0], 0x8)
            c.wait_end_stream()
        with H2Client(self.proxy.port) as c:
            status, _ = c.connect("/plain")
            self.assertEqual(status, "501")


def ws_frame(opcode, payload):
    """A client's frame (masked, RFC 6455 5.2)."""
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x80 | opcode])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack(">H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack(">Q", n)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


class H2Client:
    """Just enough HTTP/2 for one extended CONNECT stream, frame by frame."""

    def __init__(self, port, tls=False, goaway_ends=True):
        # goaway_ends=False: a GOAWAY is counted (in goaways), not raised; the stream goes on.
        self.goaway_ends, self.goaways = goaway_ends, 0
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        if tls:  # h2 by ALPN; the test's certificate is not checked
            import ssl
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            ctx.set_alpn_protocols(["h2"])
            self.sock = ctx.wrap_socket(self.sock, server_hostname="localhost")
            assert self.sock.selected_alpn_protocol() == "h2"
        self.enc, self.dec = hpack.Encoder(), hpack.Decoder()
        self.buf, self.data, self.ended = b"", b"", False
        self.settings = {}
        self.sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + self.frame(4, 0, 0))
        while not self.settings:
            self.read_frame()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.sock.close()

    @staticmethod
    def frame(kind, flags, sid, payload=b""):
        return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + \
            struct.pack(">I", sid) + payload

    def read_frame(self):
        while len(self.buf) < 9 or len(self.buf) < 9 + int.from_bytes(self.buf[:3], "big"):
            more = self.sock.recv(65536)
            if not more:
                raise ConnectionError("closed")
            self.buf += more
        n = int.from_bytes(self.buf[:3], "big")
        kind, flags = self.buf[3], self.buf[4]
        sid = int.from_bytes(self.buf[5:9], "big") & 0x7fffffff
        payload, self.buf = self.buf[9:9 + n], self.buf[9 + n:]
        if kind == 4 and not flags & 1:
            for i in range(0, len(payload), 6):
                key, value = struct.unpack(">HI", payload[i:i + 6])
                self.settings[key] = value
            self.settings.setdefault(0, 0)
            self.sock.sendall(self.frame(4, 1, 0))
        elif kind == 0 and sid == 1:
            self.data += payload
            if payload:  # the window back at once
                inc = struct.pack(">I", len(payload))
                self.sock.sendall(self.frame(8, 0, 0, inc) + self.frame(8, 0, 1, inc))
            self.ended |= bool(flags & 1)
        elif kind == 1 and sid == 1:
            self.headers = dict(self.dec.decode(payload))
            self.ended |= bool(flags & 1)
        elif kind == 3 and sid == 1:
            raise ConnectionError(f"stream reset: {payload.hex()}")
        elif kind == 7:
            if self.goaway_ends:
                raise ConnectionError(f"GOAWAY {payload.hex()}")
            self.goaways += 1
        return kind

    def connect(self, path):
        self.headers = None
        block = self.enc.encode([(":method", "CONNECT"), (":protocol", "websocket"),
                                 (":scheme", "http"), (":path", path), (":authority", "x"),
                                 ("sec-websocket-version", "13")])
        self.sock.sendall(self.frame(1, 0x4, 1, block))  # END_HEADERS, no END_STREAM
        while self.headers is None:
            self.read_frame()
        return self.headers.get(":status"), self.headers

    def send_data(self, data):
        # In pieces within the default windows; the proxy's WINDOW_UPDATEs are read as they come.
        for i in range(0, len(data), 16384):
            self.sock.sendall(self.frame(0, 0, 1, data[i:i + 16384]))

    def read_ws_message(self):
        """One whole server frame (unmasked): (opcode, payload)."""
        while True:
            d = self.data
            if len(d) >= 2:
                n, at = d[1] & 0x7f, 2
                if n == 126 and len(d) >= 4:
                    n, at = struct.unpack(">H", d[2:4])[0], 4
                elif n == 127 and len(d) >= 10:
                    n, at = struct.unpack(">Q", d[2:10])[0], 10
                if n < 126 or at > 2:
                    if len(d) >= at + n:
                        self.data = d[at + n:]
                        return d[0] & 0x0f, d[at:at + n]
            self.read_frame()

    def wait_end_stream(self):
        deadline = time.monotonic() + 10
        while not self.ended and time.monotonic() < deadline:
            self.read_frame()
        assert self.ended, "no END_STREAM"


if __name__ == "__main__":
    unittest.main()
