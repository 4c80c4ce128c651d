"""Consistent hashing and sticky sessions (issue 27, item 6). lb = "ring_hash" or "maglev" sends
each key (hash_on: a header, a cookie, the client, the path, a query parameter) to one
endpoint, the same from every worker; when an endpoint goes down only its keys move, and they
come back with it. A key that is absent goes to an endpoint drawn by weight; a huge one is
hashed like any other. sticky = { cookie } ties a client to the endpoint its first response
named, and falls back when that endpoint is down."""
import http.client
import unittest

import harness
from proxy_harness import Proxy
from scripted_origin import ScriptedOrigin


def get(port, headers=None, path="/"):
    """(origin name, Set-Cookie) of a GET on a fresh connection (so any worker may take it)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers=headers or {})
        r = conn.getresponse()
        body = r.read()
        if r.status != 200:
            return f"status {r.status}", r.getheader("set-cookie")
        return body.split()[0].decode(), r.getheader("set-cookie")
    finally:
        conn.close()


class ConsistentHash(unittest.TestCase):
    def start(self, n, cluster, workers=2):
        self.origins = []
        for i in range(n):
            o = ScriptedOrigin(f"o{i}", lambda _: 200)
            self.addCleanup(lambda o=o: o.stop())
            self.origins.append(o)
        options = {"fail_timeout": 1}
        options.update(cluster)
        self.proxy = Proxy([o.endpoint for o in self.origins], workers=workers,
                           cluster_options=options)
        self.addCleanup(self.proxy.stop)

    def where(self, keys):
        return {k: get(self.proxy.port, {"x-user": k})[0] for k in keys}

    def down_and_back(self, lb):
        self.start(10, {"lb": f'"{lb}"', "hash_on": '"header:x-user"'})
        keys = [f"user-{i}" for i in range(500)]
        before = self.where(keys)
        self.assertEqual(self.where(keys), before)  # again, from whichever worker: the same
        self.assertEqual(len(set(before.values())), 10)
        gone = self.origins[3]
        port = int(gone.endpoint.rsplit(":", 1)[1])
        gone.stop()
        during = self.where(keys)
        moved = [k for k in keys if during[k] != before[k]]
        own = [k for k in keys if before[k] == "o3"]
        self.assertEqual(sorted(moved), sorted(own))  # only the down endpoint's keys moved
        self.assertNotIn("o3", during.values())
        self.assertFalse([k for k in keys if during[k].startswith("status")])
        back = ScriptedOrigin("o3", lambda _: 200, port=port)
        self.addCleanup(back.stop)
        # Past fail_timeout each worker tries it again: its keys come home.
        harness.wait_until(lambda: self.where(own) == {k: "o3" for k in own}, timeout=15,
                           what="the returned endpoint's keys back on it")
        self.assertEqual(self.where(keys), before)
        print(f"\n{lb}: 500 keys over 10 endpoints, one down moved {len(moved)} "
              f"({len(moved) / 5:.1f}%), none of the others'; all back when it returned")

    def test_ring_hash_moves_only_a_down_endpoints_keys_and_brings_them_back(self):
        self.down_and_back("ring_hash")

    def test_maglev_moves_only_a_down_endpoints_keys_and_brings_them_back(self):
        self.down_and_back("maglev")

    def test_weights_are_honoured(self):
        origins = [ScriptedOrigin(f"o{i}", lambda _: 200) for i in range(2)]
        for o in origins:
            self.addCleanup(o.stop)
        self.proxy = Proxy([(origins[0].endpoint, 1), (origins[1].endpoint, 3)], workers=2,
                           cluster_options={"lb": '"maglev"', "hash_on": '"query:id"'})
        self.addCleanup(self.proxy.stop)
        where = [get(self.proxy.port, path=f"/x?id={i}")[0] for i in range(400)]
        heavy = where.count("o1")
        self.assertEqual(heavy + where.count("o0"), 400)
        self.assertGreater(heavy, 400 * 3 / 4 - 40)
        self.assertLess(heavy, 400 * 3 / 4 + 40)

    def test_an_absent_key_is_spread_and_a_huge_one_is_hashed(self):
        self.start(3, {"lb": '"ring_hash"', "hash_on": '["header:x-user", "cookie:sid"]'})
        absent = {get(self.proxy.port)[0] for _ in range(60)}
        self.assertGreater(len(absent), 1)  # drawn by weight, not all on one endpoint
        self.assertFalse([w for w in absent if w.startswith("status")])
        huge = {"x-user": "u" * 7000, "cookie": "sid=" + "s" * 1000}
        self.assertEqual(len({get(self.proxy.port, huge)[0] for _ in range(10)}), 1)

    def test_every_endpoint_down_fails_open_and_recovers(self):
        self.start(2, {"lb": '"ring_hash"', "hash_on": '"header:x-user"'}, workers=1)
        ports = [int(o.endpoint.rsplit(":", 1)[1]) for o in self.origins]
        for o in self.origins:
            o.stop()
        self.assertEqual(get(self.proxy.port, {"x-user": "a"})[0], "status 502")
        back = ScriptedOrigin("o1", lambda _: 200, port=ports[1])
        self.addCleanup(back.stop)
        # Both are held down: the pick falls back to them all rather than refusing.
        harness.wait_until(lambda: get(self.proxy.port, {"x-user": "a"})[0] == "o1",
                           timeout=10, what="the endpoint that came back answering")


class Sticky(unittest.TestCase):
    def setUp(self):
        self.origins = []
        for i in range(3):
            o = ScriptedOrigin(f"o{i}", lambda _: 200)
            self.addCleanup(lambda o=o: o.stop())
            self.origins.append(o)
        self.proxy = Proxy([o.endpoint for o in self.origins], workers=2, cluster_options={
            "sticky": '{ cookie = "srv", max_age = 60 }', "fail_timeout": 5})
        self.addCleanup(self.proxy.stop)

    def test_a_client_stays_with_the_endpoint_its_cookie_names(self):
        first, cookie = get(self.proxy.port)
        self.assertRegex(cookie, r"^srv=[0-9a-f]{16}; Path=/; Max-Age=60; HttpOnly$")
        value = cookie.split(";")[0]
        for _ in range(30):
            self.assertEqual(get(self.proxy.port, {"cookie": f"a=1; {value}"}),
                             (first, None))  # the same one, and no new cookie

    def test_clients_are_balanced_and_each_gets_its_endpoints_cookie(self):
        cookies = {}
        for _ in range(30):
            where, cookie = get(self.proxy.port)
            cookies.setdefault(where, set()).add(cookie)
        self.assertEqual(len(cookies), 3)  # balanced as usual without a cookie
        for where, seen in cookies.items():
            self.assertEqual(len(seen), 1, where)  # one id per endpoint, from either worker

    def test_a_cookie_naming_a_down_endpoint_falls_back_and_is_replaced(self):
        first, cookie = get(self.proxy.port)
        value = cookie.split(";")[0]
        self.origins[int(first[1:])].stop()
        for _ in range(6):
            where, new = get(self.proxy.port, {"cookie": value})
            self.assertNotEqual(where, first)
            self.assertFalse(where.startswith("status"), where)
            self.assertIsNotNone(new)
            self.assertNotEqual(new.split(";")[0], value)

    def test_an_unknown_cookie_value_is_balanced_and_replaced(self):
        where, cookie = get(self.proxy.port, {"cookie": "srv=nonsense"})
        self.assertFalse(where.startswith("status"))
        self.assertTrue(cookie.startswith("srv="))


if __name__ == "__main__":
    unittest.main()
