"""Forwarding fields cannot be spoofed (issue 9, defect 7): X-Forwarded-Proto and Forwarded's
proto= say whether the client's connection was TLS, whatever the request claims (an absolute-form
https:// target or :scheme https in cleartext); a client's own X-Forwarded-For, X-Forwarded-Proto
and Forwarded are kept (and appended to) only from [server] trusted_proxies, replaced otherwise.
And response fields the upstream's Connection header names do not reach the client."""
import unittest

import harness
from fake_origins import Http1Origin
from proxy_clients import curl
from proxy_harness import Proxy
from test_proxy_headers import H2Client, seen

SPOOF = (b"X-Forwarded-For: 6.6.6.6\r\nX-Forwarded-Proto: https\r\n"
         b"Forwarded: for=6.6.6.6;proto=https\r\n")


class Forwarded(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.backend = harness.Backend(workers=1, unix=True)
        cls.proxies = {}
        try:
            cls.proxies["edge"] = Proxy([f"unix:{cls.backend.sock_path}"], tls=True)
            cls.proxies["behind"] = Proxy([f"unix:{cls.backend.sock_path}"], tls=True,
                                          server_options={"trusted_proxies":
                                                          '["10.0.0.0/8", "127.0.0.0/8"]'})
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for p in cls.proxies.values():
            p.stop()
        cls.backend.stop()

    def h1_absolute_https(self, proxy):
        req = (b"GET https://example.test/headers HTTP/1.1\r\nHost: example.test\r\n" + SPOOF +
               b"\r\n")
        r = harness.exchange_raw(proxy.port, req, wait_close=False)[0][0]
        self.assertEqual(r.status, 200, r)
        return seen(r.body)[1]

    def test_cleartext_cannot_claim_https_nor_another_address(self):
        f = self.h1_absolute_https(self.proxies["edge"])
        self.assertEqual(f["x-forwarded-proto"], ["http"])
        self.assertEqual(f["x-forwarded-for"], ["127.0.0.1"])
        self.assertEqual(f["forwarded"], ['for=127.0.0.1;proto=http;host="example.test"'])

    def test_h2c_scheme_https_is_still_http(self):
        proxy = self.proxies["edge"]
        c = H2Client(proxy.port)
        self.addCleanup(c.close)
        sid = c.request([(":method", "GET"), (":scheme", "https"),
                         (":authority", "example.test"), (":path", "/headers"),
                         ("x-forwarded-proto", "https"), ("forwarded", "proto=https")])
        status, body, reset = c.collect([sid])[sid]
        self.assertEqual((status, reset), (200, None))
        f = seen(body)[1]
        self.assertEqual(f["x-forwarded-proto"], ["http"])
        self.assertEqual(f["forwarded"], ['for=127.0.0.1;proto=http;host="example.test"'])

    def test_tls_is_https(self):
        r = curl(self.proxies["edge"], "h2-tls", "/headers", ["-H", "X-Forwarded-Proto: http"])
        f = seen(r.body)[1]
        self.assertEqual(f["x-forwarded-proto"], ["https"])
        self.assertIn(";proto=https;", f["forwarded"][0])

    def test_trusted_proxy_fields_are_kept_and_appended_to(self):
        f = self.h1_absolute_https(self.proxies["behind"])
        self.assertEqual(f["x-forwarded-for"], ["6.6.6.6, 127.0.0.1"])
        self.assertEqual(f["x-forwarded-proto"], ["https"])
        self.assertEqual(f["forwarded"],
                         ['for=6.6.6.6;proto=https, for=127.0.0.1;proto=http;host="example.test"'])

    def test_bad_trusted_proxies_entry_is_a_config_error(self):
        with self.assertRaises(AssertionError) as e:
            Proxy([f"unix:{self.backend.sock_path}"],
                  server_options={"trusted_proxies": '["10.0.0.0/8", "10.0.0.0/40"]'})
        self.assertRegex(str(e.exception),
                         r"portico\.toml:\d+:\d+: \[server\]: trusted_proxies entry "
                         r"'10.0.0.0/40'")

    def test_response_fields_named_in_connection_are_dropped(self):
        origin = Http1Origin()
        self.addCleanup(origin.stop)
        proxy = Proxy([origin.endpoint], workers=1)
        self.addCleanup(proxy.stop)
        for mode in ("h1", "h2c"):
            with self.subTest(client=mode):
                r = curl(proxy, mode, "/hop-fields")
                self.assertEqual(r.status, 200, r)
                self.assertEqual(r.header("x-kept"), "yes")
                self.assertIsNone(r.header("x-hop"))


if __name__ == "__main__":
    unittest.main()
