"""Timers around a request body (issue 9, defect 6): response_timeout starts when the request
has been sent whole, so an upload longer than it is not a 504; while the body is on its way,
send_timeout bounds the time without progress instead, so a client that stops sending is cut.

Each timer is reported by its name (the error log's "send_timeout, answered 504", its own
portico_upstream_errors_total kind: both were reported as response_timeout before), and by
when it fires: send_timeout is set well apart from response_timeout, and a stalled upload's 504
must come at the former, not the latter.

The client's pauses between pieces are the upload's shape (slower than response_timeout in
total), not synchronisation."""
import socket
import subprocess
import time
import unittest

import harness
from fake_origins import H2cOrigin, Http1Origin
from proxy_harness import Proxy

PIECES = 10
PAUSE = 0.25  # 2.5 s of upload against a response_timeout of 1 s
PIECE = b"p" * 1000
RESPONSE_TIMEOUT = 1
SEND_TIMEOUT = 2.5  # far enough from RESPONSE_TIMEOUT for the time of a 504 to tell them apart
# The other way round: a send_timeout well below response_timeout must fire at its own time.
SHORT_SEND_TIMEOUT, LONG_RESPONSE_TIMEOUT = 1, 8


class UploadTimers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need("curl")
        # The fake origins answer only once the whole body is in, as most applications do
        # (portico-backend's /echo streams its answer, which would keep the timer fed).
        cls.backend = harness.Backend(workers=2, unix=True)
        cls.origins = [Http1Origin(), H2cOrigin()]
        cls.proxies = {}
        cls.delay_proxies = {}
        cls.short_send_proxies = {}
        try:
            for protocol, origin in zip(("http1", "h2c"), cls.origins):
                cls.proxies[protocol] = Proxy(
                    [origin.endpoint], workers=1,
                    cluster_options={"protocol": f'"{protocol}"',
                                     "response_timeout": RESPONSE_TIMEOUT,
                                     "send_timeout": SEND_TIMEOUT})
                cls.short_send_proxies[protocol] = Proxy(
                    [origin.endpoint], workers=1,
                    cluster_options={"protocol": f'"{protocol}"',
                                     "response_timeout": LONG_RESPONSE_TIMEOUT,
                                     "send_timeout": SHORT_SEND_TIMEOUT})
                cls.delay_proxies[protocol] = Proxy(
                    [f"unix:{cls.backend.sock_path}"], workers=1,
                    cluster_options={"protocol": f'"{protocol}"', "response_timeout": 1})
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for p in [*cls.proxies.values(), *cls.delay_proxies.values(),
                  *cls.short_send_proxies.values()]:
            p.stop()
        for o in cls.origins:
            o.stop()
        cls.backend.stop()

    def slow_h1_upload(self, proxy, pieces, finish=True):
        """(response, seconds from the last byte the client sent to the response read)."""
        with harness.connection(proxy.port, timeout=15) as (s, f):
            s.sendall(b"POST /upload HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n")
            for i in range(pieces):
                s.sendall(b"%x\r\n%s\r\n" % (len(PIECE), PIECE))
                last_sent = time.monotonic()
                if finish or i + 1 < pieces:
                    time.sleep(PAUSE)
            if finish:
                s.sendall(b"0\r\n\r\n")
                last_sent = time.monotonic()
            r = harness.read_http1_response(f)
            return r, time.monotonic() - last_sent

    def slow_h2c_upload(self, proxy):
        p = subprocess.Popen(["curl", "-sS", "--http2-prior-knowledge", "-X", "POST", "-T", "-",
                              "-o", "-", "-w", "\n%{http_code}", f"{proxy.url}/upload"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            for _ in range(PIECES):
                p.stdin.write(PIECE)
                p.stdin.flush()
                time.sleep(PAUSE)
            p.stdin.close()
        except BrokenPipeError:
            pass  # curl is done: the answer came early (a 504, on a build with the defect)
        out = p.stdout.read()
        p.wait(timeout=30)
        p.stdout.close()
        body, _, status = out.rpartition(b"\n")
        return int(status), body

    def test_upload_longer_than_response_timeout(self):
        for protocol, proxy in self.proxies.items():
            with self.subTest(upstream=protocol, client="h1"):
                r, _ = self.slow_h1_upload(proxy, PIECES)
                self.assertEqual((r.status, r.body), (200, b"ok\n"), r)
            with self.subTest(upstream=protocol, client="h2c"):
                status, body = self.slow_h2c_upload(proxy)
                self.assertEqual((status, body), (200, b"ok\n"))

    def test_stalled_upload_is_cut_by_send_timeout(self):
        for protocol, proxy in self.proxies.items():
            with self.subTest(upstream=protocol):
                errors = proxy.metric("portico_upstream_errors_total", cluster="app",
                                      kind="send_timeout")
                r, waited = self.slow_h1_upload(proxy, 1, finish=False)
                self.assertEqual(r.status, 504, r)
                # The upstream side's timer cut it: counted and logged as a 504 for /upload.
                harness.wait_until(
                    lambda: proxy.metric("portico_upstream_errors_total", cluster="app",
                                         kind="send_timeout") == errors + 1,
                    what="the upstream timeout counted")
                harness.wait_until(
                    lambda: any('cluster app: send_timeout, answered 504; ' in line and
                                'request: "POST /upload HTTP/1.1"' in line
                                for line in proxy.read_log().splitlines()),
                    what="the failure logged")
                # The last piece went at the start of `waited`: send_timeout runs from there (it
                # cannot fire sooner); response_timeout, were it running during the upload, would
                # have fired RESPONSE_TIMEOUT after it (or after the head, sent just before).
                self.assertGreater(waited, SEND_TIMEOUT - 0.2)
                self.assertLess(waited, SEND_TIMEOUT + 4)

    def test_a_send_timeout_shorter_than_response_timeout_fires_at_its_own_time(self):
        for protocol, proxy in self.short_send_proxies.items():
            with self.subTest(upstream=protocol):
                r, waited = self.slow_h1_upload(proxy, 1, finish=False)
                self.assertEqual(r.status, 504, r)
                self.assertGreater(waited, SHORT_SEND_TIMEOUT - 0.2)
                self.assertLess(waited, LONG_RESPONSE_TIMEOUT - 3,
                                "cut by the response timer's first firing, not send_timeout")

    def test_response_timeout_still_runs_after_the_upload(self):
        for protocol, proxy in self.delay_proxies.items():
            with self.subTest(upstream=protocol):
                status = harness.exchange_raw(
                    proxy.port, b"POST /delay?ms=3000 HTTP/1.1\r\nHost: app\r\n"
                    b"Content-Length: 2\r\n\r\nhi", timeout=15, wait_close=False)[0][0].status
                self.assertEqual(status, 504)


if __name__ == "__main__":
    unittest.main()
