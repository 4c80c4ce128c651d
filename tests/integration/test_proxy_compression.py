"""A route's `compress`: gzip, br and zstd chosen from Accept-Encoding, decoded by curl and by
Python's decoders to the origin's bytes, over HTTP/1.1 and h2c; the fields that change with the
representation (Vary, ETag, Content-Length, Accept-Ranges); what is never compressed; a stream
that reaches the client line by line; a client that leaves mid-response; the metrics."""
import gzip
import http.client
import socket
import subprocess
import unittest
import zlib

import brotli

import harness
import zstd_stream
from compressible_origin import CompressibleOrigin, body_of
from proxy_harness import Proxy

ROUTES = """
[[route]]
path_prefix = "/plain/"
prefix_rewrite = "/"
cluster = "app"

[[route]]
path_prefix = "/gzip-only/"
prefix_rewrite = "/"
cluster = "app"
compress = { encodings = ["gzip"], gzip_level = 9, min_length = 10, types = ["text/*"] }
"""


def request(port, path, headers=None, method="GET"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def curl_decoded(url, encoding, *extra):
    """What curl (with zlib, brotli and zstd) decodes, and the coding the proxy named."""
    out = subprocess.run(["curl", "-sS", "--compressed", "-H", f"Accept-Encoding: {encoding}",
                          "-D", "/dev/stderr", *extra, url], capture_output=True, timeout=30)
    assert out.returncode == 0, out.stderr
    names = [line.split(b":", 1)[1].strip().decode() for line in out.stderr.splitlines()
             if line.lower().startswith(b"content-encoding:")]
    return out.stdout, names


class Compression(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need("curl")
        cls.origin = CompressibleOrigin()
        cls.proxy = Proxy([cls.origin.endpoint], workers=1, routes_first=ROUTES, catch_all=False,
                          extra_config='[[route]]\ncluster = "app"\ncompress = true\n')

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.origin.stop()

    def get(self, path, accept=None, method="GET", **more):
        headers = dict(more)
        if accept is not None:
            headers["Accept-Encoding"] = accept
        return request(self.proxy.port, path, headers, method)

    def test_each_coding_decodes_to_the_origins_bytes(self):
        want = body_of(100_000)
        for coding, decode in (("gzip", gzip.decompress), ("br", brotli.decompress)):
            status, fields, body = self.get("/doc?len=100000", coding)
            self.assertEqual(status, 200)
            self.assertEqual(fields["content-encoding"], coding)
            self.assertLess(len(body), len(want) // 5)
            self.assertEqual(decode(body), want, coding)
        for coding in ("gzip", "br", "zstd"):
            for extra in ((), ("--http2-prior-knowledge",)):
                got, names = curl_decoded(f"{self.proxy.url}/doc?len=100000", coding, *extra)
                self.assertEqual(names, [coding], extra)
                self.assertEqual(got, want, (coding, extra))

    def test_a_chunked_upstream_body_is_compressed_too(self):
        status, fields, body = self.get("/doc?len=50000&chunked=1", "gzip")
        self.assertEqual(fields["content-encoding"], "gzip")
        self.assertEqual(gzip.decompress(body), body_of(50000))

    def test_the_weights_choose(self):
        cases = {"gzip, deflate, br, zstd": "zstd", "gzip;q=0.5, br;q=0.8": "br",
                 "*;q=0.1, gzip;q=0.5": "gzip", "identity, gzip;q=0.5": None,
                 "gzip;q=0": None, "gzip;q=5": None, "deflate": None, "": None}
        for accept, coding in cases.items():
            status, fields, body = self.get("/doc?len=2000", accept)
            self.assertEqual(fields.get("content-encoding"), coding, accept)
            self.assertEqual(fields["vary"], "Accept-Encoding", accept)
        status, fields, body = self.get("/doc?len=2000")  # no Accept-Encoding at all
        self.assertNotIn("content-encoding", fields)
        self.assertEqual(fields["content-length"], "2000")
        self.assertEqual(fields["vary"], "Accept-Encoding")  # a cache must still tell them apart

    def test_thousands_of_tokens(self):
        many = ",".join(f"c{i};q=0.{i % 10}" for i in range(2500))  # 24 KB
        status, fields, body = self.get("/doc?len=2000", many + ", br;q=0.2")
        self.assertEqual(status, 200)
        self.assertEqual(fields["content-encoding"], "br")
        self.assertEqual(brotli.decompress(body), body_of(2000))
        # Past max_header_bytes (32 KiB) it is the head that is refused, as any other field.
        status, fields, body = self.get("/doc?len=2000", "gzip," * 10000)
        self.assertEqual(status, 431)

    def test_the_fields_of_another_representation(self):
        status, fields, body = self.get('/doc?len=5000&etag="v1"&vary=Origin&ranges=1', "gzip")
        self.assertEqual(fields["content-encoding"], "gzip")
        self.assertEqual(fields["etag"], 'W/"v1"')
        self.assertEqual(fields["vary"], "Origin, Accept-Encoding")
        self.assertNotIn("content-length", fields)
        self.assertNotIn("accept-ranges", fields)
        self.assertEqual(fields["transfer-encoding"], "chunked")
        status, fields, body = self.get('/doc?len=5000&etag=W/"v2"&vary=accept-encoding', "gzip")
        self.assertEqual(fields["etag"], 'W/"v2"')
        self.assertEqual(fields["vary"], "accept-encoding")

    def test_what_is_never_compressed(self):
        cases = [
            ("/doc?len=5000&type=image/png", "a type not listed"),
            ("/doc?len=100", "shorter than min_length"),
            ("/doc?len=5000&cc=public,%20no-transform", "no-transform"),
            ("/doc?len=5000&status=206", "a 206"),
        ]
        for path, why in cases:
            status, fields, body = self.get(path, "gzip, br, zstd")
            self.assertNotIn("content-encoding", fields, why)
            self.assertEqual(body, body_of(int(path.split("len=")[1].split("&")[0])), why)
        for status_code in (204, 304):
            status, fields, body = self.get(f"/doc?status={status_code}", "gzip")
            self.assertEqual(status, status_code)
            self.assertNotIn("content-encoding", fields)
            self.assertEqual(body, b"")

    def test_an_upstream_coding_is_passed_through_untouched(self):
        # The upstream claims gzip for bytes that are not: they go as they are, named as sent.
        status, fields, body = self.get("/doc?len=5000&ce=gzip", "gzip, br")
        self.assertEqual(fields["content-encoding"], "gzip")
        self.assertEqual(body, body_of(5000))
        self.assertEqual(fields["content-length"], "5000")

    def test_a_range_request_is_not_compressed(self):
        status, fields, body = self.get("/doc?len=5000", "gzip", Range="bytes=0-99")
        self.assertNotIn("content-encoding", fields)

    def test_head_answers_the_fields_a_get_would_have(self):
        _, get_fields, _ = self.get('/doc?len=5000&etag="h"', "br")
        status, head_fields, body = self.get('/doc?len=5000&etag="h"', "br", method="HEAD")
        self.assertEqual(body, b"")
        for name in ("content-encoding", "etag", "vary", "content-type"):
            self.assertEqual(head_fields.get(name), get_fields.get(name), name)
        self.assertNotIn("content-length", head_fields)

    def test_routes_choose_codings_levels_and_types(self):
        status, fields, body = self.get("/gzip-only/doc?len=5000&type=text/css", "zstd, br, gzip")
        self.assertEqual(fields["content-encoding"], "gzip")
        self.assertEqual(gzip.decompress(body), body_of(5000))
        self.assertEqual(len(body), len(gzip.compress(body_of(5000), 9, mtime=0)))
        status, fields, body = self.get("/gzip-only/doc?len=5000", "gzip")  # application/json
        self.assertNotIn("content-encoding", fields)
        status, fields, body = self.get("/plain/doc?len=5000", "gzip")
        self.assertNotIn("content-encoding", fields)
        self.assertNotIn("vary", fields)

    def test_a_stream_reaches_the_client_line_by_line(self):
        for coding in ("gzip", "br", "zstd"):
            with self.subTest(coding=coding):
                self.stream_line_by_line(coding)

    def stream_line_by_line(self, coding):
        origin = self.origin
        for e in origin.released:
            e.clear()
        sock = socket.create_connection(("127.0.0.1", self.proxy.port), timeout=20)
        try:
            sock.sendall(b"GET /stream?lines=3 HTTP/1.1\r\nHost: x\r\n"
                         b"Accept-Encoding: " + coding.encode() + b"\r\n\r\n")
            reader = ChunkedReader(sock)
            fields = reader.head()
            self.assertEqual(fields.get("content-encoding"), coding)
            decoder = Decoder(coding)
            seen = b""
            for i in range(3):
                origin.release(i)  # line i leaves the origin only now
                want = b"".join(b"data: %d\n\n" % k for k in range(i + 1))
                while seen != want:
                    chunk = reader.chunk()
                    self.assertIsNotNone(chunk, f"the stream ended before line {i}: {seen!r}")
                    seen += decoder.feed(chunk)
                    self.assertTrue(want.startswith(seen), seen)
            while (chunk := reader.chunk()) is not None:
                seen += decoder.feed(chunk)
            self.assertEqual(seen, b"data: 0\n\ndata: 1\n\ndata: 2\n\n")
        finally:
            sock.close()

    def test_a_client_that_leaves_mid_response_leaks_nothing(self):
        before = self.proxy.metric("portico_compressed_responses_total", encoding="zstd")
        for _ in range(20):
            sock = socket.create_connection(("127.0.0.1", self.proxy.port), timeout=20)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.sendall(b"GET /doc?len=3000000&chunked=1 HTTP/1.1\r\nHost: x\r\n"
                         b"Accept-Encoding: zstd\r\n\r\n")
            self.assertTrue(sock.recv(100).startswith(b"HTTP/1.1 200"))
            sock.close()
        harness.wait_until(
            lambda: self.proxy.metric("portico_compressed_responses_total", encoding="zstd") >=
            before + 20, what="20 compressed responses counted")
        # The compressors' state counts as buffer memory: all of it given back.
        harness.wait_until(lambda: self.proxy.metric("portico_buffer_bytes") == 0,
                           what="buffers and compressors freed")
        status, fields, body = self.get("/doc?len=5000", "zstd")
        self.assertEqual(status, 200)

    def test_metrics_count_responses_and_bytes_by_coding(self):
        def sample(name, **labels):
            return self.proxy.metric(name, **labels)
        before = (sample("portico_compressed_responses_total", encoding="br"),
                  sample("portico_compression_bytes_total", encoding="br", direction="in"),
                  sample("portico_compression_bytes_total", encoding="br", direction="out"))
        status, fields, body = self.get("/doc?len=40000", "br")
        harness.wait_until(lambda: sample("portico_compression_bytes_total", encoding="br",
                                          direction="out") >= before[2] + len(body),
                           what="the bytes counted")
        self.assertEqual(sample("portico_compressed_responses_total", encoding="br"),
                         before[0] + 1)
        self.assertEqual(sample("portico_compression_bytes_total", encoding="br", direction="in"),
                         before[1] + 40000)
        self.assertEqual(sample("portico_compression_bytes_total", encoding="br",
                                direction="out"), before[2] + len(body))


class ChunkedReader:
    """An HTTP/1.1 response read off a raw socket, one chunk at a time as it arrives."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def _fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise AssertionError(f"connection closed; have {self.buf!r}")
        self.buf += data

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def head(self):
        status = self._line()
        assert status.startswith(b"HTTP/1.1 200"), status
        fields = {}
        while line := self._line():
            name, value = line.split(b":", 1)
            fields[name.strip().lower().decode()] = value.strip().decode()
        assert fields.get("transfer-encoding") == "chunked", fields
        return fields

    def chunk(self):
        """The next chunk's bytes, or None after the last."""
        size = int(self._line().split(b";")[0], 16)
        if size == 0:
            self._line()
            return None
        while len(self.buf) < size + 2:
            self._fill()
        data, self.buf = self.buf[:size], self.buf[size + 2:]
        return data


class Decoder:
    def __init__(self, coding):
        self.d = {"gzip": lambda: zlib.decompressobj(16 + zlib.MAX_WBITS),
                  "br": brotli.Decompressor,
                  "zstd": zstd_stream.Decompressor}[coding]()

    def feed(self, data):
        if isinstance(self.d, brotli.Decompressor):
            return self.d.process(data)
        return self.d.decompress(data)


if __name__ == "__main__":
    unittest.main()
