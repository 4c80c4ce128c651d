"""The proxy across the protocol matrix: clients {HTTP/1.1, h2c prior knowledge, h2c Upgrade,
h2 over TLS, HTTP/1.1 over TLS} x upstreams {HTTP/1.1 on a unix socket, HTTP/1.1 on TCP, h2c on
a unix socket}."""
import hashlib
import os
import subprocess
import tempfile
import unittest

import harness
from proxy_clients import CLIENTS, curl
from proxy_harness import Proxy


class ProxyMatrix(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need("curl", "h2load", "nghttp", "openssl")
        cls.docroot = tempfile.mkdtemp(prefix="portico-docroot-")
        with open(os.path.join(cls.docroot, "index.html"), "w") as f:
            f.write("<h1>portico</h1>\n")
        cls.backend = harness.Backend("--document-root", cls.docroot, workers=2, unix=True)
        cls.proxies = {}
        try:
            cls.proxies["unix"] = Proxy([f"unix:{cls.backend.sock_path}"], tls=True)
            cls.proxies["tcp"] = Proxy([f"127.0.0.1:{cls.backend.port}"], tls=True)
            cls.proxies["h2c"] = Proxy([f"unix:{cls.backend.sock_path}"], tls=True,
                                       cluster_options={"protocol": '"h2c"'})
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
        cls.backend.stop()

    def each(self):
        """(proxy, client mode, subTest context) for every cell of the matrix."""
        return [(proxy, mode, self.subTest(upstream=upstream, client=mode))
                for upstream, proxy in self.proxies.items() for mode in CLIENTS]

    def expect_version(self, r, mode):
        self.assertEqual(r.version, "2" if mode.startswith("h2") else "1.1", r)

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
                self.assertEqual(r.body, b"")
                self.assertEqual(r.header("etag"), etag)

    def test_post_echo_10mb(self):
        for proxy, mode, cell in self.each():
            with cell:
                r = curl(proxy, mode, "/echo", ["--data-binary", f"@{self.upload}",
                                                "-H", "Content-Type: application/x-test"])
                self.assertEqual(r.status, 200, r)
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
                self.assertEqual(r.header("transfer-encoding"), "chunked")
                self.assertEqual(hashlib.sha256(r.body).hexdigest(), self.upload_sha)

    def test_large_headers(self):
        big = "x" * 20000
        for proxy, mode, cell in self.each():
            with cell:
                r = curl(proxy, mode, "/hello", ["-H", f"X-Big: {big}"])
                self.assertEqual(r.status, 200, r)
                r = curl(proxy, mode, "/hello", ["-H", f"X-Big: {big * 2}"])
                self.assertEqual(r.status, 431, r)

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
