"""portico-backend against bad and oversized input, and memory while streaming a large body."""
import hashlib
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import unittest

import harness
from harness import Backend, connection, exchange_raw, read_http1_response

HELLO = b"hello world\n"


class BadInputTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.backend = Backend("--max-body", "1000", workers=1)
        cls.port = cls.backend.port

    @classmethod
    def tearDownClass(cls):
        cls.backend.stop()

    def assert_refused(self, data, status):
        out, closed = exchange_raw(self.port, data)
        self.assertEqual(len(out), 1, f"no response to {data[:60]!r}")
        self.assertEqual(out[0].status, status, out[0])
        self.assertEqual(out[0].header("connection"), "close")
        self.assertTrue(closed, "the connection stays open after an error")
        return out[0]

    def test_malformed_request_line(self):
        self.assert_refused(b"GARBAGE\r\n\r\n", 400)
        self.assert_refused(b"GET /hello HTTP/1.1 extra\r\nHost: x\r\n\r\n", 400)
        self.assert_refused(b"GET /hello HTTP/1.1\r\nHost : x\r\n\r\n", 400)
        self.assert_refused(b"GET /hello HTTP/1.1\r\nHost: x\r\nX: a\r\n folded\r\n\r\n", 400)

    def test_bare_lf_line_ends(self):
        self.assert_refused(b"GET /hello HTTP/1.1\nHost: x\n\n", 400)

    def test_missing_host_on_http11(self):
        self.assert_refused(b"GET /hello HTTP/1.1\r\n\r\n", 400)

    def test_malformed_request_after_a_good_one(self):
        out, closed = exchange_raw(self.port, b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"
                                              b"BROKEN REQUEST\r\n\r\n", responses=2)
        self.assertEqual([r.status for r in out], [200, 400])
        self.assertEqual(out[0].body, HELLO)
        self.assertTrue(closed)

    def test_header_section_too_large(self):
        self.assert_refused(b"GET /hello HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 40000 +
                            b"\r\n\r\n", 431)
        many = b"".join(b"X-H%d: v\r\n" % i for i in range(200))
        self.assert_refused(b"GET /hello HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n", 431)

    def test_uri_too_long(self):
        self.assert_refused(b"GET /" + b"a" * 10000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414)

    def test_body_over_max_body_by_content_length(self):
        self.assert_refused(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\n\r\n"
                            + b"x" * 1001, 413)
        out, _ = exchange_raw(self.port, b"POST /echo HTTP/1.1\r\nHost: x\r\n"
                                         b"Content-Length: 1000\r\nConnection: close\r\n\r\n"
                                         + b"y" * 1000)
        self.assertEqual((out[0].status, out[0].body), (200, b"y" * 1000))

    def test_a_client_still_sending_after_a_413_is_drained_not_reset(self):
        # The refusal closes lingering: input is read and dropped until the client's FIN, so
        # that the close is no reset (a reset destroys what the client has not read yet). The
        # linger ended, with input unread, after the first four reads of one wakeup.
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n")
            r = read_http1_response(s.makefile("rb"))
            self.assertEqual(r.status, 413)
            chunk = b"x" * 65536
            for _ in range(16):
                s.sendall(chunk)
            s.shutdown(socket.SHUT_WR)
            self.assertEqual(s.recv(1), b"")

    def test_chunked_body_over_max_body_to_a_handler_that_answered_first(self):
        # /hello answers before the body arrives; the over-long body then ends the connection,
        # but the complete response already given must reach the client.
        body = b"".join(b"100\r\n" + b"z" * 256 + b"\r\n" for _ in range(8)) + b"0\r\n\r\n"
        out, closed = exchange_raw(self.port, b"POST /hello HTTP/1.1\r\nHost: x\r\n"
                                              b"Transfer-Encoding: chunked\r\n\r\n" + body)
        self.assertEqual(len(out), 1)
        self.assertEqual((out[0].status, out[0].body), (200, HELLO))
        self.assertEqual(out[0].header("connection"), "close")
        self.assertTrue(closed)

    def test_chunked_body_over_max_body_before_any_response(self):
        # The delay app has not answered when the body passes the limit: a 413 is still possible.
        body = b"".join(b"100\r\n" + b"z" * 256 + b"\r\n" for _ in range(8)) + b"0\r\n\r\n"
        self.assert_refused(b"POST /delay?ms=2000 HTTP/1.1\r\nHost: x\r\n"
                            b"Transfer-Encoding: chunked\r\n\r\n" + body, 413)

    def test_unknown_transfer_coding(self):
        self.assert_refused(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
                            501)
        # Chunked last does not make the coding before it understood.
        self.assert_refused(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked"
                            b"\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 501)

    def test_content_length_with_transfer_encoding(self):
        out, closed = exchange_raw(self.port, b"POST /echo HTTP/1.1\r\nHost: x\r\n"
                                              b"Content-Length: 5\r\n"
                                              b"Transfer-Encoding: chunked\r\n\r\n"
                                              b"5\r\nhello\r\n0\r\n\r\n")
        self.assertEqual(out[0].status, 400)
        self.assertTrue(closed)

    def test_worker_survives_bad_input(self):
        pids = self.backend.worker_pids()
        for data in (b"\x00\x01\x02\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n",
                     b"GET /hello HTTP/1.1\r\nHost: x\r\nX: a\x01b\r\n\r\n"):
            exchange_raw(self.port, data)
        out, _ = exchange_raw(self.port, b"GET /hello HTTP/1.1\r\nHost: x\r\n"
                                         b"Connection: close\r\n\r\n")
        self.assertEqual(out[0].body, HELLO)
        self.assertEqual(self.backend.worker_pids(), pids)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class LargeEchoMemoryTest(unittest.TestCase):
    """A 50 MB echo streams: the server's memory does not grow with the body."""
    SIZE = 50 * 1024 * 1024
    LIMIT_KIB = 16 * 1024

    @classmethod
    def setUpClass(cls):
        harness.need("curl")
        cls.tmp = tempfile.mkdtemp(prefix="portico-echo-")
        cls.src = os.path.join(cls.tmp, "in.bin")
        with open(cls.src, "wb") as f:
            block = os.urandom(1 << 20)
            for i in range(cls.SIZE >> 20):
                f.write(block[i:] + block[:i])  # every MiB different
        cls.src_sha = sha256_file(cls.src)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def echo(self, *curl_args):
        with Backend(workers=2) as b:
            # Warm up each worker (allocator arenas, pools) so the figure is the body's cost.
            for _ in range(4):
                subprocess.run(["curl", "-sS", "-o", "/dev/null", "--max-time", "10",
                                *curl_args, f"{b.url}/hello"], check=True)
            before = b.rss_kib()
            out = os.path.join(self.tmp, "out.bin")
            curl = subprocess.Popen(["curl", "-sS", "--fail", "--max-time", "60", *curl_args,
                                     "-H", "Content-Type: application/octet-stream",
                                     "--data-binary", f"@{self.src}", "-o", out,
                                     f"{b.url}/echo"], stderr=subprocess.PIPE)
            peak = before
            while curl.poll() is None:  # sampling the peak, not waiting for anything
                peak = max(peak, b.rss_kib())
                time.sleep(0.02)
            peak = max(peak, b.rss_kib())
            self.assertEqual(curl.returncode, 0, curl.stderr.read())
            curl.stderr.close()
            self.assertEqual(os.path.getsize(out), self.SIZE)
            self.assertEqual(sha256_file(out), self.src_sha)
            os.unlink(out)
            growth = peak - before
            self.assertLess(growth, self.LIMIT_KIB,
                            f"RSS grew by {growth} KiB echoing {self.SIZE >> 20} MiB")

    def test_http1_echo_50mb(self):
        self.echo()

    def test_h2c_echo_50mb(self):
        self.echo("--http2-prior-knowledge")

    def test_http1_chunked_echo_50mb(self):
        self.echo("-H", "Transfer-Encoding: chunked")


if __name__ == "__main__":
    unittest.main()


class BackpressureTest(unittest.TestCase):
    """A client that does not read makes the server stop reading too, instead of buffering."""
    LIMIT_KIB = 16 * 1024

    def test_echo_to_a_client_that_does_not_read(self):
        total = 64 * 1024 * 1024
        chunk = os.urandom(1 << 20)
        with Backend(workers=1) as b:
            exchange_raw(b.port, b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            before = b.rss_kib()
            with connection(b.port, 10) as (s, f):
                s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % total)
                s.settimeout(1.0)
                sent = 0
                try:
                    while sent < total:
                        sent += s.send(chunk[: min(len(chunk), total - sent)])
                except socket.timeout:
                    pass  # the send stalled for a second: nobody is reading on the other side
                # Only the socket buffers and the server's bounded queue hold the body so far.
                self.assertLess(sent, 32 * 1024 * 1024)
                growth = b.rss_kib() - before
                self.assertLess(growth, self.LIMIT_KIB, f"RSS grew by {growth} KiB")
                # Now read while the rest is sent: everything comes back, in order.
                s.settimeout(30)
                rest = threading.Thread(target=lambda: s.sendall(b"\0" * (total - sent)))
                rest.start()
                r = read_http1_response(f)
                rest.join(timeout=30)
            self.assertEqual(r.status, 200)
            self.assertEqual(len(r.body), total)
            expected = hashlib.sha256()
            done = 0
            while done < sent:
                piece = chunk[: min(len(chunk), sent - done)]
                expected.update(piece)
                done += len(piece)
            expected.update(b"\0" * (total - sent))
            self.assertEqual(hashlib.sha256(r.body).hexdigest(), expected.hexdigest())

    def test_download_by_a_slow_reader(self):
        harness.need("curl")
        n = 64 * 1024 * 1024
        for proto in ([], ["--http2-prior-knowledge"]):
            with Backend(workers=1) as b:
                subprocess.run(["curl", "-sS", "-o", "/dev/null", *proto, f"{b.url}/hello"],
                               check=True)
                before = b.rss_kib()
                curl = subprocess.Popen(["curl", "-sS", "--max-time", "30", "--limit-rate", "64M",
                                         *proto, "-o", "/dev/null", "-w", "%{size_download}",
                                         f"{b.url}/bytes?n={n}"], stdout=subprocess.PIPE)
                peak = before
                while curl.poll() is None:  # sampling the peak, not waiting for anything
                    peak = max(peak, b.rss_kib())
                    time.sleep(0.02)
                out = curl.stdout.read()
                curl.stdout.close()
                self.assertEqual((curl.returncode, out), (0, str(n).encode()))
                self.assertLess(peak - before, self.LIMIT_KIB, f"{proto}: RSS grew by "
                                f"{peak - before} KiB")
