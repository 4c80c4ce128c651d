"""Request bodies arrive whole: every client mode (HTTP/1.1 with Content-Length, HTTP/1.1
chunked, h2c without content-length, h2 over TLS with it) x both upstream protocols x body sizes
around every 16 KiB block and frame boundary up to 10 MiB x {sent at once, queued behind a busy
upstream connection}. The upstream echoes the body; its SHA-256 must equal what was sent.

The queued cells are the regression test for the truncated replay buffer (issue 9, defect 1):
while a request waits for a connection its body is held, and all of it must go upstream once a
connection is free, not one gather's worth."""
import hashlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import unittest

import harness
from proxy_harness import Proxy
from test_proxy_metrics import get, sample

SIZES = [0, 1, 16383, 16384, 16385, (1 << 20) + 7, 10 << 20]

# Each client mode: curl's flags, whether the body is read from stdin (then curl streams it
# without a length), and whether it talks to the TLS listener.
MODES = {
    "h1": (["--http1.1", "--data-binary", "@BODY"], False, False),
    "h1-chunked": (["--http1.1", "-H", "Transfer-Encoding: chunked", "--data-binary", "@BODY"],
                   False, False),
    "h2c": (["--http2-prior-knowledge", "-X", "POST", "-T", "-"], True, False),
    "h2-tls": (["--http2", "--data-binary", "@BODY"], False, True),
}


def curl_post(proxy, mode, body_path, out_path):
    """Starts curl posting body_path to /echo; returns the Popen."""
    flags, stdin, tls = MODES[mode]
    flags = [f.replace("@BODY", "@" + body_path) for f in flags]
    if tls:
        url = f"https://localhost:{proxy.tls_port}/echo"
        flags += ["-k", "--resolve", f"localhost:{proxy.tls_port}:127.0.0.1"]
    else:
        url = f"{proxy.url}/echo"
    cmd = ["curl", "-sS", "--fail-with-body", "-o", out_path, "--max-time", "120", *flags, url]
    with open(body_path if stdin else os.devnull, "rb") as f:
        return subprocess.Popen(cmd, stdin=f, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class BodyIntegrity(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need("curl", "openssl")
        cls.tmp = tempfile.mkdtemp(prefix="portico-bodies-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)
        cls.bodies = {}
        for size in SIZES:
            path = os.path.join(cls.tmp, f"body-{size}")
            with open(path, "wb") as f:
                f.write(os.urandom(size))
            cls.bodies[size] = (path, sha256_file(path))
        # One stream per h2c connection upstream, so that a second request queues there too.
        cls.backend = harness.Backend("--h2-max-streams", "1", workers=2, unix=True)
        cls.proxies = {}
        try:
            for protocol in ("http1", "h2c"):
                # One worker and one upstream connection: a request held open makes the next
                # one wait in the pool's queue.
                cls.proxies[protocol] = Proxy(
                    [f"unix:{cls.backend.sock_path}"], tls=True, workers=1,
                    cluster_options={"protocol": f'"{protocol}"', "max_connections": 1,
                                     "queue_timeout": 60})
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for p in cls.proxies.values():
            p.stop()
        cls.backend.stop()
        for path, _ in cls.bodies.values():
            os.unlink(path)

    def endpoint(self, proxy):
        doc = json.loads(get(proxy.admin_port, "/status")[1])
        return doc["clusters"][0]["endpoints"][0]

    def body_bytes_received(self, proxy):
        return sample(get(proxy.admin_port, "/metrics")[1],
                      "portico_request_body_received_bytes_total")

    def hold_connection(self, proxy):
        """A chunked upload left unfinished: it holds the only upstream connection (or stream)
        until release() is called on the returned socket."""
        harness.wait_until(lambda: self.endpoint(proxy)["busy"] == 0, what="no busy upstream")
        s = socket.create_connection(("127.0.0.1", proxy.port), timeout=30)
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n"
                  b"5\r\nhello\r\n")
        harness.wait_until(lambda: self.endpoint(proxy)["busy"] == 1, what="held connection")
        return s

    def release(self, s):
        s.sendall(b"0\r\n\r\n")
        with s.makefile("rb") as f:
            r = harness.read_http1_response(f)
        s.close()
        self.assertEqual((r.status, r.body), (200, b"hello"), r)

    def post(self, proxy, mode, size, queued):
        body_path, sha = self.bodies[size]
        out_path = os.path.join(self.tmp, "out")
        holder = self.hold_connection(proxy) if queued else None
        received = self.body_bytes_received(proxy)
        p = curl_post(proxy, mode, body_path, out_path)
        try:
            if queued:
                harness.wait_until(lambda: self.endpoint(proxy)["queue_depth"] == 1,
                                   what="request queued")
                # Body bytes on their way while the request waits (the proxy holds some,
                # and pauses the client for the rest).
                harness.wait_until(lambda: p.poll() is not None or
                                   self.body_bytes_received(proxy) - received >=
                                   min(size, 64 * 1024), timeout=20,
                                   what="body received while queued")
                self.release(holder)
                holder = None
            _, err = p.communicate(timeout=120)
        finally:
            if holder:
                holder.close()
            if p.poll() is None:
                p.kill()
                p.communicate()
        self.assertEqual(p.returncode, 0, err.decode(errors="replace"))
        self.assertEqual(os.path.getsize(out_path), size)
        self.assertEqual(sha256_file(out_path), sha)

    def test_matrix(self):
        for upstream, proxy in self.proxies.items():
            for mode in MODES:
                for queued in (False, True):
                    for size in SIZES:
                        with self.subTest(upstream=upstream, client=mode, queued=queued,
                                          size=size):
                            self.post(proxy, mode, size, queued)
        for proxy in self.proxies.values():
            self.assertIsNone(proxy.process.proc.poll(), proxy.read_log())


if __name__ == "__main__":
    unittest.main()
