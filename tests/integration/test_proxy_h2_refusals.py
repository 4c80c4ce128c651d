"""HTTP/2 requests the proxy cannot pass on faithfully are refused, never passed on changed
(issue 9, defect 8): a :path an HTTP/1 request line may not carry (a fragment, raw bytes >= 0x80)
is answered 400 without reaching the upstream, as the HTTP/1 side does; request trailers over the
header limit reset the stream instead of being dropped; invalid fields (CR, LF, NUL, controls,
surrounding whitespace, bad names) reset it with PROTOCOL_ERROR."""
import unittest

import harness
from fake_origins import Http1Origin
from proxy_harness import Proxy
from test_proxy_headers import H2Client, base_headers


class H2Refusals(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.origin = Http1Origin()
        try:
            cls.proxy = Proxy([cls.origin.endpoint], workers=1,
                              server_options={"max_header_bytes": 4096})
        except BaseException:
            cls.origin.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.origin.stop()

    def client(self):
        c = H2Client(self.proxy.port)
        self.addCleanup(c.close)
        return c

    def test_path_the_http1_side_refuses_is_400_and_never_forwarded(self):
        for path in ("/pay#frag", "/caf\xe9", "/a\x80b"):
            with self.subTest(path=path):
                c = self.client()
                headers = base_headers(self.proxy.port, path)
                sid = c.request(headers)
                status, _, reset = c.collect([sid])[sid]
                self.assertEqual((status, reset), (400, None))
        self.assertEqual([a for a in self.origin.applied if a[1].startswith(("/pay", "/caf",
                                                                              "/a"))], [])
        c = self.client()
        sid = c.request(base_headers(self.proxy.port, "/fine?q=%23"))
        self.assertEqual(c.collect([sid])[sid][0], 200)

    def test_request_trailers_over_the_limit_reset_the_stream(self):
        def post_with_trailer(path, checksum):
            c = self.client()
            sid = c.conn.get_next_available_stream_id()
            h = base_headers(self.proxy.port, path)
            h[0] = (":method", "POST")
            c.conn.send_headers(sid, h + [("te", "trailers")])
            c.conn.send_data(sid, b"body")
            c.conn.send_headers(sid, [("x-checksum", checksum)], end_stream=True)
            c.flush()
            return c.collect([sid])[sid]

        status, _, reset = post_with_trailer("/trailers-over", "c" * 6000)
        self.assertIsNotNone(reset, status)
        # Within the limit they pass.
        status, _, reset = post_with_trailer("/trailers", "c" * 100)
        self.assertEqual((status, reset), (200, None))
        # The origin takes a request once its body has ended, and answers it after: the one
        # within the limit was taken whole; the one whose trailers were refused never was
        # (passed on without them, it would have been taken well before the later one was
        # answered).
        self.assertEqual([a for a in self.origin.applied if a[1].startswith("/trailers")],
                         [("POST", "/trailers", "", 4)])

    def test_invalid_fields_reset_the_stream(self):
        bad = {"lead-ws": ("x-a", " v"), "trail-ws": ("x-a", "v "), "name-space": ("x a", "1"),
               "name-ctl": ("x\x01a", "1"), "value-ctl": ("x-a", "a\x01b"),
               "value-del": ("x-a", "a\x7fb"), "cr": ("x-a", "a\rb"), "lf": ("x-a", "a\nb"),
               "nul": ("x-a", "a\x00b"), "empty-name": ("", "1")}
        for name, field in bad.items():
            with self.subTest(name):
                c = self.client()
                sid = c.request(base_headers(self.proxy.port, f"/bad-{name}") + [field])
                status, _, reset = c.collect([sid])[sid]
                self.assertEqual((status, reset), (None, 1))  # PROTOCOL_ERROR
        self.assertEqual([a for a in self.origin.applied if a[1].startswith("/bad-")], [])


if __name__ == "__main__":
    unittest.main()
