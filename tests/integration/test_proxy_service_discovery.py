"""Service discovery: an endpoint given by name is every address the name resolves to, one
pool each, re-resolved when the answer's TTL runs out, as a Kubernetes headless Service
needs. Against a DNS server on loopback whose answers the test changes ([server] resolvers):
scale up (every new address gets requests), scale down (a removed address gets no new
request, and the request under way on it finishes), and names mixed with addresses."""
import threading
import unittest

import harness
from fake_dns import FakeDns
from harness import wait_until
from named_origin import NamedOrigin
from proxy_harness import Proxy, toml_string


class ServiceDiscovery(unittest.TestCase):
    def setUp(self):
        self.port = harness.free_port()
        self.origins = {}
        for i in range(1, 5):
            a = f"127.0.0.{i}"
            self.origins[a] = NamedOrigin(a, host=a, port=self.port)
            self.addCleanup(self.origins[a].stop)
        self.dns = FakeDns(ttl=1)
        self.addCleanup(self.dns.stop)

    def proxy(self, endpoints, cluster_options=None):
        p = Proxy(endpoints, workers=1, cluster_options=cluster_options,
                  server_options={"resolvers": f"[{toml_string(self.dns.address)}]"})
        self.addCleanup(p.stop)
        return p

    def seen(self, proxy, n=30):
        return {harness.http_get(proxy.port, "/x")[1].decode() for _ in range(n)}

    def test_scale_up_and_down(self):
        self.dns.set("app.test", ["127.0.0.1"])
        p = self.proxy([f"app.test:{self.port}"])
        self.assertEqual(self.seen(p), {"127.0.0.1"})
        self.dns.set("app.test", ["127.0.0.1", "127.0.0.2", "127.0.0.3"])
        wait_until(lambda: self.seen(p) == {"127.0.0.1", "127.0.0.2", "127.0.0.3"}, timeout=15,
                   what="every address in use")
        self.assertIn("now has 3 addresses", p.read_log())
        # Three slow requests, one per address (least outstanding first), under way while two
        # of the addresses go: those finish where they are, and nothing new goes there.
        slow = []
        threads = [threading.Thread(target=lambda: slow.append(harness.http_get(p.port, "/slow")))
                   for _ in range(3)]
        for t in threads:
            t.start()
        wait_until(lambda: p.metric("portico_upstream_connections", state="busy") == 3,
                   what="three requests upstream")
        self.dns.set("app.test", ["127.0.0.3"])
        wait_until(lambda: "(0 added, 2 removed)" in p.read_log(), timeout=15,
                   what="the removal")
        self.assertEqual(self.seen(p, 10), {"127.0.0.3"})
        for t in threads:
            t.join(timeout=10)
        self.assertEqual(sorted(slow), [(200, b"127.0.0.1"), (200, b"127.0.0.2"),
                                        (200, b"127.0.0.3")])
        # The removed addresses' pools are gone once their requests are: their connections too.
        wait_until(lambda: p.metric("portico_upstream_connections", state="idle") +
                   p.metric("portico_upstream_connections", state="busy") <= 1, timeout=10,
                   what="the removed pools closed")

    def test_names_and_addresses_mixed(self):
        self.dns.set("two.test", ["127.0.0.1", "127.0.0.2"])
        p = self.proxy([f"two.test:{self.port}", f"127.0.0.4:{self.port}"])
        wait_until(lambda: self.seen(p) == {"127.0.0.1", "127.0.0.2", "127.0.0.4"}, timeout=15,
                   what="both addresses of the name and the literal one")
        status = harness.http_get(p.admin_port, "/status")[1].decode()
        self.assertIn(f'"address":"two.test:{self.port}"', status)

    def test_every_address_of_a_name_has_its_weight(self):
        # A name of weight 3 with two addresses and a literal one of weight 1: 3:3:1. The
        # addresses an answer added used to get weight 1 (3:1:1).
        self.dns.set("heavy.test", ["127.0.0.1", "127.0.0.2"])
        p = self.proxy([(f"heavy.test:{self.port}", 3), f"127.0.0.4:{self.port}"],
                       cluster_options={"lb": '"round_robin"'})
        wait_until(lambda: len(self.seen(p)) == 3, timeout=15, what="every address in use")
        counts = {}
        for _ in range(70):
            who = harness.http_get(p.port, "/x")[1].decode()
            counts[who] = counts.get(who, 0) + 1
        self.assertEqual(counts, {"127.0.0.1": 30, "127.0.0.2": 30, "127.0.0.4": 10})


if __name__ == "__main__":
    unittest.main()
