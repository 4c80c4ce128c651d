"""The goodbye of a WebSocket on a graceful stop (TERM) and an upgrade (USR2): once
[server] long_lived_drain is over, the proxy sends a close frame with 1001 (going away) to the
client and to the origin, each between two frames of its direction, and the tunnel ends as the
origin closes. Before, such a tunnel was cut at the end of grace_period with no close frame."""
import asyncio
import os
import shutil
import signal
import socket
import tempfile
import threading
import unittest

import websockets

import h2_frames
import harness
from h2_frames import END_HEADERS, END_STREAM, GOAWAY, HEADERS, PING, RST_STREAM, SETTINGS
from harness import wait_until
from proxy_harness import PORTICO, Proxy, toml_string
from test_proxy_grpc import GrpcServer
from test_proxy_reload_promise import GrpcBidi
from test_proxy_websocket import H2Client, WsServer, ws_frame

ROUTES = """[[cluster]]
name = "ws"
endpoints = ["127.0.0.1:{port}"]

[[route]]
path_prefix = "/ws"
cluster = "ws"
websocket = true
"""


class Talker(threading.Thread):
    """One WebSocket through the proxy. Echoes one message, says it is ready, then (streaming)
    sends a numbered 64 KiB message every few milliseconds and checks each echo, or (quiet)
    just waits, until the connection closes. Keeps how it closed."""

    def __init__(self, url, streaming):
        super().__init__(daemon=True)
        self.url, self.streaming = url, streaming
        self.ready = threading.Event()
        self.echoes = 0
        self.outcome = None  # (exception class name, close code, close reason) or an error
        self.start()

    def run(self):
        async def talk():
            async with websockets.connect(self.url, compression=None, max_size=None) as ws:
                await ws.send("hello")
                if await ws.recv() != "hello":
                    self.outcome = "the first echo was wrong"
                    return
                self.ready.set()

                async def send():
                    i = 0
                    while self.streaming:
                        await ws.send(i.to_bytes(4, "big") * 16384)
                        i += 1
                        await asyncio.sleep(0.005)

                sender = asyncio.ensure_future(send())
                try:
                    while True:
                        message = await ws.recv()
                        if message != self.echoes.to_bytes(4, "big") * 16384:
                            self.outcome = f"echo {self.echoes} was wrong ({len(message)} bytes)"
                            return
                        self.echoes += 1
                except websockets.ConnectionClosed as e:
                    self.outcome = (type(e).__name__, ws.close_code, ws.close_reason)
                finally:
                    sender.cancel()
        try:
            asyncio.run(asyncio.wait_for(talk(), 60))
        except Exception as e:  # noqa: BLE001 - reported through outcome
            self.outcome = f"{type(e).__name__}: {e}"
        self.ready.set()


class GoodbyeBase:
    extra = {}

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="portico-goodbye-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.ws = WsServer(self.tmp)
        self.addCleanup(self.ws.stop)

    def start_proxy(self, **server):
        # A grace period far beyond the drain window: a close that came from its end would be
        # told apart by the time the proxy takes to exit.
        options = {"grace_period": 30, "long_lived_drain": 1, **server}
        proxy = Proxy([f"127.0.0.1:{self.ws.port}"], workers=2, server_options=options,
                      routes_first=ROUTES.format(port=self.ws.port), **self.extra)
        self.addCleanup(proxy.stop)
        return proxy

    def origin_closes(self):
        return self.ws.process.read_log().count("code 1001")


