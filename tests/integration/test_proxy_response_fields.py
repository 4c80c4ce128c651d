"""Response heads with many fields (issue 9, defect 5): real applications send 30 and more
(cookies, security headers). Every field is passed on, in order, over both upstream protocols and
to both client protocols, up to the response header budget ([[cluster]]
max_response_header_bytes); a head over it is a 502, on h2c as on HTTP/1.1."""
import unittest

import harness
from fake_origins import H2cOrigin, Http1Origin
from proxy_clients import curl
from proxy_harness import Proxy


class ResponseFields(unittest.TestCase):
    def setUp(self):
        harness.need("curl")

    def each(self, **cluster):
        for origin_cls, protocol in ((Http1Origin, "http1"), (H2cOrigin, "h2c")):
            origin = origin_cls()
            self.addCleanup(origin.stop)
            proxy = Proxy([origin.endpoint], workers=1,
                          cluster_options={"protocol": f'"{protocol}"', **cluster})
            self.addCleanup(proxy.stop)
            for mode in ("h1", "h2c"):
                yield proxy, mode, self.subTest(upstream=protocol, client=mode)

    def test_forty_fields_pass_in_order(self):
        for proxy, mode, cell in self.each():
            with cell:
                r = curl(proxy, mode, "/fields?n=40")
                self.assertEqual((r.status, r.body), (200, b"ok\n"), r)
                got = [(n, v) for n, v in r.headers if n.startswith("x-field-")]
                self.assertEqual(got, [(f"x-field-{i}", f"{i:08d}") for i in range(40)])

    def test_head_within_budget_passes_and_over_it_is_502(self):
        for proxy, mode, cell in self.each(max_response_header_bytes=8192):
            with cell:
                # About 100 fields of 60 bytes: 6 KiB.
                r = curl(proxy, mode, "/fields?n=100&size=40")
                self.assertEqual(r.status, 200, r)
                self.assertEqual(sum(n.startswith("x-field-") for n, _ in r.headers), 100)
                # 300 of them: 18 KiB, over the budget.
                r = curl(proxy, mode, "/fields?n=300&size=40")
                self.assertEqual(r.status, 502, r)
                self.assertEqual(curl(proxy, mode, "/fields?n=2").status, 200)


if __name__ == "__main__":
    unittest.main()
