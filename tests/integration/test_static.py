"""portico-backend --document-root (server/static_files.cc) over HTTP/1.1 and h2c: files and
directory indexes, content types, ETag / Last-Modified with 304, ranges, HEAD, 405, paths that
try to leave the root, a large streamed file, a file changed on disk, and h2load."""
import email.utils
import hashlib
import http.client
import os
import re
import shutil
import socket
import subprocess
import tempfile
import unittest

from harness import Backend, need, rss_kib, wait_until

INDEX = b"<!doctype html><title>portico</title><h1>index</h1>\n"
DOCS_INDEX = b"<h1>docs</h1>\n"
SECRET = b"TOP-SECRET-9f2c41"  # lives outside the root; no response may contain it
BIG_SIZE = 5 * 1024 * 1024 + 123  # not a multiple of the 64 KiB read size

TYPES = {
    "page.html": "text/html; charset=utf-8",
    "page.htm": "text/html; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "mod.mjs": "text/javascript; charset=utf-8",
    "data.json": "application/json",
    "note.txt": "text/plain; charset=utf-8",
    "feed.xml": "text/xml; charset=utf-8",
    "logo.svg": "image/svg+xml",
    "img.png": "image/png",
    "photo.jpg": "image/jpeg",
    "photo.jpeg": "image/jpeg",
    "anim.gif": "image/gif",
    "pic.webp": "image/webp",
    "favicon.ico": "image/x-icon",
    "mod.wasm": "application/wasm",
    "doc.pdf": "application/pdf",
    "font.woff": "font/woff",
    "font.woff2": "font/woff2",
    "clip.mp4": "video/mp4",
    "clip.webm": "video/webm",
    "bundle.zip": "application/zip",
    "bundle.tar.gz": "application/gzip",
    "UPPER.PNG": "image/png",
    "blob.qqq": "application/octet-stream",
    "README": "application/octet-stream",
}


class Response:
    def __init__(self, version, status, headers, body):
        self.version, self.status, self.headers, self.body = version, status, headers, body

    def __repr__(self):
        return f"<{self.version} {self.status} {self.headers} {self.body[:80]!r}>"


def curl(base, path, h2=False, method=None, headers=(), head=False):
    """One request with curl, the path sent exactly as given; returns a Response."""
    cmd = ["curl", "-sS", "--max-time", "30", "--path-as-is", "-i"]
    cmd.append("--http2-prior-knowledge" if h2 else "--http1.1")
    if head:
        cmd.append("-I")
    if method:
        cmd += ["-X", method]
    for h in headers:
        cmd += ["-H", h]
    cmd.append(base + path)
    out = subprocess.run(cmd, capture_output=True, timeout=60)
    if out.returncode != 0:
        raise AssertionError(f"curl {path} failed: {out.stderr.decode(errors='replace')}")
    head_bytes, _, body = out.stdout.partition(b"\r\n\r\n")
    lines = head_bytes.decode("latin1").split("\r\n")
    version, status = lines[0].split(" ")[:2]
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    return Response(version, int(status), fields, body)


