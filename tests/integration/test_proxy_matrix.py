"""The proxy across the protocol matrix: clients {HTTP/1.1, h2c prior knowledge, h2c Upgrade,
h2 over TLS, HTTP/1.1 over TLS, h3 (headless Chromium over QUIC)} x upstreams {HTTP/1.1 on a unix socket, HTTP/1.1 on TCP, h2c on
a unix socket}, every cell checking the HTTP version it ran (an h2c Upgrade is declined for a
request with a body, as RFC 9113 3.1's successor text allows and nghttpx does: those cells run
HTTP/1.1, and say so). Two more columns: WebSocket (to python3-websockets behind an HTTP/1.1
cluster: Upgrade from HTTP/1.1 clients, RFC 8441 from HTTP/2 ones) and gRPC (to python3-grpcio
behind an h2c cluster, from the HTTP/2 clients)."""
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import asyncio

import grpc
import websockets

import harness
from proxy_clients import CLIENTS, curl
from proxy_harness import Proxy
from test_proxy_grpc import GrpcServer, calls
from test_dashboard import browser
from test_proxy_http3 import spki_hash
from test_proxy_websocket import H2Client, WsServer, ws_frame

UPSTREAMS = ("unix", "tcp", "h2c")
# What the h3 cells post: i * 7 + (i >> 10), byte by byte, as the page's script makes it. 2 MiB,
# not the other cells' 10: Chromium gives the response no more window while its upload is under
# way (seen here: the echo's answer blocked at the browser's stream window, the upload waiting
# behind it), so an echo larger than that window and what the proxy and the sockets to a
# unix-socket upstream hold waits for ever, through any proxy that streams the request.
H3_UPLOAD = bytes((i * 7 + (i >> 10)) & 255 for i in range(2 * 1024 * 1024))
H3_CELLS = """
const done = arguments[arguments.length - 1];
const hex = b => Array.from(new Uint8Array(b)).map(x => x.toString(16).padStart(2, '0')).join('');
(async () => {
  const out = {};
  let r = await fetch('/hello', {cache: 'no-store'});
  out.get = [r.status, await r.text(), r.headers.get('content-length'), r.headers.get('server')];
  r = await fetch('/hello', {method: 'HEAD', cache: 'no-store'});
  out.head = [r.status, await r.text(), r.headers.get('content-length')];
  r = await fetch('/index.html', {cache: 'no-store'});
  const etag = r.headers.get('etag');
  await r.text();
  r = await fetch('/index.html', {cache: 'no-store', headers: {'If-None-Match': etag}});
  out.conditional = [r.status, await r.text()];
  const up = new Uint8Array(2 * 1024 * 1024);
  for (let i = 0; i < up.length; i++) up[i] = (i * 7 + (i >> 10)) & 255;
  r = await fetch('/echo', {method: 'POST', body: up, headers: {'Content-Type': 'application/x-test'}});
  out.echo = [r.status, hex(await crypto.subtle.digest('SHA-256', await r.arrayBuffer())),
              r.headers.get('content-type')];
  const big = 'x'.repeat(20000);
  const a = await fetch('/hello', {cache: 'no-store', headers: {'X-Big': big}});
  await a.text();
  const b = await fetch('/hello', {cache: 'no-store', headers: {'X-Big': big + big}});
  await b.text();
  out.headers = [a.status, b.status];
  out.protocols = performance.getEntriesByType('resource').map(e => e.nextHopProtocol);
  done(out);
})().catch(e => done(String(e)));
"""  # HTTP/1.1 on a unix socket, HTTP/1.1 on TCP, h2c on unix


def wire_version(mode, body=False):
    """The HTTP version a client mode's request goes in: an h2c Upgrade is not taken with a
    request body (the body would have to be read as HTTP/1.1 first), so such a request is
    answered in HTTP/1.1."""
    return "2" if mode.startswith("h2") and not (mode == "h2c-upgrade" and body) else "1.1"


