"""A client that sends its request and then shuts down its sending side still gets the whole
response, for a response that is still upstream when the EOF arrives (the proxy then holds no
input buffer: this once crashed it), and the proxy stays up for the next client. Also an
HTTP/1.0 request without Host, with either upstream protocol."""
import socket
import unittest

import harness
from proxy_harness import Proxy


class HalfClose(unittest.TestCase):
    def setUp(self):
        self.backend = harness.Backend(workers=1, unix=True)
        self.addCleanup(self.backend.stop)

    def check(self, cluster_options):
        proxy = Proxy([f"unix:{self.backend.sock_path}"], workers=1,
                      cluster_options=cluster_options)
        self.addCleanup(proxy.stop)
        for path in ("/delay?ms=100", "/hello"):
            with self.subTest(path=path):
                s = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
                s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                s.shutdown(socket.SHUT_WR)
                r = harness.read_http1_response(s.makefile("rb"))
                s.close()
                self.assertEqual(r.status, 200, r)
        # HTTP/1.0 without Host: an empty authority on the way upstream (UBSan once caught it).
        s = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        s.sendall(b"GET /hello HTTP/1.0\r\n\r\n")
        self.assertEqual(harness.read_http1_response(s.makefile("rb")).status, 200)
        s.close()
        self.assertTrue(harness.pid_alive(proxy.pid))
        s = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        s.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        self.assertEqual(harness.read_http1_response(s.makefile("rb")).body, b"hello world\n")
        s.close()

    def test_http1_upstream(self):
        self.check({})

    def test_h2c_upstream(self):
        self.check({"protocol": '"h2c"'})


if __name__ == "__main__":
    unittest.main()