def raw_get(port, path, method="GET"):
    """HTTP/1.1 with the target byte for byte as given (http.client normalises nothing)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)
        conn.endheaders()
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


class StaticFilesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need("curl")
        cls.tmp = tempfile.mkdtemp(prefix="portico-static-")
        cls.root = os.path.join(cls.tmp, "root")
        outside = os.path.join(cls.tmp, "outside")
        write(os.path.join(outside, "secret.txt"), SECRET + b"\n")
        write(os.path.join(cls.root, "index.html"), INDEX)
        write(os.path.join(cls.root, "docs", "index.html"), DOCS_INDEX)
        write(os.path.join(cls.root, "hello world.txt"), b"spaced\n")
        os.makedirs(os.path.join(cls.root, "empty"))
        for name in TYPES:
            write(os.path.join(cls.root, "types", name), name.encode() + b"\n")
        cls.big = os.urandom(BIG_SIZE)
        write(os.path.join(cls.root, "big.bin"), cls.big)
        # Symlinks out of the root must be refused; one inside it is an ordinary alias.
        os.symlink(os.path.join(outside, "secret.txt"), os.path.join(cls.root, "leak.txt"))
        os.symlink(outside, os.path.join(cls.root, "leakdir"))
        os.symlink("index.html", os.path.join(cls.root, "alias.html"))
        os.mkfifo(os.path.join(cls.root, "pipe"))
        try:
            cls.start_server()
        except BaseException:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        cls.stop_server()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    # The server under test; test_proxy_static.py runs the same tests through a proxy route.
    @classmethod
    def start_server(cls):
        cls.backend = Backend("--document-root", cls.root, workers=2)
        cls.url, cls.port = cls.backend.url, cls.backend.port

    @classmethod
    def stop_server(cls):
        cls.backend.stop()

    def server_pids(self):
        return self.backend.worker_pids()

    def get(self, path, **kw):
        return curl(self.url, path, **kw)

    def test_index_html_over_http11_and_h2c(self):
        for h2, version in ((False, "HTTP/1.1"), (True, "HTTP/2")):
            with self.subTest(h2=h2):
                r = self.get("/index.html", h2=h2)
                self.assertEqual(r.version, version)
                self.assertEqual(r.status, 200)
                self.assertEqual(r.body, INDEX)
                self.assertEqual(r.headers["content-length"], str(len(INDEX)))
                self.assertEqual(r.headers["content-type"], "text/html; charset=utf-8")
                self.assertRegex(r.headers["etag"], r'^"[0-9a-f]+-[0-9a-f]+"$')
                mtime = os.stat(os.path.join(self.root, "index.html")).st_mtime
                self.assertEqual(r.headers["last-modified"],
                                 email.utils.formatdate(int(mtime), usegmt=True))
                self.assertEqual(r.headers["accept-ranges"], "bytes")

    def test_query_escapes_and_symlink_inside_root(self):
        for h2 in (False, True):
            with self.subTest(h2=h2):
                self.assertEqual(self.get("/index.html?v=3", h2=h2).body, INDEX)
                self.assertEqual(self.get("/%69ndex.html", h2=h2).body, INDEX)
                self.assertEqual(self.get("/hello%20world.txt", h2=h2).body, b"spaced\n")
                self.assertEqual(self.get("/alias.html", h2=h2).body, INDEX)
                self.assertEqual(self.get("/missing.html", h2=h2).status, 404)

    def test_directory_index_and_redirect(self):
        for h2 in (False, True):
            with self.subTest(h2=h2):
                r = self.get("/docs/", h2=h2)
                self.assertEqual((r.status, r.body), (200, DOCS_INDEX))
                self.assertEqual(r.headers["content-type"], "text/html; charset=utf-8")
                r = self.get("/docs", h2=h2)
                self.assertEqual(r.status, 301)
                self.assertEqual(r.headers["location"], "/docs/")
                r = self.get("/docs?page=2", h2=h2)
                self.assertEqual(r.status, 301)
                self.assertEqual(r.headers["location"], "/docs/?page=2")
                self.assertEqual(self.get("/empty/", h2=h2).status, 404)
                self.assertEqual(self.get("/index.html/", h2=h2).status, 404)

    def test_content_types(self):
        for name, expected in TYPES.items():
            with self.subTest(name=name):
                r = self.get("/types/" + name)
                self.assertEqual(r.status, 200)
                self.assertEqual(r.body, name.encode() + b"\n")
                self.assertEqual(r.headers["content-type"], expected)

    def test_etag_gives_304(self):
        for h2 in (False, True):
            with self.subTest(h2=h2):
                first = self.get("/index.html", h2=h2)
                etag = first.headers["etag"]
                for inm in (etag, "W/" + etag, f'"nope", {etag}', "*"):
                    r = self.get("/index.html", h2=h2, headers=[f"If-None-Match: {inm}"])
                    self.assertEqual(r.status, 304, inm)
                    self.assertEqual(r.body, b"")
                    self.assertEqual(r.headers["etag"], etag)
                    self.assertEqual(r.headers["last-modified"], first.headers["last-modified"])
                    self.assertNotIn("content-length", r.headers)
                r = self.get("/index.html", h2=h2, headers=['If-None-Match: "nope"'])
                self.assertEqual((r.status, r.body), (200, INDEX))
                # The same for a file too large for the cache, which takes the streaming path.
                big_etag = self.get("/big.bin", h2=h2, head=True).headers["etag"]
                r = self.get("/big.bin", h2=h2, headers=[f"If-None-Match: {big_etag}"])
                self.assertEqual((r.status, r.body), (304, b""))

    def test_if_modified_since_gives_304(self):
        lm = self.get("/index.html").headers["last-modified"]
        for h2 in (False, True):
            with self.subTest(h2=h2):
                def status(*hs):
                    return self.get("/index.html", h2=h2, headers=list(hs)).status
                self.assertEqual(status(f"If-Modified-Since: {lm}"), 304)
                self.assertEqual(status("If-Modified-Since: Fri, 01 Jan 2100 00:00:00 GMT"), 304)
                self.assertEqual(status("If-Modified-Since: Sat, 01 Jan 2000 00:00:00 GMT"), 200)
                self.assertEqual(status("If-Modified-Since: yesterday"), 200)
                # If-None-Match wins over If-Modified-Since (RFC 9110 13.2.2).
                self.assertEqual(status(f"If-Modified-Since: {lm}", 'If-None-Match: "nope"'), 200)

    def test_head_has_headers_and_no_body(self):
        for h2 in (False, True):
            for path, size in (("/index.html", len(INDEX)), ("/big.bin", BIG_SIZE)):
                with self.subTest(h2=h2, path=path):
                    r = self.get(path, h2=h2, head=True)
                    self.assertEqual(r.status, 200)
                    self.assertEqual(r.headers["content-length"], str(size))
                    self.assertIn("etag", r.headers)
                    self.assertIn("last-modified", r.headers)
                    self.assertEqual(r.body, b"")
        # The connection stays usable after a HEAD: the next response is parsed correctly.
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            for method in ("HEAD", "GET", "HEAD", "GET"):
                conn.request(method, "/index.html")
                resp = conn.getresponse()
                self.assertEqual(resp.read(), b"" if method == "HEAD" else INDEX)
        finally:
            conn.close()

    def test_other_methods_get_405(self):
        for h2 in (False, True):
            for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
                with self.subTest(h2=h2, method=method):
                    r = self.get("/index.html", h2=h2, method=method)
                    self.assertEqual(r.status, 405)
                    self.assertEqual(r.headers["allow"], "GET, HEAD")

    def test_traversal_is_refused(self):
        attempts = [
            "/../outside/secret.txt",
            "/%2e%2e/outside/secret.txt",
            "/%2E%2E/outside/secret.txt",
            "/..%2foutside/secret.txt",
            "/docs/../../outside/secret.txt",
            "/docs/%2e%2e/%2e%2e/outside/secret.txt",
            "/..",
            "/%2e%2e",
            "/../../../../../../etc/passwd",
            "/leak.txt",            # symlink to a file outside
            "/leakdir/secret.txt",  # symlink to a directory outside
            "/leakdir/",
            "/pipe",                # a fifo: not content, and must not block the worker
        ]
        for path in attempts:
            with self.subTest(path=path, via="raw HTTP/1.1"):
                status, body = raw_get(self.port, path)
                self.assertIn(status, (400, 403, 404))
                self.assertNotIn(SECRET, body)
                self.assertNotIn(b"root:", body)
            with self.subTest(path=path, via="h2c"):
                r = self.get(path, h2=True)
                self.assertIn(r.status, (400, 403, 404))
                self.assertNotIn(SECRET, r.body)
        for path in ("/%zz", "/bad%4", "/nul%00.html"):
            with self.subTest(path=path):
                self.assertEqual(raw_get(self.port, path)[0], 400)
        # The worker is still healthy after all of that.
        self.assertEqual(self.get("/index.html").body, INDEX)

    def test_large_file_checksum(self):
        want = hashlib.sha256(self.big).hexdigest()
        for h2 in (False, True):
            with self.subTest(h2=h2):
                r = self.get("/big.bin", h2=h2)
                self.assertEqual(r.status, 200)
                self.assertEqual(r.headers["content-length"], str(BIG_SIZE))
                self.assertEqual(r.headers["content-type"], "application/octet-stream")
                self.assertEqual(len(r.body), BIG_SIZE)
                self.assertEqual(hashlib.sha256(r.body).hexdigest(), want)

    def test_slow_readers_do_not_buffer_the_file(self):
        # Twenty clients that read nothing: with backpressure each costs the worker about the
        # high watermark (256 KiB), not the file (5 MiB). The first bytes of each response
        # arrive only after the handler's first round of reads, so measuring then is enough.
        workers = self.server_pids()
        before = sum(rss_kib(p) for p in workers)
        socks = []
        try:
            for _ in range(20):
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.settimeout(10)
                s.connect(("127.0.0.1", self.port))
                s.sendall(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
                socks.append(s)
            for s in socks:
                got = b""
                while len(got) < 12:
                    chunk = s.recv(12 - len(got))
                    self.assertTrue(chunk, "connection closed before the status line")
                    got += chunk
                self.assertEqual(got, b"HTTP/1.1 200")
            grown = sum(rss_kib(p) for p in workers) - before
            self.assertLess(grown, 24 * 1024, f"workers grew by {grown} KiB")
        finally:
            for s in socks:
                s.close()
        self.assertEqual(self.get("/index.html").body, INDEX)

    def test_ranges(self):
        for h2 in (False, True):
            with self.subTest(h2=h2):
                r = self.get("/big.bin", h2=h2, headers=["Range: bytes=1000-1999"])
                self.assertEqual(r.status, 206)
                self.assertEqual(r.headers["content-range"], f"bytes 1000-1999/{BIG_SIZE}")
                self.assertEqual(r.body, self.big[1000:2000])
                r = self.get("/big.bin", h2=h2, headers=["Range: bytes=5000000-"])
                self.assertEqual(r.status, 206)
                self.assertEqual(r.body, self.big[5000000:])
                r = self.get("/index.html", h2=h2, headers=["Range: bytes=-5"])
                self.assertEqual((r.status, r.body), (206, INDEX[-5:]))
                r = self.get("/index.html", h2=h2, headers=["Range: bytes=9999-"])
                self.assertEqual(r.status, 416)
                self.assertEqual(r.headers["content-range"], f"bytes */{len(INDEX)}")
                # Several ranges, or an If-Range that no longer holds: the whole file.
                r = self.get("/index.html", h2=h2, headers=["Range: bytes=0-1,5-6"])
                self.assertEqual((r.status, r.body), (200, INDEX))
                r = self.get("/index.html", h2=h2,
                             headers=["Range: bytes=0-3", 'If-Range: "stale"'])
                self.assertEqual((r.status, r.body), (200, INDEX))
                etag = self.get("/index.html", h2=h2).headers["etag"]
                r = self.get("/index.html", h2=h2, headers=["Range: bytes=0-3", f"If-Range: {etag}"])
                self.assertEqual((r.status, r.body), (206, INDEX[:4]))

    def test_changed_file_is_served_fresh(self):
        path = os.path.join(self.root, "fresh.txt")
        write(path, b"version one\n")
        old = self.get("/fresh.txt")
        self.assertEqual(old.body, b"version one\n")
        # Same size, so only the mtime tells the versions apart; bump it rather than sleep.
        st = os.stat(path)
        write(path, b"version two\n")
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 7_000_000_000))
        # Each worker checks a cached file at most once a second: poll, bounded, until every
        # worker has seen the change.
        modified = email.utils.formatdate(int(os.stat(path).st_mtime), usegmt=True)

        def fresh(r):
            return (r.body == b"version two\n" and r.headers["etag"] != old.headers["etag"] and
                    r.headers["last-modified"] == modified)

        wait_until(lambda: all(fresh(self.get("/fresh.txt")) for _ in range(6)), timeout=10,
                   what="fresh content")
        # The old validator no longer matches on any worker. Which worker answers is the
        # kernel's choice, and each revalidates within a second of its own: poll, bounded.
        stale = [f"If-None-Match: {old.headers['etag']}"]
        wait_until(lambda: all((r.status, r.body) == (200, b"version two\n")
                               for r in (self.get("/fresh.txt", headers=stale)
                                         for _ in range(6))),
                   timeout=10, what="the old ETag to stop matching")
        # Grown past the cache limit: streamed, complete.
        grown = os.urandom(600 * 1024)
        write(path, grown)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 9_000_000_000))
        wait_until(lambda: all(self.get("/fresh.txt").body == grown for _ in range(6)),
                   timeout=10, what="grown content")
        os.unlink(path)
        wait_until(lambda: all(self.get("/fresh.txt").status == 404 for _ in range(6)),
                   timeout=10, what="404 after unlink")

    def test_h2load(self):
        need("h2load")
        for extra in ([], ["--h1"]):
            with self.subTest(protocol=extra or "h2c"):
                # -N: a stalled connection fails the run instead of hanging it
                out = subprocess.run(["h2load", "-n", "20000", "-c", "10", "-m", "10", "-N", "10",
                                      *extra, self.url + "/index.html"],
                                     capture_output=True, text=True, timeout=120)
                self.assertEqual(out.returncode, 0, out.stderr)
                m = re.search(r"requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded, "
                              r"(\d+) failed", out.stdout)
                self.assertIsNotNone(m, out.stdout)
                self.assertEqual(m.groups(), ("20000", "20000", "20000", "0"), out.stdout)
                self.assertRegex(out.stdout, r"status codes: 20000 2xx")


if __name__ == "__main__":
    unittest.main()
