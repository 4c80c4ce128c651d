"""The proxy across the protocol matrix: clients {HTTP/1.1, h2c prior knowledge, h2c Upgrade,
h2 over TLS, HTTP/1.1 over TLS} x upstreams {HTTP/1.1 on a unix socket, HTTP/1.1 on TCP, h2c on
a unix socket}, every cell checking the HTTP version it ran (an h2c Upgrade is declined for a
request with a body, as RFC 9113 3.1's successor text allows and nghttpx does: those cells run
HTTP/1.1, and say so). Two more columns: WebSocket (to python3-websockets behind an HTTP/1.1
cluster: Upgrade from HTTP/1.1 clients, RFC 8441 from HTTP/2 ones) and gRPC (to python3-grpcio
behind an h2c cluster, from the HTTP/2 clients)."""
import hashlib
import os
import shutil
import subprocess
import tempfile
import unittest

import asyncio
import sys

import grpc
import websockets

import harness
from proxy_clients import CLIENTS, curl
from proxy_harness import Proxy
from test_proxy_grpc import GrpcServer, calls
from test_proxy_websocket import H2Client, WsServer, ws_frame


class ProxyMatrix(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need("curl", "h2load", "nghttp", "openssl")
        cls.docroot = tempfile.mkdtemp(prefix="portico-docroot-")
        cls.addClassCleanup(shutil.rmtree, cls.docroot, ignore_errors=True)
        with open(os.path.join(cls.docroot, "index.html"), "w") as f:
            f.write("<h1>portico</h1>\n")
        cls.backend = harness.Backend("--document-root", cls.docroot, workers=2, unix=True)
        cls.proxies = {}
        cls.peers = []
        try:
            ws, rpc = WsServer(cls.docroot), GrpcServer(cls.docroot)
            cls.peers = [ws, rpc]
            peers = "\n".join([
                "[[cluster]]", 'name = "ws"', f'endpoints = ["127.0.0.1:{ws.port}"]', "",
                "[[cluster]]", 'name = "grpc"', f'endpoints = ["127.0.0.1:{rpc.port}"]',
                'protocol = "h2c"', "",
                "[[route]]", 'path_prefix = "/ws"', 'cluster = "ws"', "websocket = true", "",
                "[[route]]", 'path_prefix = "/test.Echo/"', 'cluster = "grpc"', ""])
            cls.proxies["unix"] = Proxy([f"unix:{cls.backend.sock_path}"], tls=True,
                                        routes_first=peers)
            cls.proxies["tcp"] = Proxy([f"127.0.0.1:{cls.backend.port}"], tls=True,
                                       routes_first=peers)
            cls.proxies["h2c"] = Proxy([f"unix:{cls.backend.sock_path}"], tls=True,
                                       cluster_options={"protocol": '"h2c"'}, routes_first=peers)
        except BaseException:
            cls.tearDownClass()
            raise
        cls.upload = os.path.join(cls.docroot, "upload.bin")
        with open(cls.upload, "wb") as f:
            f.write(os.urandom(10 * 1024 * 1024))
        with open(cls.upload, "rb") as f:
            cls.upload_sha = hashlib.sha256(f.read()).hexdigest()

    @classmethod
    def tearDownClass(cls):
        for p in cls.proxies.values():
            p.stop()
        for p in cls.peers:
            p.stop()
        cls.backend.stop()

    def each(self):
        """(proxy, client mode, subTest context) for every cell of the matrix."""
        return [(proxy, mode, self.subTest(upstream=upstream, client=mode))
                for upstream, proxy in self.proxies.items() for mode in CLIENTS]

    def expect_version(self, r, mode, body=False):
        # An h2c Upgrade is not taken with a request body (the body would have to be read
        # as HTTP/1.1 first): such a request is answered in HTTP/1.1.
        h2 = mode.startswith("h2") and not (mode == "h2c-upgrade" and body)
        self.assertEqual(r.version, "2" if h2 else "1.1", r)

    def test_get(self):
        for proxy, mode, cell in self.each():
            with cell:
                r = curl(proxy, mode, "/hello")
                self.assertEqual((r.status, r.body), (200, b"hello world\n"), r)
                self.expect_version(r, mode)
                self.assertEqual(r.header("server"), "portico")
                self.assertEqual(r.header("content-length"), "12")

    def test_head(self):
        for proxy, mode, cell in self.each():
            with cell:
                r = curl(proxy, mode, "/hello", ["-I"])
                self.assertEqual(r.status, 200, r)
                self.expect_version(r, mode)
                # curl -I prints the head where the body would go: nothing else may follow.
                self.assertNotIn(b"hello world", r.body)
                self.assertEqual(r.header("content-length"), "12")

    def test_not_modified(self):
        for proxy, mode, cell in self.each():
            with cell:
                first = curl(proxy, mode, "/index.html")
                self.assertEqual(first.status, 200, first)
                etag = first.header("etag")
                self.assertTrue(etag)
                r = curl(proxy, mode, "/index.html", ["-H", f"If-None-Match: {etag}"])
                self.assertEqual(r.status, 304, r)
                self.expect_version(r, mode)
                self.assertEqual(r.body, b"")
                self.assertEqual(r.header("etag"), etag)

    def test_post_echo_10mb(self):
        for proxy, mode, cell in self.each():
            with cell:
                r = curl(proxy, mode, "/echo", ["--data-binary", f"@{self.upload}",
                                                "-H", "Content-Type: application/x-test"])
                self.assertEqual(r.status, 200, r)
                self.expect_version(r, mode, body=True)
                self.assertEqual(hashlib.sha256(r.body).hexdigest(), self.upload_sha)
                self.assertEqual(r.header("content-type"), "application/x-test")

    def test_chunked_both_ways(self):
        for proxy, mode, cell in self.each():
            with cell:
                if mode.startswith("h2"):
                    continue  # HTTP/2 has no chunked framing
                r = curl(proxy, mode, "/echo", ["--data-binary", f"@{self.upload}",
                                                "-H", "Transfer-Encoding: chunked"])
                self.assertEqual(r.status, 200, r)
                self.expect_version(r, mode, body=True)
                self.assertEqual(r.header("transfer-encoding"), "chunked")
                self.assertEqual(hashlib.sha256(r.body).hexdigest(), self.upload_sha)

    def test_large_headers(self):
        big = "x" * 20000
        for proxy, mode, cell in self.each():
            with cell:
                r = curl(proxy, mode, "/hello", ["-H", f"X-Big: {big}"])
                self.assertEqual(r.status, 200, r)
                self.expect_version(r, mode)
                r = curl(proxy, mode, "/hello", ["-H", f"X-Big: {big * 2}"])
                self.assertEqual(r.status, 431, r)

    def test_websocket_column(self):
        """Each client protocol that can open a WebSocket, through every proxy (the tunnel's
        cluster is HTTP/1.1 in all three)."""
        for upstream, proxy in self.proxies.items():
            for mode in ("h1", "h1-tls", "h2c", "h2-tls"):
                with self.subTest(upstream=upstream, client=mode):
                    message = os.urandom(100_000)
                    if mode.startswith("h1"):
                        self.assertEqual(self.ws_h1(proxy, mode == "h1-tls", message), message)
                        continue
                    tls = mode == "h2-tls"
                    with H2Client(proxy.tls_port if tls else proxy.port, tls=tls) as c:
                        self.assertEqual(c.connect("/ws")[0], "200")
                        c.send_data(ws_frame(0x2, message))
                        self.assertEqual(c.read_ws_message(), (0x2, message))

    def ws_h1(self, proxy, tls, message):
        import ssl
        ctx = None
        url = f"ws://127.0.0.1:{proxy.port}/ws"
        if tls:
            ctx = ssl.create_default_context(cafile=proxy.cert)
            url = f"wss://localhost:{proxy.tls_port}/ws"

        async def talk():
            async with websockets.connect(url, ssl=ctx, max_size=None) as ws:
                await ws.send(message)
                return await ws.recv()
        return asyncio.run(asyncio.wait_for(talk(), 30))

    def test_grpc_column(self):
        """gRPC from the HTTP/2 clients through every proxy (its cluster is h2c in all three)."""
        for upstream, proxy in self.proxies.items():
            with open(proxy.cert, "rb") as f:
                creds = grpc.ssl_channel_credentials(root_certificates=f.read())
            channels = {"h2c": grpc.insecure_channel(f"127.0.0.1:{proxy.port}"),
                        "h2-tls": grpc.secure_channel(f"localhost:{proxy.tls_port}", creds)}
            for mode, channel in channels.items():
                with self.subTest(upstream=upstream, client=mode), channel:
                    c = calls(channel)
                    self.assertEqual(c["unary"](b"cell", timeout=10), b"cell")
                    self.assertEqual(list(c["bidi"](iter([b"a", b"b"]), timeout=10)),
                                     [b"a", b"b"])

    def test_counter_through_proxy(self):
        proxy = self.proxies["unix"]
        values = [int(curl(proxy, "h2c", "/?id=matrix").body.split(b":")[1].rstrip(b"}"))
                  for _ in range(3)]
        self.assertEqual(values, [values[0], values[0] + 1, values[0] + 2])

    def test_1000_concurrent_streams_one_connection(self):
        for upstream, proxy in self.proxies.items():
            for url in (f"{proxy.url}/hello", f"https://127.0.0.1:{proxy.tls_port}/hello"):
                with self.subTest(upstream=upstream, url=url):
                    cmd = ["h2load", "-n", "1000", "-c", "1", "-m", "1000", url]
                    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
                    self.assertIn("1000 succeeded, 0 failed", out, out)

    def test_nghttp_prior_knowledge_and_upgrade(self):
        proxy = self.proxies["unix"]
        for flags in (["-n"], ["-nu"]):
            out = subprocess.run(["nghttp", *flags, "-v", f"{proxy.url}/hello"],
                                 capture_output=True, text=True, timeout=30)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn(":status: 200", out.stdout)


if __name__ == "__main__":
    unittest.main()
