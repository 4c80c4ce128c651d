"""gRPC through Portico, with a real gRPC client and server (python3-grpcio, byte messages):
unary, server-streaming, client-streaming and bidi calls from h2c and from h2 over TLS to an
h2c cluster, with the status a server sets (grpc-status and grpc-message as trailers, and as
a trailers-only response) passed through; a deadline (the client's, and grpc-timeout honoured
by the proxy itself); errors the proxy answers itself (a dead upstream, no route) as
trailers-only responses with the mapped grpc-status rather than an HTML page."""
import os
import socket
import struct
import sys
import time
import unittest

import grpc

import harness
from harness import wait_until
from proxy_harness import Proxy
import hpack

HERE = os.path.dirname(os.path.abspath(__file__))


class GrpcServer:
    def __init__(self, tmp):
        self.port = harness.free_port()
        self.process = harness.Process([sys.executable, os.path.join(HERE, "grpc_echo_server.py"),
                                        str(self.port)], os.path.join(tmp, "grpc.log"))
        wait_until(lambda: self.process.proc.poll() is not None or
                   harness.port_open("127.0.0.1", self.port), what="the gRPC server")
        assert self.process.proc.poll() is None, self.process.read_log()

    def stop(self):
        self.process.stop()


def calls(channel):
    m = "/test.Echo/"
    return {"unary": channel.unary_unary(m + "Unary"),
            "server_stream": channel.unary_stream(m + "ServerStream"),
            "client_stream": channel.stream_unary(m + "ClientStream"),
            "bidi": channel.stream_stream(m + "Bidi"),
            "slow": channel.unary_unary(m + "Slow"),
            "fail": channel.unary_unary(m + "Fail")}


class Grpc(unittest.TestCase):
    def setUp(self):
        self.backend = harness.Backend(workers=1)
        self.addCleanup(self.backend.stop)
        self.server = GrpcServer(self.backend.tmp)
        self.addCleanup(self.server.stop)
        self.dead_port = harness.free_port()  # nothing listens there
        routes = "\n".join([
            "[[cluster]]", 'name = "grpc"', f'endpoints = ["127.0.0.1:{self.server.port}"]',
            'protocol = "h2c"', "",
            "[[cluster]]", 'name = "dead"', f'endpoints = ["127.0.0.1:{self.dead_port}"]',
            'protocol = "h2c"', "retry_on_reset = false", "",
            "[[route]]", 'path_prefix = "/test.Echo/"', 'cluster = "grpc"', "",
            "[[route]]", 'path_prefix = "/dead.Service/"', 'cluster = "dead"', "",
            "[[route]]", 'path_prefix = "/limited.Service/"', 'cluster = "grpc"',
            'rate_limit = { name = "calls", rate = "1r/m", key = "route" }', "",
            ""])
        self.proxy = Proxy([f"127.0.0.1:{self.backend.port}"], workers=2, tls=True,
                           routes_first=routes, catch_all=False)
        self.addCleanup(self.proxy.stop)

    def channels(self):
        plain = grpc.insecure_channel(f"127.0.0.1:{self.proxy.port}")
        with open(self.proxy.cert, "rb") as f:
            creds = grpc.ssl_channel_credentials(root_certificates=f.read())
        tls = grpc.secure_channel(f"localhost:{self.proxy.tls_port}", creds)
        return {"h2c": plain, "h2": tls}

    def test_every_kind_of_call_from_h2c_and_h2(self):
        for name, channel in self.channels().items():
            with self.subTest(client=name), channel:
                c = calls(channel)
                self.assertEqual(c["unary"](b"hi", timeout=10), b"hi")
                big = os.urandom(1 << 20)
                self.assertEqual(c["unary"](big, timeout=10), big)
                self.assertEqual(list(c["server_stream"](b"s", timeout=10)),
                                 [b"s-0", b"s-1", b"s-2"])
                self.assertEqual(c["client_stream"](iter([b"a", b"b", b"c"]), timeout=10),
                                 b"a+b+c")
                self.assertEqual(list(c["bidi"](iter([b"1", b"2", b"3"]), timeout=10)),
                                 [b"1", b"2", b"3"])
                with self.assertRaises(grpc.RpcError) as e:
                    c["fail"](b"why", timeout=10)
                self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
                self.assertEqual(e.exception.details(), "bad request: why")
                with self.assertRaises(grpc.RpcError) as e:
                    c["slow"](b"3", timeout=0.5)
                self.assertEqual(e.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)

    def test_errors_of_the_proxy_are_grpc_statuses(self):
        with grpc.insecure_channel(f"127.0.0.1:{self.proxy.port}") as channel:
            dead = channel.unary_unary("/dead.Service/Call")
            with self.assertRaises(grpc.RpcError) as e:
                dead(b"x", timeout=10)
            self.assertEqual(e.exception.code(), grpc.StatusCode.UNAVAILABLE)
            self.assertEqual(e.exception.details(), "Bad Gateway")
        status, headers, ended = raw_call(self.proxy.port, "/no.Route/Call", "nothing.else")
        self.assertEqual((status, headers.get("grpc-status"), ended), ("200", "12", True))
        self.assertEqual(headers.get("content-type"), "application/grpc")
        self.assertEqual(headers.get("grpc-message"), "no route")

    def test_a_refusal_of_an_earlier_filter_is_a_grpc_status_too(self):
        # The rate limit answers 429 before any other filter runs; the gRPC mapping must see
        # that answer as it sees every local reply (README: a trailers-only response).
        raw_call(self.proxy.port, "/limited.Service/Call", "x")  # the one call a minute
        status, headers, ended = raw_call(self.proxy.port, "/limited.Service/Call", "x")
        self.assertEqual((status, headers.get("grpc-status"), ended), ("200", "14", True),
                         headers)
        self.assertEqual(headers.get("content-type"), "application/grpc")
        self.assertEqual(headers.get("grpc-message"), "Too Many Requests")

    def test_grpc_timeout_is_the_proxys_deadline_too(self):
        # No client-side deadline here: only the proxy can end the call after 300 ms.
        start = time.monotonic()
        status, headers, ended = raw_call(self.proxy.port, "/test.Echo/Slow", "x",
                                          timeout="300m", message=b"3")
        elapsed = time.monotonic() - start
        self.assertEqual((status, headers.get("grpc-status"), ended), ("200", "4", True))
        self.assertGreaterEqual(elapsed, 0.25)
        self.assertLess(elapsed, 2.5)


