"""Bodies stream through the proxy with bounded buffers: a 1 GB upload and a 1 GB download
each keep portico's RSS growth under 32 MB."""
import hashlib
import socket
import threading
import unittest

import harness
from proxy_harness import Proxy

GB = 1 << 30
LIMIT_KIB = 32 * 1024


def pattern_sha256(n):
    """sha256 of portico-backend's /bytes?n=N body ("0123456789abcdef" repeated)."""
    h = hashlib.sha256()
    block = b"0123456789abcdef" * 4096
    left = n
    while left:
        k = min(left, len(block))
        h.update(block[:k])
        left -= k
    return h.hexdigest()


class ProxyMemory(unittest.TestCase):
    def setUp(self):
        self.backend = harness.Backend(workers=2, unix=True)
        self.addCleanup(self.backend.stop)
        self.proxy = Proxy([f"unix:{self.backend.sock_path}"], workers=1)
        self.addCleanup(self.proxy.stop)
        # Warm up pools and buffers, then take the baseline.
        harness.exchange_raw(self.proxy.port, b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n",
                             wait_close=False)
        self.base = self.proxy.rss_kib()
        self.peak = self.base
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()
        self.addCleanup(self._stop.set)

    def _sample(self):
        while not self._stop.wait(0.05):
            try:
                self.peak = max(self.peak, self.proxy.rss_kib())
            except OSError:
                return

    def growth(self):
        self._stop.set()
        self._sampler.join()
        return self.peak - self.base

    def test_1gb_download(self):
        with socket.create_connection(("127.0.0.1", self.proxy.port)) as s:
            s.sendall(f"GET /bytes?n={GB} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            f = s.makefile("rb")
            status = f.readline()
            headers = {}
            while True:
                line = f.readline()
                if line in (b"\r\n", b""):
                    break
                k, _, v = line.decode().partition(":")
                headers[k.strip().lower()] = v.strip()
            self.assertIn(b" 200 ", status)
            self.assertEqual(int(headers["content-length"]), GB)
            h = hashlib.sha256()
            left = GB
            while left:
                chunk = f.read(min(left, 1 << 20))
                self.assertTrue(chunk, "connection closed early")
                h.update(chunk)
                left -= len(chunk)
        self.assertEqual(h.hexdigest(), pattern_sha256(GB))
        growth = self.growth()
        self.assertLess(growth, LIMIT_KIB, f"RSS grew {growth} KiB")

    def test_1gb_upload(self):
        # Echo would send the gigabyte back; count it on the way back instead of storing it.
        block = bytes(range(256)) * 4096  # 1 MiB
        with socket.create_connection(("127.0.0.1", self.proxy.port)) as s:
            s.sendall(f"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: {GB}\r\n\r\n".encode())
            received = [0]

            def reader():
                f = s.makefile("rb")
                f.readline()
                while f.readline() not in (b"\r\n", b""):
                    pass
                while received[0] < GB:
                    chunk = f.read1(1 << 20)
                    if not chunk:
                        break
                    received[0] += len(chunk)

            t = threading.Thread(target=reader)
            t.start()
            for _ in range(GB // len(block)):
                s.sendall(block)
            t.join(timeout=120)
        self.assertEqual(received[0], GB)
        growth = self.growth()
        self.assertLess(growth, LIMIT_KIB, f"RSS grew {growth} KiB")


if __name__ == "__main__":
    unittest.main()
