"""Load balancing across a cluster's endpoints: least outstanding requests (the default) sends
more to the faster of three endpoints that answer at different speeds; smooth weighted round
robin gives 3:1:1 weights exactly their shares; random_two (two picked by weight, the less
loaded taken) follows the weights. Endpoints are `{ address, weight }` or plain strings."""
import collections
import threading
import unittest

import harness
from named_origin import NamedOrigin
from proxy_harness import Proxy, toml_string


class LoadBalancing(unittest.TestCase):
    def origins(self, delays):
        out = {}
        for name, delay in delays.items():
            out[name] = NamedOrigin(name, delay=delay)
            self.addCleanup(out[name].stop)
        return out

    def proxy(self, endpoints, lb):
        p = Proxy(["127.0.0.1:9"], workers=1, catch_all=False, routes_first="\n".join([
            "[[cluster]]", 'name = "lb"', f'lb = "{lb}"', "endpoints = [" + ", ".join(endpoints) +
            "]", "", "[[route]]", 'cluster = "lb"', ""]))
        self.addCleanup(p.stop)
        return p

    def sequential(self, proxy, n):
        return collections.Counter(harness.http_get(proxy.port, "/")[1].decode() for _ in range(n))

    def test_least_request_favours_the_fast_endpoint(self):
        o = self.origins({"fast": 0, "medium": 0.02, "slow": 0.1})
        p = self.proxy([toml_string(f"127.0.0.1:{x.port}") for x in o.values()], "least_request")
        counts = collections.Counter()
        lock = threading.Lock()

        def client():
            for _ in range(25):
                name = harness.http_get(p.port, "/")[1].decode()
                with lock:
                    counts[name] += 1
        threads = [threading.Thread(target=client) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        self.assertEqual(sum(counts.values()), 200)
        self.assertGreater(counts["fast"], 2 * counts["slow"], counts)
        self.assertGreater(counts["medium"], counts["slow"], counts)

    def test_weighted_round_robin_gives_exact_shares(self):
        o = self.origins({"a": 0, "b": 0, "c": 0})
        p = self.proxy([f'{{ address = "127.0.0.1:{o["a"].port}", weight = 3 }}',
                        toml_string(f"127.0.0.1:{o['b'].port}"),
                        f'{{ address = "127.0.0.1:{o["c"].port}", weight = 1 }}'], "round_robin")
        self.assertEqual(self.sequential(p, 100), {"a": 60, "b": 20, "c": 20})

    def test_random_two_follows_the_weights(self):
        o = self.origins({"light": 0, "heavy": 0})
        p = self.proxy([toml_string(f"127.0.0.1:{o['light'].port}"),
                        f'{{ address = "127.0.0.1:{o["heavy"].port}", weight = 9 }}'],
                       "random_two")
        counts = self.sequential(p, 200)
        self.assertGreater(counts["heavy"], 140, counts)
        self.assertGreater(counts["light"], 0, counts)


if __name__ == "__main__":
    unittest.main()