class Term(GoodbyeBase, unittest.TestCase):
    def test_term_says_goodbye_to_a_quiet_and_a_busy_websocket(self):
        proxy = self.start_proxy()
        url = f"ws://127.0.0.1:{proxy.port}/ws"
        quiet, busy = Talker(url, False), Talker(url, True)
        for t in (quiet, busy):
            self.assertTrue(t.ready.wait(30), t.outcome)
            self.assertIsNone(t.outcome)
        wait_until(lambda: busy.echoes > 20, timeout=30, what="echoes flowing")
        os.kill(proxy.pid, signal.SIGTERM)
        for t in (quiet, busy):
            t.join(30)
            # A clean close with 1001 (ConnectionClosedOK): a frame of ours inside one of
            # theirs would have been a protocol error (1002) or a wrong echo.
            self.assertEqual(t.outcome, ("ConnectionClosedOK", 1001, ""), t.echoes)
        wait_until(lambda: self.origin_closes() >= 2, what="the origin told 1001 twice")
        # Gone well before grace_period (30 s): the tunnels ended with the goodbye.
        self.assertEqual(proxy.process.proc.wait(timeout=20), 0)
        self.assertIn("WebSockets are told goodbye", proxy.process.read_log())

    def test_an_h2_clients_websocket_is_told_too(self):
        # RFC 8441's extended CONNECT: GOAWAY when the drain begins, the close frame in the
        # stream's DATA after long_lived_drain, END_STREAM as the origin closes.
        proxy = self.start_proxy()
        with H2Client(proxy.port, goaway_ends=False) as c:
            status, headers = c.connect("/ws/h2")
            self.assertEqual(status, "200", headers)
            c.send_data(ws_frame(0x1, b"before"))
            self.assertEqual(c.read_ws_message(), (0x1, b"before"))
            os.kill(proxy.pid, signal.SIGTERM)
            self.assertEqual(c.read_ws_message(), (0x8, b"\x03\xe9"))
            c.wait_end_stream()
            self.assertGreaterEqual(c.goaways, 1)
        wait_until(lambda: self.origin_closes() >= 1, what="the origin told 1001")
        self.assertEqual(proxy.process.proc.wait(timeout=20), 0)

    def test_no_goodbye_before_long_lived_drain(self):
        # The window is the WebSocket's own: with a long one it echoes on while requests
        # drain, and the goodbye comes a second before the grace period ends.
        proxy = self.start_proxy(grace_period=4, long_lived_drain=60)
        talker = Talker(f"ws://127.0.0.1:{proxy.port}/ws", True)
        self.assertTrue(talker.ready.wait(30), talker.outcome)
        os.kill(proxy.pid, signal.SIGTERM)
        wait_until(lambda: "graceful stop" in proxy.process.read_log(), what="the drain")
        before = talker.echoes
        wait_until(lambda: talker.echoes > before + 50, timeout=30,
                   what="echoes during the drain")
        talker.join(30)
        self.assertEqual(talker.outcome, ("ConnectionClosedOK", 1001, ""))
        self.assertEqual(proxy.process.proc.wait(timeout=20), 0)


