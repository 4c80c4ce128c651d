"""A route's `cache` (RFC 9111): hits, what is never stored or reused (a response that sets
a cookie, unless the route stores them; a cookie a 304 sets), revalidation with a 304, the client's own conditions and ranges answered from the store, Vary (bounded variants,
Vary: *, thousands of Vary fields), invalidation by unsafe methods, keys that unkeyed fields
cannot poison, absurd Age and max-age, an upstream that lies about Content-Length, request
collapsing (a miss storm reaches the origin once; waiters stream the fetch as it arrives; a
fetch that takes too long or is not storable lets them go), stale-if-error, HTTP/2, and the
metrics."""
import gzip
import h2.config
import h2.connection
import h2.events
import http.client
import json
import socket
import subprocess
import threading
import unittest
import urllib.parse

import os
import tempfile

import harness
from cache_origin import CacheOrigin
from proxy_harness import Proxy, toml_string

http.client._MAXHEADERS = 5000  # an origin's 2000 Vary fields pass to the client

ROUTES = """
[[route]]
path_prefix = "/short/"
cluster = "app"
cache = { lock_timeout = 0.3, pass_for = 0 }

[[route]]
path_prefix = "/few/"
cluster = "app"
cache = { max_variants = 4, max_object = 1000, stale_if_error = 60 }

[[route]]
path_prefix = "/squeezed/"
cluster = "app"
cache = true
compress = { encodings = ["gzip", "br"], min_length = 10 }

[[route]]
path_prefix = "/keyed/"
cluster = "app"
cache = { key_fields = ["x-forwarded-host"] }

[[route]]
path_prefix = "/rewritten/"
cluster = "app"
prefix_rewrite = "/"
cache = true

[[route]]
path_prefix = "/timed/"
cluster = "app"
timeout = 1
cache = true

[[route]]
path_prefix = "/cookies-too/"
cluster = "app"
cache = { set_cookie = "store" }

[[route]]
path_prefix = "/"
cluster = "app"
cache = true
"""


def q(path, **params):
    return path + "?" + urllib.parse.urlencode(params) if params else path


def storm(test, path, n):
    """One request for path that the origin holds at its gate, then n more while it waits:
    every answer, once the n are waiting (on that fetch) and the gate has opened."""
    results = []

    def fetch():
        status, fields, body = request(test.proxy.port, path)
        results.append((status, fields, body))

    first = threading.Thread(target=fetch)
    first.start()
    test.origin.wait_requests(path, 1)
    others = [threading.Thread(target=fetch) for _ in range(n)]
    for t in others:
        t.start()
    harness.wait_until(lambda: test.proxy.metric("portico_cache_waiting") == n,
                       what=f"{n} misses waiting on one fetch")
    test.origin.open_gate()
    for t in [first] + others:
        t.join(30)
    return results


