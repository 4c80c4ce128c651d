"""Static files served by a proxy route (`static`, filters/static_files.cc): the backend's whole
static battery again through the proxy, then what only a route has: alias, try_files (a
single-page app, a fallback to the upstream), dotfiles and symlink policies, precompressed
siblings, Cache-Control and Expires, compression of files, sendfile on cleartext HTTP/1.1 and
reads over TLS and HTTP/2, traversal in every encoding, a file that shrinks or vanishes while it
is sent, and pipelined requests behind a file."""
import base64
import email.utils
import gzip
import hashlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

import brotli
import h2.connection
import h2.events

import harness
import test_static
from named_origin import NamedOrigin
from proxy_harness import Proxy, toml_string
from test_static import curl, raw_get, write

SECRET = test_static.SECRET


class ProxyStaticBatteryTest(test_static.StaticFilesTest):
    """test_static.py's tests, with the proxy's route serving the same root."""

    @classmethod
    def start_server(cls):
        route = f"[[route]]\npath_prefix = \"/\"\nstatic = {{ root = {toml_string(cls.root)} }}\n"
        cls.proxy = Proxy(["127.0.0.1:9"], catch_all=False, routes_first=route)
        cls.url, cls.port = cls.proxy.url, cls.proxy.port

    @classmethod
    def stop_server(cls):
        cls.proxy.stop()

    def server_pids(self):
        return [self.proxy.pid]

    def test_large_file_goes_by_sendfile_on_cleartext_http1_only(self):
        before = self.proxy.metric("portico_sendfile_bytes_total")
        self.assertEqual(self.get("/big.bin", h2=True).body, self.big)
        self.assertEqual(self.proxy.metric("portico_sendfile_bytes_total"), before)
        self.assertEqual(self.get("/big.bin").body, self.big)
        # Counted once sendfile() has returned: the client may hold the bytes a moment before.
        harness.wait_until(lambda: self.proxy.metric("portico_sendfile_bytes_total") ==
                           before + len(self.big), what="the file counted as sent by sendfile")

    def test_a_request_pipelined_behind_a_large_file_is_answered_after_the_clients_eof(self):
        # The 5 MB answer waits for the client, so the next request waits in the input; the
        # client's EOF (it has sent all it will) must not drop that request unanswered.
        got = request_raw(self.port, b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n"
                          b"GET /hello%20world.txt HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertTrue(got.endswith(b"\r\n\r\nspaced\n"), got[-200:])


def request_raw(port, data, timeout=10):
    """Sends data on a fresh connection and reads until the server closes it."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        return harness.read_to_eof(s)


class ProxyStaticRoutesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need("curl", "openssl")
        cls.tmp = tempfile.mkdtemp(prefix="portico-proxy-static-")
        t = cls.tmp
        cls.assets = os.path.join(t, "assets")
        cls.spa = os.path.join(t, "spa")
        cls.site = os.path.join(t, "site")
        outside = os.path.join(t, "outside")
        write(os.path.join(outside, "secret.txt"), SECRET + b"\n")
        # assets: precompressed siblings, some stale
        cls.js = b"function portico() { return 'static'; }\n" * 400
        write(os.path.join(cls.assets, "app.js"), cls.js)
        write(os.path.join(cls.assets, "app.js.br"), brotli.compress(cls.js))
        write(os.path.join(cls.assets, "app.js.gz"), gzip.compress(cls.js))
        cls.css = b"body { color: #123456; margin: 0 auto; }\n" * 300
        write(os.path.join(cls.assets, "site.css"), cls.css)
        write(os.path.join(cls.assets, "old.txt"), b"fresh text, newer than its sibling\n" * 40)
        write(os.path.join(cls.assets, "old.txt.gz"), gzip.compress(b"stale"))
        st = os.stat(os.path.join(cls.assets, "old.txt"))
        os.utime(os.path.join(cls.assets, "old.txt.gz"),
                 ns=(st.st_atime_ns, st.st_mtime_ns - 10_000_000_000))
        # Text that compresses little: a compressed response still fills a slow client's buffer.
        cls.noise = base64.b64encode(os.urandom(4 * 1024 * 1024))
        write(os.path.join(cls.assets, "noise.txt"), cls.noise)
        cls.big_js = (b"var x = '" + os.urandom(8).hex().encode() + b"';\n") * 30000  # ~800 KiB
        write(os.path.join(cls.assets, "big.js"), cls.big_js)
        write(os.path.join(cls.assets, ".env"), SECRET)
        write(os.path.join(cls.assets, ".well-known", "thing"), SECRET)
        os.symlink("app.js", os.path.join(cls.assets, "link.js"))
        os.symlink(os.path.join(outside, "secret.txt"), os.path.join(cls.assets, "leak.txt"))
        # a single-page app
        cls.spa_index = b"<!doctype html><div id=app></div>\n"
        write(os.path.join(cls.spa, "index.html"), cls.spa_index)
        write(os.path.join(cls.spa, "main.js"), b"console.log('spa')\n")
        write(os.path.join(cls.spa, "docs", "index.html"), b"docs\n")
        # a site with a fallback to the upstream
        write(os.path.join(cls.site, "robots.txt"), b"User-agent: *\n")
        write(os.path.join(cls.site, "book.epub"), b"PK")
        cls.shrink = os.path.join(cls.site, "shrink.bin")
        cls.origin = NamedOrigin("upstream")
        routes = f"""
[[route]]
path_prefix = "/assets/"
compress = true
static = {{ alias = {toml_string(cls.assets)}, precompressed = true, cache_control = "public, max-age=60", expires = 3600 }}

[[route]]
path_prefix = "/strict/"
static = {{ alias = {toml_string(cls.assets)}, symlinks = "never" }}

[[route]]
path_prefix = "/loose/"
static = {{ alias = {toml_string(cls.assets)}, symlinks = "anywhere", dotfiles = true }}

[[route]]
path_prefix = "/app"
static = {{ alias = {toml_string(cls.spa)}, try_files = ["$uri", "$uri/", "/index.html"], expires = 0 }}

[[route]]
path_prefix = "/gone/"
static = {{ alias = {toml_string(cls.spa)}, try_files = ["$uri", "=410"] }}

[[cluster]]
name = "origin"
endpoints = ["127.0.0.1:{cls.origin.port}"]

[[route]]
path_prefix = "/"
cluster = "origin"
static = {{ root = {toml_string(cls.site)}, try_files = ["$uri", "@upstream"] }}
"""
        try:
            cls.proxy = Proxy(["127.0.0.1:9"], tls=True, catch_all=False, routes_first=routes)
        except BaseException:
            cls.origin.stop()
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.origin.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def get(self, path, **kw):
        return curl(self.proxy.url, path, **kw)

    def test_alias_maps_the_prefix_to_the_directory(self):
        r = self.get("/assets/app.js")
        self.assertEqual((r.status, r.body), (200, self.js))
        self.assertEqual(r.headers["content-type"], "text/javascript; charset=utf-8")
        # A prefix without its slash is still a directory: a name that only begins with it is
        # no file beside it (nginx's alias would serve /srv/spamain.js).
        r = self.get("/appmain.js")
        self.assertEqual(r.status, 404)
        self.assertNotIn(b"spa", r.body)

    def test_types_the_built_in_table_lacks_come_from_etc_mime_types(self):
        self.assertTrue(os.path.exists("/etc/mime.types"), "media-types is not installed")
        self.assertEqual(self.get("/book.epub").headers["content-type"], "application/epub+zip")

    def test_cache_control_and_expires(self):
        r = self.get("/assets/site.css")
        self.assertEqual(r.headers["cache-control"], "public, max-age=60")
        expires = email.utils.parsedate_to_datetime(r.headers["expires"]).timestamp()
        self.assertAlmostEqual(expires - time.time(), 3600, delta=5)
        r = self.get("/app/main.js")  # expires = 0 and no cache_control: max-age=0
        self.assertEqual(r.headers["cache-control"], "max-age=0")
        self.assertNotIn("cache-control", self.get("/robots.txt").headers)

    def test_precompressed_siblings(self):
        want = {}
        for coding, ext in (("br", "br"), ("gzip", "gz")):
            with open(os.path.join(self.assets, "app.js." + ext), "rb") as f:
                want[coding] = f.read()
        self.assertEqual(brotli.decompress(want["br"]), self.js)
        for accept, coding in (("br", "br"), ("gzip, br;q=0.5", "gzip"), ("zstd, br", "br"),
                               ("gzip;q=0, br;q=0", None), ("identity", None)):
            with self.subTest(accept=accept):
                r = self.get("/assets/app.js", headers=[f"Accept-Encoding: {accept}"])
                self.assertEqual(r.status, 200)
                self.assertEqual(r.headers["vary"].lower(), "accept-encoding")
                self.assertEqual(r.headers["content-type"], "text/javascript; charset=utf-8")
                if coding:
                    self.assertEqual(r.headers["content-encoding"], coding)
                    self.assertEqual(r.body, want[coding])  # the sibling's bytes, as they are
                    self.assertEqual(r.headers["content-length"], str(len(want[coding])))
                else:
                    self.assertNotIn("content-encoding", r.headers)
                    self.assertEqual(r.body, self.js)
        # Each version has its own validator.
        br = self.get("/assets/app.js", headers=["Accept-Encoding: br"])
        plain = self.get("/assets/app.js")
        self.assertNotEqual(br.headers["etag"], plain.headers["etag"])
        r = self.get("/assets/app.js", headers=["Accept-Encoding: br",
                                                f"If-None-Match: {br.headers['etag']}"])
        self.assertEqual(r.status, 304)
        # A sibling older than its file is stale: the file is compressed on the way instead.
        r = self.get("/assets/old.txt", headers=["Accept-Encoding: gzip"])
        self.assertEqual(r.headers.get("content-encoding"), "gzip")
        self.assertEqual(gzip.decompress(r.body), b"fresh text, newer than its sibling\n" * 40)

    def test_compress_filter_compresses_files(self):
        for path, want in (("/assets/site.css", self.css), ("/assets/big.js", self.big_js)):
            for h2 in (False, True):
                with self.subTest(path=path, h2=h2):
                    r = self.get(path, h2=h2, headers=["Accept-Encoding: gzip"])
                    self.assertEqual(r.headers["content-encoding"], "gzip")
                    self.assertTrue(r.headers["etag"].startswith("W/"))
                    self.assertEqual(gzip.decompress(r.body), want)
        # A range of a file is never compressed.
        r = self.get("/assets/big.js", headers=["Accept-Encoding: gzip", "Range: bytes=10-19"])
        self.assertEqual((r.status, r.body), (206, self.big_js[10:20]))

    def test_dotfiles_and_symlinks(self):
        for path in ("/assets/.env", "/assets/.well-known/thing", "/assets/%2eenv",
                     "/assets/leak.txt", "/strict/link.js", "/strict/leak.txt"):
            with self.subTest(path=path):
                status, body = raw_get(self.proxy.port, path)
                self.assertEqual(status, 404)
                self.assertNotIn(SECRET, body)
        self.assertEqual(self.get("/assets/link.js").body, self.js)  # inside the root
        self.assertEqual(self.get("/strict/app.js").body, self.js)
        # dotfiles = true, symlinks = "anywhere": what the operator asked for
        self.assertEqual(self.get("/loose/.env").body, SECRET)
        self.assertEqual(self.get("/loose/leak.txt").body, SECRET + b"\n")

    def test_traversal_in_every_encoding(self):
        attempts = [
            "/assets/../outside/secret.txt", "/assets/%2e%2e/outside/secret.txt",
            "/assets/%2E%2e/outside/secret.txt", "/assets/..%2foutside/secret.txt",
            "/assets/..%2Foutside%2Fsecret.txt", "/assets/%2e%2e%2f%2e%2e%2foutside/secret.txt",
            "/assets/..\\outside\\secret.txt", "/assets/..%5coutside%5csecret.txt",
            "/assets/%252e%252e/outside/secret.txt", "/assets/%c0%ae%c0%ae/outside/secret.txt",
            "/assets/%e0%80%ae%e0%80%ae/outside/secret.txt", "/assets/app.js%00.txt",
            "/assets/%00", "/assets//../../outside/secret.txt", "/app/../outside/secret.txt",
            "/app/%2e%2e/%2e%2e/outside/secret.txt", "/../outside/secret.txt",
            "/%2e%2e/%2e%2e/etc/passwd", "/robots.txt/../../outside/secret.txt",
        ]
        for path in attempts:
            with self.subTest(path=path):
                status, body = raw_get(self.proxy.port, path)
                self.assertIn(status, (400, 403, 404))
                self.assertNotIn(SECRET, body)
                self.assertNotIn(b"root:", body)
                r = curl(self.proxy.url, path, h2=True)
                self.assertIn(r.status, (400, 403, 404))
                self.assertNotIn(SECRET, r.body)
        self.assertEqual(self.get("/assets/app.js").body, self.js)

    def test_single_page_app_fallback(self):
        self.assertEqual(self.get("/app/main.js").body, b"console.log('spa')\n")
        for path in ("/app/", "/app", "/app/users/42", "/app/deep/link?tab=1", "/app/missing.js"):
            with self.subTest(path=path):
                r = self.get(path)
                self.assertEqual((r.status, r.body), (200, self.spa_index))
                self.assertEqual(r.headers["content-type"], "text/html; charset=utf-8")
        self.assertEqual(self.get("/app/docs").body, b"docs\n")  # "$uri/": the index
        self.assertEqual(self.get("/gone/nothing").status, 410)
        self.assertEqual(self.get("/gone/main.js").status, 200)

    def test_fallback_to_the_upstream(self):
        r = self.get("/robots.txt")
        self.assertEqual((r.status, r.body), (200, b"User-agent: *\n"))
        r = self.get("/api/users")
        self.assertEqual((r.status, r.body), (200, b"upstream"))
        r = self.get("/robots.txt", method="POST")  # only GET and HEAD are files
        self.assertEqual((r.status, r.body), (200, b"upstream"))

    def test_tls_reads_the_file_through_the_process(self):
        big = os.path.join(self.site, "tls.bin")
        data = os.urandom(3 * 1024 * 1024 + 7)
        write(big, data)
        before = self.proxy.metric("portico_sendfile_bytes_total")
        for proto in ("--http1.1", "--http2"):
            with self.subTest(proto=proto):
                out = subprocess.run(["curl", "-sS", "-k", proto, "--max-time", "30",
                                      self.proxy.tls_url + "/tls.bin"],
                                     capture_output=True, timeout=60)
                self.assertEqual(out.returncode, 0, out.stderr)
                self.assertEqual(hashlib.sha256(out.stdout).digest(),
                                 hashlib.sha256(data).digest())
        self.assertEqual(self.proxy.metric("portico_sendfile_bytes_total"), before)

    def test_pipelined_requests_behind_a_file(self):
        big = os.path.join(self.site, "pipe.bin")
        data = os.urandom(700 * 1024)
        write(big, data)
        got = request_raw(self.proxy.port,
                          b"GET /pipe.bin HTTP/1.1\r\nHost: t\r\n\r\n"
                          b"GET /robots.txt HTTP/1.1\r\nHost: t\r\n\r\n"
                          b"GET /pipe.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=5-9\r\n\r\n"
                          b"GET /robots.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        parts = []
        rest = got
        for _ in range(4):
            head, _, rest = rest.partition(b"\r\n\r\n")
            length = int([line.split(b":")[1] for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:")][0])
            parts.append((head.split(b" ")[1], rest[:length]))
            rest = rest[length:]
        self.assertEqual(parts, [(b"200", data), (b"200", b"User-agent: *\n"),
                                 (b"206", data[5:10]), (b"200", b"User-agent: *\n")])
        self.assertEqual(rest, b"")

    def read_cut_response(self, path, h2, tls, change):
        """Starts a download of path that the client reads slowly, calls change() once the
        first bytes are in, and reads to the end: returns (content-length, bytes received)."""
        cmd = ["curl", "-sS", "-k", "--max-time", "60", "--limit-rate", "8M", "-D", "-"]
        cmd.append("--http2" if h2 and tls else "--http2-prior-knowledge" if h2 else "--http1.1")
        cmd.append((self.proxy.tls_url if tls else self.proxy.url) + path)
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as proc:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = proc.stdout.read1(65536)
                self.assertTrue(chunk, "no response head")
                head += chunk
            change()
            body = head.partition(b"\r\n\r\n")[2] + proc.stdout.read()
            proc.wait(timeout=60)
        length = int([line.split(b":")[1] for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:")][0]) \
            if b"content-length" in head.lower() else None
        return proc.returncode, length, body

    def test_a_file_that_shrinks_while_sent_cuts_the_response(self):
        size = 64 * 1024 * 1024
        for h2, tls in ((False, False), (True, False), (False, True)):
            with self.subTest(h2=h2, tls=tls):
                with open(self.shrink, "wb") as f:
                    f.truncate(size)

                def shrink():
                    os.truncate(self.shrink, 1024 * 1024)

                code, length, body = self.read_cut_response("/shrink.bin", h2, tls, shrink)
                self.assertNotEqual(code, 0, "curl saw a complete response")
                self.assertLess(len(body), size)
                if length is not None:
                    self.assertEqual(length, size)
        self.assertEqual(self.get("/robots.txt").body, b"User-agent: *\n")

    def assert_bounded_for_readers_that_never_read(self, open_stream, what):
        # Twenty clients ask for a file of megabytes and read nothing: the proxy holds about a
        # high watermark (256 KiB) each, plus a compressor's state, never the files. Then one
        # of them reads: its response is whole (held back, not cut short).
        before = self.proxy.rss_kib()
        streams = [open_stream() for _ in range(20)]
        try:
            grown = self.proxy.rss_kib() - before
            self.assertLess(grown, 40 * 1024, f"{what}: the proxy grew by {grown} KiB")
            self.assertEqual(streams[0].read_all(), self.noise, what)
        finally:
            for s in streams:
                s.sock.close()
        self.assertEqual(self.get("/robots.txt").body, b"User-agent: *\n")

    def test_backpressure_holds_through_compression(self):
        test = self

        class Stream:
            def __init__(self):
                self.sock = socket.socket()
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                self.sock.settimeout(10)
                self.sock.connect(("127.0.0.1", test.proxy.port))
                self.sock.sendall(b"GET /assets/noise.txt HTTP/1.1\r\nHost: t\r\n"
                                  b"Accept-Encoding: gzip\r\nConnection: close\r\n\r\n")
                self.got = self.sock.recv(12)
                test.assertEqual(self.got, b"HTTP/1.1 200")

            def read_all(self):
                while chunk := self.sock.recv(65536):
                    self.got += chunk
                head, _, body = self.got.partition(b"\r\n\r\n")
                test.assertIn(b"transfer-encoding: chunked", head.lower())
                out = b""
                while True:
                    size_line, _, body = body.partition(b"\r\n")
                    size = int(size_line, 16)
                    if size == 0:
                        return gzip.decompress(out)
                    out += body[:size]
                    body = body[size + 2:]

        self.assert_bounded_for_readers_that_never_read(Stream, "gzip over HTTP/1.1")

    def test_backpressure_holds_for_files_over_h2c(self):
        test = self

        class Stream:
            def __init__(self):
                self.sock = socket.create_connection(("127.0.0.1", test.proxy.port), timeout=10)
                self.conn = h2.connection.H2Connection()
                self.conn.initiate_connection()
                self.conn.send_headers(1, [(":method", "GET"), (":scheme", "http"),
                                           (":authority", "t"), (":path", "/assets/noise.txt")],
                                       end_stream=True)
                self.sock.sendall(self.conn.data_to_send())
                self.body = b""
                while not self.body:  # no WINDOW_UPDATE yet: 64 KiB, then the proxy waits
                    self.pump()

            def pump(self):
                data = self.sock.recv(65536)
                test.assertTrue(data, "closed before the response ended")
                ended = False
                for event in self.conn.receive_data(data):
                    if isinstance(event, h2.events.DataReceived):
                        self.body += event.data
                        self.conn.acknowledge_received_data(event.flow_controlled_length, 1)
                    test.assertNotIsInstance(event, h2.events.StreamReset)
                    ended = ended or isinstance(event, h2.events.StreamEnded)
                return ended

            def read_all(self):
                self.sock.sendall(self.conn.data_to_send())
                while not self.pump():
                    self.sock.sendall(self.conn.data_to_send())
                return self.body

        self.assert_bounded_for_readers_that_never_read(Stream, "a file over h2c")

    def test_a_file_removed_while_sent_is_sent_whole(self):
        # The open descriptor keeps the bytes: the client gets the version it started on.
        data = os.urandom(16 * 1024 * 1024)  # more than the socket buffers hold
        path = os.path.join(self.site, "vanish.bin")
        for h2 in (False, True):
            with self.subTest(h2=h2):
                write(path, data)
                code, length, body = self.read_cut_response("/vanish.bin", h2, False,
                                                            lambda: os.unlink(path))
                self.assertEqual(code, 0)
                self.assertEqual(hashlib.sha256(body).digest(), hashlib.sha256(data).digest())
        self.assertEqual(self.get("/robots.txt").body, b"User-agent: *\n")


if __name__ == "__main__":
    unittest.main()