def raw_call(port, path, authority, timeout=None, message=b""):
    """One unary gRPC call in raw frames: (:status, the fields of the HEADERS that ended the
    stream, whether a HEADERS frame ended it)."""
    enc, dec = hpack.Encoder(), hpack.Decoder()

    def frame(kind, flags, sid, payload=b""):
        return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + \
            struct.pack(">I", sid) + payload
    fields = [(":method", "POST"), (":scheme", "http"), (":path", path),
              (":authority", authority), ("content-type", "application/grpc"),
              ("te", "trailers")]
    if timeout:
        fields.append(("grpc-timeout", timeout))
    body = b"\x00" + struct.pack(">I", len(message)) + message
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0) +
                  frame(1, 0x4, 1, enc.encode(fields)) + frame(0, 0x1, 1, body))
        buf, status, last = b"", None, {}
        while True:
            while len(buf) < 9 or len(buf) < 9 + int.from_bytes(buf[:3], "big"):
                more = s.recv(65536)
                if not more:
                    raise ConnectionError("closed before the call ended")
                buf += more
            n = int.from_bytes(buf[:3], "big")
            kind, flags, sid = buf[3], buf[4], int.from_bytes(buf[5:9], "big")
            payload, buf = buf[9:9 + n], buf[9 + n:]
            if kind == 4 and not flags & 1:
                s.sendall(frame(4, 1, 0))
            if sid != 1:
                continue
            if kind == 3:
                raise ConnectionError("stream reset")
            if kind == 1:
                last = dict(dec.decode(payload))
                status = status or last.get(":status")
                if flags & 1:
                    return status, last, True
            if kind == 0 and flags & 1:
                return status, last, False


if __name__ == "__main__":
    unittest.main()
