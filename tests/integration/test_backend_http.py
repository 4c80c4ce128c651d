"""portico-backend over HTTP/1.0 and HTTP/1.1: the apps, keep-alive, pipelining, chunked bodies,
Expect: 100-continue, and the unix socket listener."""
import http.client
import os
import shutil
import socket
import stat
import subprocess
import tempfile
import threading
import time
import unittest

import harness
from harness import Backend, connection, exchange_raw, read_http1_response

HELLO = b"hello world\n"


def get(port, path, method="GET", body=None, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp, resp.read()
    finally:
        conn.close()


class Http1Test(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.backend = Backend("--keepalive-timeout", "1", workers=2)
        cls.port = cls.backend.port

    @classmethod
    def tearDownClass(cls):
        cls.backend.stop()

    def test_hello_http11(self):
        for path in ("/", "/hello"):
            resp, body = get(self.port, path)
            self.assertEqual(resp.status, 200)
            self.assertEqual(body, HELLO)
            self.assertEqual(resp.getheader("content-length"), "12")
            self.assertEqual(resp.getheader("content-type"), "text/plain")
            self.assertEqual(resp.getheader("server"), "portico-backend")
            self.assertRegex(resp.getheader("date"),
                             r"^\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT$")
            self.assertEqual(resp.version, 11)

    def test_http10_without_keep_alive_closes(self):
        out, closed = exchange_raw(self.port, b"GET /hello HTTP/1.0\r\n\r\n")
        self.assertEqual(len(out), 1)
        self.assertEqual(out[0].version, "HTTP/1.0")
        self.assertEqual(out[0].status, 200)
        self.assertEqual(out[0].body, HELLO)
        self.assertEqual(out[0].header("connection"), "close")
        self.assertTrue(closed)

    def test_http10_keep_alive_reuses_the_connection(self):
        with connection(self.port, 5) as (s, f):
            for i in range(3):
                s.sendall(b"GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
                r = read_http1_response(f)
                self.assertEqual((r.version, r.status, r.body), ("HTTP/1.0", 200, HELLO))
                self.assertEqual(r.header("connection"), "keep-alive")
            # Without the keep-alive token an HTTP/1.0 exchange is the connection's last.
            s.sendall(b"GET /hello HTTP/1.0\r\n\r\n")
            r = read_http1_response(f)
            self.assertEqual(r.header("connection"), "close")
            self.assertEqual(f.read(1), b"")

    def test_keep_alive_reuse(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        self.addCleanup(conn.close)
        local = None
        for i in range(20):
            conn.request("GET", "/hello")
            resp = conn.getresponse()
            self.assertEqual(resp.read(), HELLO)
            self.assertFalse(resp.will_close)
            if local is None:
                local = conn.sock.getsockname()
            # The same socket carried every request: no reconnect happened underneath.
            self.assertEqual(conn.sock.getsockname(), local)

    def test_idle_keep_alive_connection_times_out(self):
        with connection(self.port, 10) as (s, f):
            s.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertEqual(read_http1_response(f).status, 200)
            t0 = time.monotonic()
            self.assertEqual(f.read(1), b"")  # --keepalive-timeout 1 closes it
            # Closed by the idle timer, not at once after the response (the timer starts as
            # the response is written, a little before t0: 0.5 s of slack).
            self.assertGreater(time.monotonic() - t0, 0.5)
            self.assertLess(time.monotonic() - t0, 5)

    def test_keep_alive_expiry_lets_a_stalled_reader_finish(self):
        # The answer is complete, and its last bytes wait in the connection's output for a
        # client that stalls for 2.5 s before reading them: the keep-alive timeout (1 s) must
        # not cut them (send_timeout, 60 s, bounds a client that does not read). The same timer
        # ends idle connections 1 s into a graceful stop, and cut such answers there too (the
        # chaos soak: a retiring worker's answers to a proxy whose HTTP/2 client read slowly).
        backend = Backend("--keepalive-timeout", "1", workers=1, unix=True)
        self.addCleanup(backend.stop)
        # Where the answer ends relative to the stall decides whether its last bytes are in
        # the socket (safe) or still in the worker's output (cut): several stall points.
        n = 3000000
        for left in (50000, 100000, 150000, 200000, 250000, 300000):
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(10)
                s.connect(backend.sock_path)
                s.sendall(f"GET /bytes?n={n} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                data = b""
                while len(data) < n - left:
                    data += s.recv(min(65536, n - left - len(data)))
                time.sleep(2.5)  # the client stalls: the workload, not a synchronisation
                while chunk := s.recv(65536):
                    data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                self.assertIn(b" 200 ", head.split(b"\r\n")[0])
                self.assertEqual(len(body), n, f"stalled with {left} bytes unread")

    def test_pipelining_answers_in_order(self):
        requests = (b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"
                    b"GET /counter?id=pipeline HTTP/1.1\r\nHost: x\r\n\r\n"
                    b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nfirst"
                    b"GET /status/404 HTTP/1.1\r\nHost: x\r\n\r\n"
                    b"GET /counter?id=pipeline HTTP/1.1\r\nHost: x\r\n\r\n"
                    b"HEAD /hello HTTP/1.1\r\nHost: x\r\n\r\n"
                    b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\nsecond"
                    b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        with connection(self.port, 5) as (s, f):
            s.sendall(requests)  # one write: the server sees them all at once
            got = []
            for head in (False, False, False, False, False, True, False, False):
                got.append(read_http1_response(f, head_request=head))
            self.assertEqual(f.read(1), b"")
        self.assertEqual([r.status for r in got], [200, 200, 200, 404, 200, 200, 200, 200])
        self.assertEqual(got[0].body, HELLO)
        first = int(got[1].body.split(b":")[1].rstrip(b"}"))
        self.assertEqual(got[4].body, b'{"counter":%d}' % (first + 1))
        self.assertEqual(got[2].body, b"first")
        self.assertEqual(got[5].header("content-length"), "12")
        self.assertEqual(got[6].body, b"second")
        self.assertEqual(got[7].body, HELLO)
        self.assertEqual(got[7].header("connection"), "close")
        for r in got[:7]:
            self.assertIsNone(r.header("connection"))

    def test_pipelined_requests_split_across_writes(self):
        data = b"".join(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n" for _ in range(10))
        with connection(self.port, 5) as (s, f):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for i in range(0, len(data), 7):  # boundaries land inside heads
                s.sendall(data[i:i + 7])
            for _ in range(10):
                self.assertEqual(read_http1_response(f).body, HELLO)

    def test_half_closed_client_still_gets_its_answers(self):
        # The client sends its requests and shuts its write side, as `nc -N` does.
        with connection(self.port, 10) as (s, f):
            s.sendall(b"GET /delay?ms=100 HTTP/1.1\r\nHost: x\r\n\r\n"
                      b"GET /counter?id=halfclose HTTP/1.1\r\nHost: x\r\n\r\n"
                      b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nlast")
            s.shutdown(socket.SHUT_WR)
            got = [read_http1_response(f) for _ in range(3)]
            self.assertEqual(f.read(1), b"")  # and then the server closes
        self.assertEqual([r.status for r in got], [200, 200, 200])
        self.assertEqual((got[0].body, got[2].body), (HELLO, b"last"))

    def test_truncated_request_then_eof_closes(self):
        with connection(self.port, 10) as (s, f):
            s.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\nGET /hel")
            s.shutdown(socket.SHUT_WR)
            self.assertEqual(read_http1_response(f).body, HELLO)
            self.assertEqual(f.read(1), b"")

    def test_chunked_request_body_echoed(self):
        chunks = [b"a" * 1, b"bc" * 100, b"x" * 70000, b"tail"]
        body = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(c), c) for c in chunks)
        req = (b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
               b"Content-Type: text/x-test\r\n\r\n" + body + b"0\r\nX-Trailer: 1\r\n\r\n")
        out, _ = exchange_raw(self.port, req)
        self.assertEqual(out[0].status, 200)
        self.assertEqual(out[0].header("content-type"), "text/x-test")
        self.assertEqual(out[0].body, b"".join(chunks))

    def test_chunked_request_body_from_a_generator(self):
        parts = [os.urandom(n) for n in (10, 1000, 100000, 3)]
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        self.addCleanup(conn.close)
        conn.request("POST", "/echo", body=iter(parts), encode_chunked=True)
        resp = conn.getresponse()
        self.assertEqual(resp.status, 200)
        self.assertEqual(resp.read(), b"".join(parts))

    def test_echo_with_content_length_and_keep_alive(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        self.addCleanup(conn.close)
        for size in (0, 1, 5000, 300000):
            data = os.urandom(size)
            conn.request("POST", "/echo", body=data)
            resp = conn.getresponse()
            self.assertEqual(resp.status, 200)
            self.assertEqual(resp.getheader("content-length"), str(size))
            self.assertEqual(resp.read(), data)

    def test_expect_100_continue(self):
        with connection(self.port, 5) as (s, f):
            s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
                      b"Expect: 100-continue\r\n\r\n")
            interim = read_http1_response(f)
            self.assertEqual(interim.status, 100)
            s.sendall(b"ping")
            r = read_http1_response(f)
            self.assertEqual((r.status, r.body), (200, b"ping"))

    def test_status_app(self):
        resp, body = get(self.port, "/status/418")
        self.assertEqual(resp.status, 418)
        self.assertTrue(body.startswith(b"418 "))
        resp, body = get(self.port, "/status/204")
        self.assertEqual((resp.status, body), (204, b""))
        self.assertIsNone(resp.getheader("content-length"))
        resp, _ = get(self.port, "/status/99")
        self.assertEqual(resp.status, 400)
        resp, _ = get(self.port, "/no/such/app")
        self.assertEqual(resp.status, 404)

    def test_head_has_length_but_no_body(self):
        with connection(self.port, 5) as (s, f):
            s.sendall(b"HEAD /hello HTTP/1.1\r\nHost: x\r\n\r\n"
                      b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            head = read_http1_response(f, head_request=True)
            self.assertEqual((head.status, head.header("content-length")), (200, "12"))
            self.assertEqual(read_http1_response(f).body, HELLO)

    def test_bytes_app_streams_the_pattern(self):
        n = 16 * 1024 * 1024 + 3  # far more than the socket buffers hold
        t0 = time.monotonic()
        resp, body = get(self.port, f"/bytes?n={n}")
        # No stall while the producer waits for the socket (it once waited for a timer).
        self.assertLess(time.monotonic() - t0, 4)
        self.assertEqual(resp.status, 200)
        self.assertEqual(len(body), n)
        pattern = b"0123456789abcdef" * 4096
        self.assertEqual(body, (pattern * (n // len(pattern) + 1))[:n])
        resp, _ = get(self.port, "/bytes?n=-1")
        self.assertEqual(resp.status, 400)

    def test_delay_does_not_block_the_worker(self):
        with Backend(workers=1) as b:
            results = []

            def one():
                resp, body = get(b.port, "/delay?ms=400")
                results.append((resp.status, body))

            t0 = time.monotonic()
            threads = [threading.Thread(target=one) for _ in range(10)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=20)
            elapsed = time.monotonic() - t0
        self.assertEqual(results, [(200, HELLO)] * 10)
        # One worker served ten 400 ms delays side by side, not one after another.
        self.assertLess(elapsed, 2.5)

    def test_counter_counts(self):
        values = [int(get(self.port, "/counter?id=seq")[1].split(b":")[1].rstrip(b"}"))
                  for _ in range(5)]
        self.assertEqual(values, list(range(values[0], values[0] + 5)))
        resp, body = get(self.port, "/?id=seq")
        self.assertEqual(body, b'{"counter":%d}' % (values[-1] + 1))
        self.assertEqual(resp.getheader("content-type"), "application/json")
        resp, body = get(self.port, "/counter?id=bad%20id")
        self.assertEqual(resp.status, 400)
        self.assertIn(b'"error"', body)


class UnixSocketTest(unittest.TestCase):
    def test_unix_socket_mode_and_removal(self):
        harness.need("curl")
        b = Backend(workers=1, unix=True)
        with b:
            path = b.sock_path
            self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o666)
            out = subprocess.run(["curl", "-sS", "--max-time", "10", "--unix-socket", path,
                                  "http://localhost/hello"], capture_output=True, check=True)
            self.assertEqual(out.stdout, HELLO)
        self.assertFalse(os.path.exists(path))
        self.assertEqual(b.proc.returncode, 0)

    def test_unix_socket_with_a_restrictive_mode(self):
        harness.need("curl")
        d = tempfile.mkdtemp(prefix="portico-unix-")
        self.addCleanup(shutil.rmtree, d, True)
        path = os.path.join(d, "p.sock")
        with Backend(workers=1, extra_listen=[f"unix:{path}:0600"]):
            harness.wait_until(lambda: harness.unix_socket_open(path), what="unix socket")
            self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
            out = subprocess.run(["curl", "-sS", "--max-time", "10", "--unix-socket", path,
                                  "http://localhost/counter?id=unix"], capture_output=True,
                                 check=True)
            self.assertEqual(out.stdout, b'{"counter":1}')
        self.assertFalse(os.path.exists(path))


if __name__ == "__main__":
    unittest.main()