class GrpcAtTheEnd(GoodbyeBase, unittest.TestCase):
    """An h2 stream that outlives the grace period: GOAWAY when the drain begins, and at its
    end RST_STREAM(CANCEL) before the connection closes, which a gRPC client reports as
    CANCELLED (a bare close reads as UNAVAILABLE, the network failing)."""

    def test_a_grpc_stream_past_the_grace_period_is_cancelled(self):
        grpc_server = GrpcServer(self.tmp)
        self.addCleanup(grpc_server.stop)
        routes = ROUTES.format(port=self.ws.port) + "\n".join([
            "", "[[cluster]]", 'name = "grpc"', f'endpoints = ["127.0.0.1:{grpc_server.port}"]',
            'protocol = "h2c"', "", "[[route]]", 'path_prefix = "/test.Echo/"',
            'cluster = "grpc"', ""])
        proxy = Proxy([f"127.0.0.1:{self.ws.port}"], workers=1, routes_first=routes,
                      server_options={"grace_period": 1})
        self.addCleanup(proxy.stop)
        call = GrpcBidi(proxy.port)
        self.addCleanup(call.stop)
        wait_until(lambda: call.echoes > 5, timeout=30, what="the call echoing")
        os.kill(proxy.pid, signal.SIGTERM)
        call.join(30)
        self.assertIsNotNone(call.error)
        self.assertEqual(call.error.code().name, "CANCELLED", call.error)
        self.assertEqual(proxy.process.proc.wait(timeout=20), 0)
        self.assertIn("grace period over", proxy.process.read_log())

    def test_the_last_words_are_followed_by_a_close_that_lingers(self):
        # The stream's CANCEL, then the FIN; a frame the client sent meanwhile is read and
        # dropped, not answered with a reset (which can destroy the CANCEL on a network, and
        # makes a gRPC client that writes first report UNAVAILABLE, not CANCELLED).
        backend = harness.Backend(workers=1)
        self.addCleanup(backend.stop)
        proxy = Proxy([f"127.0.0.1:{backend.port}"], workers=1,
                      server_options={"grace_period": 1})
        self.addCleanup(proxy.stop)
        s = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        self.addCleanup(s.close)
        s.sendall(h2_frames.PREFACE + h2_frames.frame(SETTINGS, 0, 0) + h2_frames.frame(
            HEADERS, END_STREAM | END_HEADERS, 1, h2_frames.request_block("/delay?ms=5000")))
        wait_until(lambda: proxy.metric("portico_upstream_connections", cluster="app",
                                        state="busy") == 1, what="the request upstream")
        os.kill(proxy.pid, signal.SIGTERM)
        # Until the FIN, at the end of the grace period.
        frames = [(t, i, p) for t, _, i, p in h2_frames.split_frames(harness.read_to_eof(s))]
        self.assertIn(GOAWAY, [t for t, _, _ in frames])
        self.assertIn((RST_STREAM, 1, (8).to_bytes(4, "big")), frames)  # CANCEL
        s.sendall(h2_frames.frame(PING, 0, 0, b"12345678"))
        self.assertFalse(h2_frames.reset_within(s, 500),
                         "the frame sent after the CANCEL was answered with a reset")
        s.close()
        self.assertEqual(proxy.process.proc.wait(timeout=20), 0)


class Upgrade(GoodbyeBase, unittest.TestCase):
    """USR2: the old process says goodbye to its WebSockets; a client that reconnects reaches
    the new one."""

    def setUp(self):
        super().setUp()
        self.binary = os.path.join(self.tmp, "portico")
        shutil.copy(PORTICO, self.binary)
        self.pid_file = os.path.join(self.tmp, "portico.pid")
        self.extra = {"binary": self.binary}

    def start_proxy(self, **server):
        return super().start_proxy(pid_file=toml_string(self.pid_file), **server)

    def new_pid(self):
        with open(self.pid_file) as f:
            return int(f.read())

    def test_usr2_says_goodbye_and_the_new_process_takes_the_reconnection(self):
        proxy = self.start_proxy()
        old = proxy.pid
        url = f"ws://127.0.0.1:{proxy.port}/ws"
        talker = Talker(url, True)
        self.assertTrue(talker.ready.wait(30), talker.outcome)
        os.kill(old, signal.SIGUSR2)
        wait_until(lambda: "upgrade: pid" in proxy.process.read_log(), timeout=30,
                   what="the new process serving")
        new = self.new_pid()
        self.addCleanup(lambda: harness.pid_alive(new) and os.kill(new, signal.SIGTERM))
        talker.join(30)
        self.assertEqual(talker.outcome, ("ConnectionClosedOK", 1001, ""))
        self.assertEqual(proxy.process.proc.wait(timeout=20), 0)  # the old one, early
        again = Talker(url, False)  # the new process serves the reconnection
        self.assertTrue(again.ready.wait(30), again.outcome)
        self.assertIsNone(again.outcome)
        os.kill(new, signal.SIGTERM)
        again.join(30)
        self.assertEqual(again.outcome, ("ConnectionClosedOK", 1001, ""))
        wait_until(lambda: not harness.pid_alive(new), timeout=30, what="the new one gone")


if __name__ == "__main__":
    unittest.main()