def peak_streams(log_file):
    """The most requests in flight at once in an h2load --log-file (start in µs since the
    epoch, status, µs to the response's end), and the statuses seen."""
    events, statuses = [], set()
    with open(log_file) as f:
        for line in f:
            start, status, took = line.split("\t")
            events += [(int(start), 1), (int(start) + int(took), -1)]
            statuses.add(status)
    events.sort()  # at the same microsecond an end (-1) comes before a start
    peak = current = 0
    for _, step in events:
        current += step
        peak = max(peak, current)
    return peak, statuses


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
            cls.peer_routes = "\n".join([
                "[[cluster]]", 'name = "ws"', f'endpoints = ["127.0.0.1:{ws.port}"]', "",
                "[[cluster]]", 'name = "grpc"', f'endpoints = ["127.0.0.1:{rpc.port}"]',
                'protocol = "h2c"', "",
                "[[route]]", 'path_prefix = "/ws"', 'cluster = "ws"', "websocket = true", "",
                "[[route]]", 'path_prefix = "/test.Echo/"', 'cluster = "grpc"', ""])
            for upstream in UPSTREAMS:
                cls.proxies[upstream] = cls.make_proxy(upstream)
        except BaseException:
            cls.tearDownClass()
            raise
        cls.upload = os.path.join(cls.docroot, "upload.bin")
        with open(cls.upload, "wb") as f:
            f.write(os.urandom(10 * 1024 * 1024))
        with open(cls.upload, "rb") as f:
            cls.upload_sha = hashlib.sha256(f.read()).hexdigest()

    @classmethod
    def make_proxy(cls, upstream, server_options=None, http1_connections=None):
        """The proxy of one upstream column, with the WebSocket and gRPC routes;
        http1_connections: the cluster's max_connections on an HTTP/1.1 column."""
        endpoint = (f"127.0.0.1:{cls.backend.port}" if upstream == "tcp" else
                    f"unix:{cls.backend.sock_path}")
        cluster = ({"protocol": '"h2c"'} if upstream == "h2c" else
                   {"max_connections": http1_connections} if http1_connections else None)
        return Proxy([endpoint], tls=True, server_options=server_options,
                     cluster_options=cluster, routes_first=cls.peer_routes,
                     tls_listener_options={"quic": "true"})

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
        self.assertEqual(r.version, wire_version(mode, body), r)

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
        """A chunked request and its chunked echo, in each cell whose request goes in HTTP/1.1:
        h1, h1-tls and h2c-upgrade (declined for a request with a body). HTTP/2 has no chunked
        framing: the h2c and h2-tls cells are not applicable, printed as such and counted
        apart, never as passed."""
        ran, not_applicable = [], []
        for upstream, proxy in self.proxies.items():
            for mode in CLIENTS:
                if wire_version(mode, body=True) != "1.1":
                    not_applicable.append(f"{upstream}/{mode}")
                    continue
                with self.subTest(upstream=upstream, client=mode):
                    r = curl(proxy, mode, "/echo", ["--data-binary", f"@{self.upload}",
                                                    "-H", "Transfer-Encoding: chunked"])
                    self.assertEqual(r.status, 200, r)
                    self.expect_version(r, mode, body=True)
                    self.assertEqual(r.header("transfer-encoding"), "chunked")
                    self.assertEqual(hashlib.sha256(r.body).hexdigest(), self.upload_sha)
                    ran.append(f"{upstream}/{mode}")
        print(f"\n{self.id()}: {len(ran)} cells passed ({', '.join(ran)}); "
              f"{len(not_applicable)} not applicable, HTTP/2 has no chunked framing "
              f"({', '.join(not_applicable)})")
        # Every applicable cell got to its last assertion (a failed one is reported by its
        # subTest above), and those are all the cells but the HTTP/2 ones.
        self.assertEqual(ran, [f"{upstream}/{mode}" for upstream in self.proxies
                               for mode in CLIENTS if mode in ("h1", "h2c-upgrade", "h1-tls")])
        self.assertEqual(len(ran) + len(not_applicable), len(self.proxies) * len(CLIENTS))

    def test_large_headers(self):
        big = "x" * 20000
        for proxy, mode, cell in self.each():
            with cell:
                r = curl(proxy, mode, "/hello", ["-H", f"X-Big: {big}"])
                self.assertEqual(r.status, 200, r)
                self.expect_version(r, mode)
                r = curl(proxy, mode, "/hello", ["-H", f"X-Big: {big * 2}"])
                self.assertEqual(r.status, 431, r)

    def test_h3_column(self):
        """The h3 client (headless Chromium forced onto QUIC) through every upstream: GET, HEAD,
        a conditional GET answered 304, 2 MiB posted and echoed, a 20,000-byte field and one
        over the limit (431), each over h3 by the Performance API."""
        for upstream, proxy in self.proxies.items():
            with self.subTest(upstream=upstream, client="h3"):
                driver = browser(self, f"--origin-to-force-quic-on=localhost:{proxy.tls_port}",
                                 "--host-resolver-rules=MAP localhost 127.0.0.1",
                                 f"--ignore-certificate-errors-spki-list={spki_hash(proxy.cert)}")
                driver.get(f"https://localhost:{proxy.tls_port}/index.html")
                got = driver.execute_async_script(H3_CELLS)
                self.assertIsInstance(got, dict, got)
                self.assertEqual(got["get"], [200, "hello world\n", "12", "portico"])
                self.assertEqual(got["head"], [200, "", "12"])
                self.assertEqual(got["conditional"], [304, ""])
                self.assertEqual(got["echo"], [200, hashlib.sha256(H3_UPLOAD).hexdigest(),
                                               "application/x-test"])
                self.assertEqual(got["headers"], [200, 431])
                self.assertEqual(set(got["protocols"]), {"h3"})
                driver.quit()

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
        """1000 streams open at once on one client connection (h2c, and h2 over TLS), through
        each upstream column. At the default h2_max_concurrent_streams (100) h2load opens at
        most 100 at a time, so these proxies are started with 1000. The backend holds each
        response 300 ms (/delay): far longer than h2load takes to open all 1000 (up to ~20 ms
        on a busy 2-core machine, where /hello answers came back before the last streams
        started). h2load's per-request log then shows all 1000 in flight together. The HTTP/1.1
        columns carry them on at most 200 upstream connections (the rest wait their turn in
        the cluster's queue, as a preforked app server wants), which also keeps the proxy and
        the backend under a 1024-descriptor limit; the h2c column on h2c streams."""
        for upstream in UPSTREAMS:
            proxy = self.make_proxy(upstream, {"h2_max_concurrent_streams": "1000"},
                                    http1_connections=200)
            self.addCleanup(proxy.stop)
            for url in (f"{proxy.url}/delay?ms=300",
                        f"https://127.0.0.1:{proxy.tls_port}/delay?ms=300"):
                with self.subTest(upstream=upstream, url=url), \
                        tempfile.TemporaryDirectory(prefix="portico-h2load-") as tmp:
                    log = os.path.join(tmp, "requests.tsv")
                    cmd = ["h2load", "-n", "1000", "-c", "1", "-m", "1000", f"--log-file={log}",
                           url]
                    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
                    self.assertIn("1000 succeeded, 0 failed", out, out)
                    self.assertEqual(peak_streams(log), (1000, {"200"}), out)

    def test_nghttp_prior_knowledge_and_upgrade(self):
        proxy = self.proxies["unix"]
        for flags in (["-n"], ["-nu"]):
            out = subprocess.run(["nghttp", *flags, "-v", f"{proxy.url}/hello"],
                                 capture_output=True, text=True, timeout=30)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn(":status: 200", out.stdout)

    def test_a_request_upgraded_to_h2c_is_counted_once(self):
        proxy = self.proxies["unix"]

        def served():
            return json.loads(proxy.admin("/status"))["requests"]
        before = served()
        out = subprocess.run(["nghttp", "-nu", f"{proxy.url}/hello"], capture_output=True,
                             text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(served(), before + 1)  # counted as the stream began, once

if __name__ == "__main__":
    unittest.main()