def bare_h2_get(port, path):
    """A GET over h2c with the pseudo-header fields only, no other field at all: its status
    and body."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        conn.initiate_connection()
        conn.send_headers(1, [(":method", "GET"), (":scheme", "http"),
                              (":authority", f"127.0.0.1:{port}"), (":path", path)],
                          end_stream=True)
        sock.sendall(conn.data_to_send())
        status, body = None, b""
        while True:
            data = sock.recv(65536)
            assert data, "the connection closed before the response ended"
            for e in conn.receive_data(data):
                if isinstance(e, h2.events.ResponseReceived):
                    status = int(dict(e.headers)[b":status"])
                elif isinstance(e, h2.events.DataReceived):
                    body += e.data
                    conn.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
                elif isinstance(e, h2.events.StreamEnded):
                    return status, body
            sock.sendall(conn.data_to_send())


class H2Fetch:
    """A GET over h2c that the client abandons part way (RST_STREAM, which the proxy reads at
    once, where an HTTP/1.1 client's going is seen only at the next write)."""

    def __init__(self, port, path):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.conn.initiate_connection()
        self.conn.send_headers(1, [(":method", "GET"), (":scheme", "http"),
                                   (":authority", f"127.0.0.1:{port}"), (":path", path)],
                               end_stream=True)
        self.sock.sendall(self.conn.data_to_send())

    def read(self, n):
        """The first n bytes of the body (within the first flow-control window)."""
        body = b""
        while len(body) < n:
            data = self.sock.recv(65536)
            assert data, "the proxy closed the connection"
            for e in self.conn.receive_data(data):
                if isinstance(e, h2.events.DataReceived):
                    body += e.data
        return body

    def leave(self):
        self.conn.reset_stream(1)
        self.sock.sendall(self.conn.data_to_send())

    def close(self):
        self.sock.close()


def request(port, path, headers=None, method="GET", body=None):
    """One request on a new connection: (status, fields with lower-case names, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


class Cache(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need("curl")
        cls.origin = CacheOrigin()
        cls.tmp = tempfile.mkdtemp(prefix="portico-cache-test-")
        cls.access_log = os.path.join(cls.tmp, "access.log")
        cls.proxy = Proxy([cls.origin.endpoint], workers=1, routes_first=ROUTES,
                          catch_all=False,
                          listener_options={"access_log": toml_string(cls.access_log),
                                            "access_log_format": '"$path $cache_status"'})

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.origin.stop()
        for name in os.listdir(cls.tmp):
            os.unlink(os.path.join(cls.tmp, name))
        os.rmdir(cls.tmp)

    def setUp(self):
        self.origin.close_gate()

    def get(self, path, headers=None, method="GET", body=None):
        return request(self.proxy.port, path, headers, method, body)

    def served(self, path):
        return len(self.origin.requests_for(path))

    def logged(self, path):
        """The access log's lines for path so far, as one string."""
        with open(self.access_log) as f:
            return "".join(line for line in f if line.startswith(path + " "))

    def test_a_fresh_response_is_answered_from_the_store(self):
        path = q("/fresh", cc="max-age=60")
        status, fields, body = self.get(path)
        self.assertEqual(status, 200)
        self.assertIn("stored", fields["cache-status"])
        status, fields, again = self.get(path)
        self.assertEqual((status, again), (200, body))
        self.assertEqual(fields["cache-status"], "Portico; hit")
        self.assertIn("age", fields)
        self.assertEqual(self.served(path), 1)
        status, fields, head_body = self.get(path, method="HEAD")  # HEAD from the stored GET
        self.assertEqual((status, head_body, fields["content-length"]), (200, b"", str(len(body))))
        self.assertEqual(self.served(path), 1)

    def test_what_must_not_be_stored_or_reused_goes_upstream_each_time(self):
        for path, headers in ((q("/ns", cc="no-store, max-age=60"), {}),
                              (q("/pv", cc="private, max-age=60"), {}),
                              (q("/auth", cc="max-age=60"), {"Authorization": "Basic YTpi"}),
                              (q("/nocc"), {}),
                              (q("/vstar", cc="max-age=60", vary="*"), {}),
                              (q("/vmany", cc="max-age=60", vary_many=2000), {}),
                              (q("/req-ns", cc="max-age=60"), {"Cache-Control": "no-store"})):
            for n in (1, 2):
                status, _, body = self.get(path, headers)
                self.assertEqual(status, 200, path)
                self.assertTrue(body.startswith(b"response "), path)
            self.assertEqual(self.served(path), 2, path)
        # Authorization with public: a shared cache may reuse it (RFC 9111 3.5)
        path = q("/auth-public", cc="public, max-age=60")
        for n in (1, 2):
            self.get(path, {"Authorization": "Basic YTpi"})
        self.assertEqual(self.served(path), 1)

    def test_a_response_that_sets_a_cookie_is_not_stored_unless_the_route_says_so(self):
        # One client's session cookie, stored, would be every next client's (nginx and Varnish
        # do not store such a response either).
        path = q("/session", cc="max-age=60", cookie="sid")
        cookies = []
        for n in (1, 2):
            status, fields, _ = self.get(path)
            self.assertEqual(status, 200)
            self.assertNotIn("hit", fields["cache-status"])
            cookies.append(fields.get("set-cookie"))
        self.assertEqual(self.served(path), 2)
        self.assertEqual(len(set(cookies)), 2, cookies)  # each its own, from the origin
        # A route may store them all the same (RFC 9111 allows it): the cookie is everyone's.
        path = q("/cookies-too/site", cc="max-age=60", cookie="theme")
        _, first, _ = self.get(path)
        status, fields, _ = self.get(path)
        self.assertEqual((status, fields["cache-status"]), (200, "Portico; hit"))
        self.assertEqual(fields["set-cookie"], first["set-cookie"])
        self.assertEqual(self.served(path), 1)

    def test_a_cookie_a_304_sets_is_the_revalidating_clients_alone(self):
        path = q("/reval-cookie", cc="max-age=0", etag='"c1"', cookie304="sid")
        _, fields, first = self.get(path)
        self.assertNotIn("set-cookie", fields)
        status, fields, body = self.get(path)  # revalidated: the 304 sets a cookie
        self.assertEqual((status, body), (200, first))
        self.assertEqual(fields["cache-status"], "Portico; fwd=stale; fwd-status=304")
        mine = fields.get("set-cookie", "")
        self.assertRegex(mine, r"^sid=\d+$")
        status, fields, body = self.get(path)  # the next is revalidated too, with its own
        self.assertEqual((status, body), (200, first))
        self.assertRegex(fields.get("set-cookie", ""), r"^sid=\d+$")
        self.assertNotEqual(fields["set-cookie"], mine)
        # Made fresh by a 304 that sets a cookie, the stored response answers without it.
        path = q("/fresh-cookie", cc="max-age=0", etag='"c2"', cc304="max-age=60",
                 cookie304="sid")
        self.get(path)
        _, fields, _ = self.get(path)
        self.assertRegex(fields.get("set-cookie", ""), r"^sid=\d+$")
        status, fields, body = self.get(path)
        self.assertEqual((status, fields["cache-status"]), (200, "Portico; hit"))
        self.assertNotIn("set-cookie", fields)
        self.assertIn("max-age=60", fields["cache-control"])
        self.assertEqual(self.served(path), 2)

    def test_a_stale_response_is_revalidated_and_refreshed_by_a_304(self):
        path = q("/reval", cc="max-age=0", etag='"v1"')
        _, _, first = self.get(path)
        status, fields, body = self.get(path)
        self.assertEqual((status, body), (200, first))  # the stored body, from a 304
        self.assertEqual(fields["cache-status"], "Portico; fwd=stale; fwd-status=304")
        sent = self.origin.requests_for(path)
        self.assertEqual(len(sent), 2)
        fields = {k.lower(): v for k, v in sent[1][2].items()}
        self.assertEqual(fields.get("if-none-match"), '"v1"')
        # the client's own condition is answered from what the 304 confirmed
        status, fields, body = self.get(path, {"If-None-Match": '"v1"'})
        self.assertEqual((status, body), (304, b""))
        self.assertEqual(fields["etag"], '"v1"')

    def test_a_request_with_no_fields_is_not_answered_with_the_caches_own_condition(self):
        # Revalidating, the proxy adds its validators to the request; the client's own fields
        # come back before the answer is made, even when it sent none at all.
        path = q("/bare", cc="max-age=0", etag='"b"')
        _, _, first = self.get(path)
        self.assertEqual(bare_h2_get(self.proxy.port, path), (200, first))

    def test_the_clients_conditions_and_ranges_are_answered_from_the_store(self):
        path = q("/cond", cc="max-age=60", etag='W/"x"', lm="Sun, 06 Nov 1994 08:49:37 GMT",
                 len=1000)
        _, _, full = self.get(path)
        status, _, body = self.get(path, {"If-None-Match": 'W/"x"'})
        self.assertEqual((status, body), (304, b""))
        status, _, _ = self.get(path, {"If-Modified-Since": "Sun, 06 Nov 1994 08:49:37 GMT"})
        self.assertEqual(status, 304)
        status, fields, body = self.get(path, {"Range": "bytes=10-19"})
        self.assertEqual((status, body), (206, full[10:20]))
        self.assertEqual(fields["content-range"], "bytes 10-19/1000")
        status, fields, _ = self.get(path, {"Range": "bytes=5000-"})
        self.assertEqual((status, fields["content-range"]), (416, "bytes */1000"))
        self.assertEqual(self.served(path), 1)
        status, _, _ = self.get(path, {"Cache-Control": "only-if-cached"})
        self.assertEqual(status, 200)
        status, fields, _ = self.get(q("/never-seen"), {"Cache-Control": "only-if-cached"})
        self.assertEqual(status, 504)
        self.assertEqual(self.served(q("/never-seen")), 0)

    def test_vary_keeps_bounded_variants_per_key(self):
        path = q("/few/vary", cc="max-age=60", vary="X-Lang", echo="X-Lang")
        for lang in ("en", "de", "en, fr"):
            status, _, body = self.get(path, {"X-Lang": lang})
            self.assertTrue(body.endswith(lang.encode()), body)
        _, _, body = self.get(path, {"X-Lang": "en,fr"})
        self.assertTrue(body.endswith(b"en, fr"), body)
        self.assertEqual(self.served(path), 3)  # "en, fr" and "en,fr" are one variant
        # an origin that varies on a field with a new value each time: four variants kept
        for i in range(50):
            self.get(path, {"X-Lang": f"lang-{i}"})
        self.assertEqual(self.served(path), 53)
        self.get(path, {"X-Lang": "lang-49"})
        self.assertEqual(self.served(path), 53)  # the newest stays
        self.get(path, {"X-Lang": "en"})
        self.assertEqual(self.served(path), 54)  # the oldest went

    def test_unsafe_methods_invalidate_the_url_and_the_locations_they_name(self):
        path, other = q("/inv", cc="max-age=60"), q("/inv-other", cc="max-age=60")
        self.get(path)
        self.get(other)
        self.get(path, method="POST", body=b"x")
        self.get(path)
        self.assertEqual(self.served(path), 3)
        location = f"http://127.0.0.1:{self.proxy.port}{other}"
        self.get(q("/inv-post", location=location), method="PUT", body=b"x")
        # Location is not a field the origin sends here: the URL alone went
        self.get(other)
        self.assertEqual(self.served(other), 1)

    def test_an_unsafe_method_invalidates_the_url_asked_for_however_it_was_rewritten(self):
        # The key is the client's URL; prefix_rewrite, after the cache, changes what goes
        # upstream. A POST's invalidation must erase the key its GET was stored under.
        client, upstream = q("/rewritten/inv-rw", cc="max-age=60"), q("/inv-rw", cc="max-age=60")
        self.get(client)
        self.get(client, method="POST", body=b"x")
        self.get(client)
        self.assertEqual(self.served(upstream), 3)

    def test_a_stored_answer_after_a_304_is_not_cut_by_the_route_timeout(self):
        # The route's deadline (1 s) is for the upstream's response, which the 304 ended; the
        # stored body the cache sends in its place takes a slow client nearly 3 s, as a hit would
        # (8 MB: more than the sockets between them hold).
        path = q("/timed/reval", cc="max-age=0", etag='"v1"', len=8_000_000)
        _, _, body = self.get(path)
        url = f"http://127.0.0.1:{self.proxy.port}{path}"
        out = subprocess.run(["curl", "-sS", "--http2-prior-knowledge", "--limit-rate", "3M",
                              "-D", "/dev/stderr", url], capture_output=True, timeout=60)
        self.assertEqual((out.returncode, len(out.stdout)), (0, len(body)), out.stderr[-300:])
        self.assertEqual(out.stdout, body)
        self.assertIn(b"fwd=stale; fwd-status=304", out.stderr)

    def test_unkeyed_fields_cannot_poison_the_key(self):
        path = q("/poison", cc="max-age=60", echo="X-Forwarded-Host")
        _, _, body = self.get(path, {"Host": "a.example"})
        self.assertTrue(body.endswith(b"-"))
        # another Host is another key; X-Forwarded-Host is not the host
        _, _, body = self.get(path, {"Host": "b.example", "X-Forwarded-Host": "a.example"})
        self.assertEqual(self.served(path), 2)
        self.assertTrue(body.endswith(b"a.example"))
        _, _, body = self.get(path, {"Host": "a.example", "X-Forwarded-Host": "evil"})
        self.assertTrue(body.endswith(b"-"))  # the stored one: the field is not in the key
        keyed = q("/keyed/x", cc="max-age=60", echo="X-Forwarded-Host")
        _, _, a = self.get(keyed, {"X-Forwarded-Host": "a"})
        _, _, b = self.get(keyed, {"X-Forwarded-Host": "b"})
        self.assertEqual((a[-1:], b[-1:], self.served(keyed)), (b"a", b"b", 2))

    def test_a_smuggled_request_cannot_poison_the_store(self):
        path = q("/smuggle", cc="max-age=60")
        (reply, *_), closed = harness.exchange_raw(
            self.proxy.port, f"GET {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n"
            "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /evil HTTP/1.1\r\n"
            "Host: x\r\n\r\n".encode())
        self.assertEqual(reply.status, 400)
        self.assertTrue(closed)
        self.assertEqual(self.served(path), 0)

    def test_absurd_freshness_and_age(self):
        huge = q("/huge", cc="max-age=99999999999999999999")
        self.get(huge)
        self.assertEqual(self.get(huge)[1]["cache-status"], "Portico; hit")
        for age in ("99999999999999999999", "-5", "1.5", "abc"):
            path = q("/aged", cc="max-age=60", age=age)
            self.get(path)
            self.get(path)
            self.assertEqual(self.served(path), 2, age)  # stale: not younger than it is

    def test_an_upstream_that_lies_about_content_length_is_not_stored(self):
        path = q("/lie", cc="max-age=60", cl=5000)
        with self.assertRaises((http.client.IncompleteRead, ConnectionError)):
            self.get(path)
        with self.assertRaises((http.client.IncompleteRead, ConnectionError)):
            self.get(path)
        self.assertEqual(self.served(path), 2)

    def test_a_miss_storm_reaches_the_origin_once(self):
        path = q("/storm", cc="max-age=60", gate=1, len=5000)
        results = storm(self, path, 100)
        self.assertEqual(len(results), 101)
        bodies = {r[2] for r in results}
        self.assertEqual(len(bodies), 1)
        self.assertEqual(len(bodies.pop()), 5000)
        self.assertEqual(self.served(path), 1)
        self.assertEqual(sum("collapsed" in r[1]["cache-status"] for r in results), 100)

    def test_a_clients_conditional_request_does_not_stop_collapsing(self):
        # The client's own 304 is no response others could use: it must not mark the key as
        # one whose misses go straight upstream (hit-for-miss).
        path = q("/cond-then-storm", cc="max-age=60", etag='"c"', gate=1)
        self.origin.open_gate()
        self.assertEqual(self.get(path, {"If-None-Match": '"c"'})[0], 304)
        self.origin.close_gate()
        results = storm(self, path, 5)
        self.assertEqual([r[0] for r in results], [200] * 6)
        self.assertEqual(self.served(path), 2)  # the conditional one, then one for the storm

    def test_waiters_read_the_fetch_as_it_arrives(self):
        path = q("/trickle", cc="max-age=60", trickle=1, len=100000)
        conns = [http.client.HTTPConnection("127.0.0.1", self.proxy.port, timeout=30)
                 for _ in range(3)]
        conns[0].request("GET", path)
        first = conns[0].getresponse()
        start = first.read(50000)
        for c in conns[1:]:
            c.request("GET", path)
            r = c.getresponse()  # the head and half the body, while the origin holds the rest
            self.assertEqual(r.read(50000), start)
            self.assertIn("collapsed", r.getheader("cache-status"))
            c.rest = r
        self.origin.open_gate()
        self.assertEqual(len(first.read()), 50000)
        for c in conns[1:]:
            self.assertEqual(len(c.rest.read()), 50000)
        for c in conns:
            c.close()
        self.assertEqual(self.served(path), 1)

    def test_a_fetch_whose_client_left_still_ends_for_its_waiters(self):
        """The client whose request fetches for the others goes away mid-body: the fetch goes
        on to its end, as nginx reads a cacheable response to its end, so the request waiting
        on it gets it whole, and it is stored."""
        path = q("/trickle-left", cc="max-age=60", trickle=1, len=100000)
        fetcher = H2Fetch(self.proxy.port, path)
        start = fetcher.read(50000)
        waiter = http.client.HTTPConnection("127.0.0.1", self.proxy.port, timeout=30)
        waiter.request("GET", path)
        shared = waiter.getresponse()
        self.assertIn("collapsed", shared.getheader("cache-status"))
        self.assertEqual(shared.read(50000), start)
        fetcher.leave()
        harness.wait_until(lambda: "fwd=uri-miss" in self.logged(path),
                           what="the fetching request's access log line")
        self.origin.open_gate()
        rest = shared.read()
        waiter.close()
        fetcher.close()
        self.assertEqual(len(rest), 50000)
        status, fields, body = self.get(path)
        self.assertEqual((status, fields["cache-status"], body), (200, "Portico; hit", start + rest))
        self.assertEqual(self.served(path), 1)

    def test_a_fetch_read_on_after_its_client_left_does_not_outlive_the_proxy(self):
        """The proxy stops while such a fetch still waits for its origin: it exits cleanly,
        the fetch ended with its worker (the ASan build fails on a leak or a use after free)."""
        with Proxy([self.origin.endpoint], workers=1, routes_first=ROUTES,
                   catch_all=False) as proxy:
            path = q("/trickle-stop", cc="max-age=60", trickle=1, len=100000)
            fetcher = H2Fetch(proxy.port, path)
            fetcher.read(50000)
            fetcher.leave()
            harness.wait_until(lambda: proxy.metric("portico_requests_total", protocol="h2c") == 1,
                               what="the fetching request counted")
            fetcher.close()
            self.assertEqual(proxy.stop(), 0)

    def test_a_slow_or_unstorable_fetch_lets_its_waiters_go(self):
        for path in (q("/short/slow", cc="max-age=60", gate=1),
                     q("/unstorable", cc="no-store", gate=1)):
            results = []
            threads = [threading.Thread(target=lambda: results.append(self.get(path)))
                       for _ in range(2)]
            threads[0].start()
            self.origin.wait_requests(path, 1)
            threads[1].start()
            if path.startswith("/short/"):
                self.origin.wait_requests(path, 2)  # lock_timeout 0.3 s: it went itself
            harness.wait_until(lambda: self.proxy.metric("portico_cache_waiting") == 0 and
                               len(self.origin.requests_for(path)) == 2 or
                               self.proxy.metric("portico_cache_waiting") == 1,
                               what="the second request waiting or gone")
            self.origin.open_gate()
            for t in threads:
                t.join(30)
            self.origin.close_gate()
            self.assertEqual([r[0] for r in results], [200, 200])
            self.assertEqual(self.served(path), 2, path)

    def test_stale_if_error_answers_when_the_origin_fails(self):
        path = q("/few/sie", cc="max-age=0")  # the route's stale_if_error: 60 s
        strict = q("/few/sie-strict", cc="max-age=0, must-revalidate")
        _, _, body = self.get(path)
        self.get(strict)
        self.origin.failing = True
        try:
            status, fields, again = self.get(path)
            self.assertEqual((status, again), (200, body))
            self.assertEqual(fields["cache-status"], "Portico; fwd=stale; detail=stale-if-error")
            self.assertEqual(self.get(strict)[0], 503)  # must-revalidate: never stale
        finally:
            self.origin.failing = False
        self.assertEqual(self.served(path), 2)

    def test_a_large_body_goes_from_the_store_by_sendfile_or_its_mapping(self):
        path = q("/large", cc="max-age=60", len=300000)
        _, _, body = self.get(path)
        before = self.proxy.metric("portico_sendfile_bytes_total")
        status, _, again = self.get(path)
        self.assertEqual((status, again), (200, body))
        # Counted once sendfile() has returned: the client may hold the bytes a moment before.
        harness.wait_until(
            lambda: self.proxy.metric("portico_sendfile_bytes_total") == before + 300000,
            what="the body counted as sent by sendfile")
        status, _, part = self.get(path, {"Range": "bytes=100000-199999"})
        self.assertEqual((status, part), (206, body[100000:200000]))
        url = f"http://127.0.0.1:{self.proxy.port}{path}"
        out = subprocess.run(["curl", "-sS", "--http2-prior-knowledge", url],
                             capture_output=True, timeout=30)
        self.assertEqual(out.stdout, body)  # HTTP/2: from the mapping
        self.assertEqual(self.served(path), 1)

    def test_stale_while_revalidate_answers_at_once_and_refreshes_behind(self):
        path = q("/swr", cc="max-age=0, stale-while-revalidate=60")
        _, _, first = self.get(path)
        status, fields, body = self.get(path)
        self.assertEqual((status, body), (200, first))  # stale, at once
        self.assertEqual(fields["cache-status"], "Portico; hit; detail=stale-while-revalidate")
        self.origin.wait_requests(path, 2)  # the proxy's own request, behind it
        sent = {k.lower(): v for k, v in self.origin.requests_for(path)[1][2].items()}
        self.assertEqual(sent.get("cache-control"), "max-age=0")
        harness.wait_until(lambda: self.get(path)[2] != first, what="the refreshed response")
        # with a validator, the background request is conditional and a 304 refreshes
        tagged = q("/swr-etag", cc="max-age=0, stale-while-revalidate=60", etag='"t"')
        _, _, first = self.get(tagged)
        self.assertEqual(self.get(tagged)[2], first)
        self.origin.wait_requests(tagged, 2)
        sent = {k.lower(): v for k, v in self.origin.requests_for(tagged)[1][2].items()}
        self.assertEqual(sent.get("if-none-match"), '"t"')
        # must-revalidate: never stale, even within stale-while-revalidate
        strict = q("/swr-strict", cc="max-age=0, stale-while-revalidate=60, must-revalidate")
        self.get(strict)
        self.assertNotIn("stale-while-revalidate", self.get(strict)[1]["cache-status"])

    def test_a_heads_200_freshens_the_stored_get(self):
        path = q("/head-update", cc="max-age=0", head_cc="max-age=60", get_only=1)
        _, _, body = self.get(path)
        status, fields, _ = self.get(path, method="HEAD")
        self.assertEqual((status, fields["x-get-only"]), (200, "1"))  # the stored field stays
        self.assertEqual(fields["cache-status"], "Portico; fwd=stale; fwd-status=200")
        status, fields, again = self.get(path)  # fresh now, for the HEAD's 60 s
        self.assertEqual((status, again, fields["cache-status"]), (200, body, "Portico; hit"))
        self.assertEqual(fields["cache-control"], "max-age=60")
        self.assertEqual(self.served(path), 2)

    def test_http2_clients_are_answered_from_the_store(self):
        path = q("/h2", cc="max-age=60")
        url = f"http://127.0.0.1:{self.proxy.port}{path}"
        outs = [subprocess.run(["curl", "-sS", "--http2-prior-knowledge", "-D", "-", url],
                               capture_output=True, timeout=30, text=True) for _ in range(2)]
        self.assertIn("cache-status: Portico; hit", outs[1].stdout)
        self.assertEqual(self.served(path), 1)

    def admin_post(self, path):
        status, _, body = request(self.proxy.admin_port, path, method="POST")
        return status, body

    def test_the_admin_purges_one_url_or_a_prefix(self):
        base = f"http://127.0.0.1:{self.proxy.port}"
        one, two, three = (q(p, cc="max-age=60") for p in ("/purge-a", "/purge-b/1",
                                                             "/purge-b/2"))
        for path in (one, two, three):
            self.get(path)
        status, body = self.admin_post("/cache/purge?url=" + urllib.parse.quote(base + one))
        self.assertEqual((status, body), (200, b'{"purged":1}\n'))
        status, body = self.admin_post("/cache/purge?prefix=1&url=" +
                                       urllib.parse.quote(base + "/purge-b/"))
        self.assertEqual((status, body), (200, b'{"purged":2}\n'))
        for path in (one, two, three):
            self.get(path)
            self.assertEqual(self.served(path), 2, path)
        self.assertEqual(self.admin_post("/cache/purge?url=/no-scheme")[0], 400)
        self.assertEqual(self.admin_post("/cache/purge?url=http%3A%2F%2Fa%2F%2")[0], 400)
        self.assertEqual(request(self.proxy.admin_port, "/cache/purge")[0], 405)

    def test_a_purge_sent_to_the_listener_is_the_origins_to_answer(self):
        path = q("/purge-c", cc="max-age=60")
        self.get(path)
        status, _, _ = self.get(path, method="PURGE")  # the origin has no PURGE: 501
        self.assertEqual(status, 501)
        self.assertEqual(self.get(path)[1]["cache-status"], "Portico; hit")
        self.assertEqual(self.served(path), 1)  # nothing dropped (the origin's 501 is unrecorded)

    def test_compressed_responses_are_stored_compressed(self):
        path = q("/squeezed/doc", cc="max-age=60", len=5000)
        gzipped = self.proxy.metric("portico_compressed_responses_total", encoding="gzip")
        _, _, body = self.get(path, {"Accept-Encoding": "gzip"})
        status, fields, again = self.get(path, {"Accept-Encoding": "gzip"})
        self.assertEqual((status, fields["content-encoding"], again), (200, "gzip", body))
        self.assertEqual(fields["cache-status"], "Portico; hit")
        self.assertTrue(gzip.decompress(again).startswith(b"response "))
        # compressed once, answered twice: a hit is not compressed again
        self.assertEqual(self.proxy.metric("portico_compressed_responses_total", encoding="gzip"),
                         gzipped + 1)
        # another coding is another variant (Vary: Accept-Encoding), fetched and kept
        status, fields, plain = self.get(path)
        self.assertEqual((status, fields.get("content-encoding")), (200, None))
        self.assertEqual(self.get(path)[1]["cache-status"], "Portico; hit")
        self.assertEqual(self.served(path), 2)
        self.assertEqual((len(gzip.decompress(body)), len(plain)), (5000, 5000))

    def test_the_access_log_has_the_cache_status(self):
        path = q("/logged", cc="max-age=60")
        self.get(path)
        self.get(path)

        def lines():
            with open(self.access_log) as f:
                return [line.rstrip("\n") for line in f if line.startswith(path + " ")]

        harness.wait_until(lambda: len(lines()) == 2, what="two access log lines")
        self.assertEqual(lines(), [f'{path} Portico; fwd=uri-miss; stored', f"{path} Portico; hit"])

    def test_the_metrics_count_what_the_cache_did(self):
        path = q("/counted", cc="max-age=60")
        hits = self.proxy.metric("portico_cache_requests_total", result="hit")
        self.get(path)
        self.get(path)
        self.assertEqual(self.proxy.metric("portico_cache_requests_total", result="hit"), hits + 1)
        self.assertGreater(self.proxy.metric("portico_cache_stored_objects"), 0)
        self.assertGreater(self.proxy.metric("portico_cache_stored_bytes"), 0)
        # the dashboard's table: the hit ratio and the counts behind it
        stats = json.loads(self.proxy.admin("/stats.json"))
        table = next(t for t in stats["tables"] if t["title"] == "cache")
        self.assertEqual(table["columns"][:2], ["hit ratio", "hits"])
        row = table["rows"][0]
        self.assertTrue(row[0].endswith(" %"), row)
        self.assertEqual(row[1], self.proxy.metric("portico_cache_requests_total", result="hit"))


class CacheAcrossWorkers(unittest.TestCase):
    """Two workers, each with its own store: a miss storm spread over both still reaches the
    origin once (the second worker waits for the first one's fetch)."""

    @classmethod
    def setUpClass(cls):
        cls.origin = CacheOrigin()
        cls.proxy = Proxy([cls.origin.endpoint], workers=2, routes_first=ROUTES, catch_all=False)

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.origin.stop()

    def test_a_miss_storm_over_two_workers_reaches_the_origin_once(self):
        for n, path in enumerate((q("/storm2", cc="max-age=60", gate=1, len=2000),
                                  q("/storm2-big", cc="max-age=60", gate=1, len=200000))):
            self.origin.close_gate()
            results = storm(self, path, 60)
            self.assertEqual(len(results), 61)
            self.assertEqual({r[0] for r in results}, {200})
            self.assertEqual(len({r[2] for r in results}), 1)
            self.assertEqual(len(self.origin.requests_for(path)), 1, path)
            # each worker keeps it: the next requests are hits wherever they land
            for _ in range(10):
                self.assertEqual(request(self.proxy.port, path)[1]["cache-status"],
                                 "Portico; hit")
            self.assertEqual(len(self.origin.requests_for(path)), 1, path)

    def test_waiters_on_either_worker_read_the_fetch_as_it_arrives(self):
        """Each waiter gets the half the origin has sent while it holds the rest, on whichever
        worker its connection landed: the other worker streams a copy."""
        path = q("/trickle2", cc="max-age=60", trickle=1, len=200000)
        self.origin.close_gate()
        conns = [http.client.HTTPConnection("127.0.0.1", self.proxy.port, timeout=30)
                 for _ in range(17)]
        conns[0].request("GET", path)
        first = conns[0].getresponse()
        start = first.read(100000)
        rests = []
        for c in conns[1:]:
            c.request("GET", path)
            r = c.getresponse()
            self.assertEqual(r.read(100000), start)
            self.assertIn("collapsed", r.getheader("cache-status"))
            rests.append(r)
        self.origin.open_gate()
        for r in [first] + rests:
            self.assertEqual(len(r.read()), 100000)
        for c in conns:
            c.close()
        self.assertEqual(len(self.origin.requests_for(path)), 1)
        for _ in range(6):  # and each worker keeps it
            self.assertEqual(request(self.proxy.port, path)[1]["cache-status"], "Portico; hit")


if __name__ == "__main__":
    unittest.main()
