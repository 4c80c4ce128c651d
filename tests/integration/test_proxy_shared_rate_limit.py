"""A rate limit `shared` through Redis: three Portico instances and one redis-server started
here enforce one budget (at three times the rate for 10 s, the accepted count is rate x t +
burst within 5 %); Redis killed mid-run gives the configured failure mode at once, open or
closed, and the limit holds again once Redis is back; a Redis that replies garbage, an error,
closes mid-reply or never answers costs a request at most the limit's timeout, never the
proxy."""
import http.client
import json
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
import unittest

import harness
from proxy_harness import Proxy, toml_string


def shared_routes(redis_port, timeout=0.05):
    redis = f'redis = "127.0.0.1:{redis_port}", timeout = {timeout}'
    return f"""
[[route]]
path_prefix = "/steady/"
cluster = "app"
prefix_rewrite = "/"
rate_limit = {{ name = "steady", rate = "200r/s", burst = 20, shared = {{ {redis} }} }}

[[route]]
path_prefix = "/open/"
cluster = "app"
prefix_rewrite = "/"
rate_limit = {{ name = "open", rate = "1r/m", burst = 2, shared = {{ {redis} }} }}

[[route]]
path_prefix = "/closed/"
cluster = "app"
prefix_rewrite = "/"
rate_limit = {{ name = "closed", rate = "1r/m", burst = 2, shared = {{ {redis}, failure = "closed" }} }}
"""


class Redis:
    """redis-server on a port of its own, no persistence; restartable on that port."""

    def __init__(self, tmp, port=None, password=None):
        harness.need("redis-server")
        self.tmp = tmp
        self.port = port or harness.free_port()
        self.process = harness.Process(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", tmp] +
            (["--requirepass", password] if password else []),
            os.path.join(tmp, f"redis-{time.monotonic_ns()}.log"))
        harness.wait_until(lambda: self.process.proc.poll() is not None or
                           harness.port_open("127.0.0.1", self.port), what="redis-server")
        if self.process.proc.poll() is not None:
            raise AssertionError(f"redis-server exited: {self.process.read_log()}")

    def kill(self):
        self.process.stop(sig=9)


class Connection:
    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def get(self, path):
        self.conn.request("GET", path)
        r = self.conn.getresponse()
        r.read()
        return r.status

    def close(self):
        self.conn.close()


class SharedRateLimit(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.backend = harness.Backend(workers=1, unix=True)
        cls.tmp = tempfile.mkdtemp(prefix="portico-shared-limit-test-")
        cls.redis = Redis(cls.tmp)
        cls.access_logs = [os.path.join(cls.tmp, f"access-{i}.log") for i in range(3)]
        cls.proxies = [
            Proxy([f"unix:{cls.backend.sock_path}"], workers=2,
                  routes_first=shared_routes(cls.redis.port), catch_all=False,
                  listener_options={"access_log": toml_string(log),
                                    "access_log_format": '"$path $status $limit"'})
            for log in cls.access_logs]
        for p in cls.proxies:
            harness.wait_until(lambda: p.metric("portico_rate_limit_store_connections",
                                                store=f"127.0.0.1:{cls.redis.port}") == 2,
                               what="both workers connected to Redis")

    @classmethod
    def tearDownClass(cls):
        for p in cls.proxies:
            p.stop()
        cls.redis.kill()
        cls.backend.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def metric(self, name, **labels):
        return sum(p.metric(name, **labels) for p in self.proxies)

    def logged(self, line):
        for path in self.access_logs:
            with open(path) as f:
                if line in f.read():
                    return True
        return False

    def test_a_three_instances_at_three_times_the_rate_keep_one_budget(self):
        # Each instance is offered the whole rate: 600 r/s together against 200 r/s.
        results = [None] * 3

        def offer(i):
            c = Connection(self.proxies[i].port)
            accepted = sent = 0
            first = last = None
            start = time.monotonic()
            while True:
                due = start + sent / 200.0
                now = time.monotonic()
                if due > now:
                    time.sleep(due - now)  # pacing the client, not waiting on the proxy
                if due - start >= 10:
                    break
                t = time.monotonic()
                first = first or t
                status = c.get("/steady/hello")
                last = t
                if status not in (200, 429):
                    results[i] = ("status", status)
                    return
                accepted += status == 200
                sent += 1
            c.close()
            results[i] = (accepted, sent, first, last)

        threads = [threading.Thread(target=offer, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        for r in results:
            self.assertEqual(len(r), 4, r)
        accepted = sum(r[0] for r in results)
        sent = sum(r[1] for r in results)
        span = max(r[3] for r in results) - min(r[2] for r in results)
        expected = 200 * span + 20
        print(f"\nshared rate limit accuracy: {accepted} accepted of {sent} sent by 3 "
              f"instances in {span:.2f} s; rate x t + burst = {expected:.0f} "
              f"({100 * (accepted - expected) / expected:+.2f} %)")
        self.assertLessEqual(abs(accepted - expected), 0.05 * expected)
        self.assertGreater(sent, 2.5 * expected)  # the offered load was about three times
        # No round trip per request: a worker asks Redis for a batch at a time.
        ok = self.metric("portico_rate_limit_store_commands_total",
                         store=f"127.0.0.1:{self.redis.port}", result="ok")
        self.assertLess(ok, sent / 3)
        print(f"Redis commands: {ok:.0f} for {sent} requests")

    def test_b_redis_killed_gives_the_failure_mode_at_once_and_the_limit_returns(self):
        c = Connection(self.proxies[0].port)
        self.addCleanup(c.close)
        for route in ("/open/", "/closed/"):  # Redis counts: one of the three it allows
            self.assertEqual(c.get(route + "hello"), 200)
        self.assertEqual(self.metric("portico_rate_limit_requests_total", limit="closed",
                                     result="allowed"), 1)
        self.redis.kill()
        harness.wait_until(lambda: self.metric("portico_rate_limit_store_connections",
                                               store=f"127.0.0.1:{self.redis.port}") == 0,
                           what="every worker saw Redis go")
        for _ in range(20):
            start = time.monotonic()
            self.assertEqual(c.get("/open/hello"), 200)  # fail open: let through
            self.assertEqual(c.get("/closed/hello"), 429)  # fail closed: refused
            self.assertLess(time.monotonic() - start, 0.5)  # no stall on a Redis known gone
        self.assertGreaterEqual(self.metric("portico_rate_limit_requests_total", limit="open",
                                            result="unchecked"), 20)
        harness.wait_until(lambda: self.logged("/open/hello 200 open unchecked") and
                           self.logged("/closed/hello 429 closed 429 unchecked"),
                           what="the access log lines")
        # Back on its port, empty: the workers reconnect and the limit holds again.
        type(self).redis = Redis(self.tmp, port=self.redis.port)
        harness.wait_until(lambda: all(
            p.metric("portico_rate_limit_store_connections",
                     store=f"127.0.0.1:{self.redis.port}") == 2 for p in self.proxies),
                           timeout=20, what="every worker reconnected")
        statuses = [c.get("/open/hello") for _ in range(4)]
        self.assertEqual(statuses, [200, 200, 200, 429])
        stats = json.loads(self.proxies[0].admin("/stats.json"))  # the dashboard's
        table = next(t for t in stats["tables"] if t["title"] == "redis of shared limits")
        row = dict(zip(table["columns"], table["rows"][0]))
        self.assertEqual(row["workers connected"], 2)
        self.assertGreater(row["answered"], 0)
        limits = next(t for t in stats["tables"] if t["title"] == "limits")
        row = next(dict(zip(limits["columns"], r)) for r in limits["rows"] if r[0] == "open")
        self.assertGreaterEqual(row["unchecked"], 20)


class PasswordAndReload(unittest.TestCase):
    def setUp(self):
        self.backend = harness.Backend(workers=1, unix=True)
        self.addCleanup(self.backend.stop)
        self.tmp = tempfile.mkdtemp(prefix="portico-shared-limit-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.redis = Redis(self.tmp, password="s3cret")
        self.addCleanup(self.redis.kill)

    def proxy(self, password):
        # timeout: Redis' answer may wait, on a machine as busy as CI's ASan stage, far past the
        # default 50 ms, after which the request would pass unchecked (failure = "open") and
        # the budget this class is about would not be spent.
        redis = f'redis = "127.0.0.1:{self.redis.port}", password = "{password}", timeout = 5'
        p = Proxy([f"unix:{self.backend.sock_path}"], workers=2, catch_all=False,
                  routes_first=f"""
[[route]]
path_prefix = "/"
cluster = "app"
rate_limit = {{ name = "pw", rate = "1r/m", burst = 2, shared = {{ {redis} }} }}
""")
        self.addCleanup(p.stop)
        return p

    def test_the_password_is_given_and_a_wrong_one_fails_open(self):
        right, wrong = self.proxy("s3cret"), self.proxy("guess")
        self.assertEqual([harness.http_get(right.port)[0] for _ in range(4)],
                         [200, 200, 200, 429])
        self.assertEqual([harness.http_get(wrong.port)[0] for _ in range(4)], [200] * 4)
        self.assertEqual(wrong.metric("portico_rate_limit_requests_total", limit="pw",
                                      result="unchecked"), 4)
        harness.wait_until(lambda: "redis 127.0.0.1" in wrong.read_log(),
                           what="the error log line")

    def test_a_reload_keeps_the_workers_connections_and_the_budget(self):
        p = self.proxy("s3cret")
        store = f"127.0.0.1:{self.redis.port}"
        self.assertEqual([harness.http_get(p.port)[0] for _ in range(2)], [200, 200])
        reconnects = p.metric("portico_rate_limit_store_reconnects_total", store=store)
        os.kill(p.pid, signal.SIGHUP)
        harness.wait_until(lambda: "every worker serves generation 2" in p.read_log(),
                           what="the reload applied")
        self.assertEqual([harness.http_get(p.port)[0] for _ in range(2)], [200, 429])
        # Every request was checked against Redis: none passed because an answer was late.
        self.assertEqual(p.metric("portico_rate_limit_requests_total", limit="pw",
                                  result="unchecked"), 0)
        self.assertEqual(p.metric("portico_rate_limit_store_connections", store=store), 2)
        self.assertEqual(p.metric("portico_rate_limit_store_reconnects_total", store=store),
                         reconnects)


class FakeRedis:
    """A TCP server that answers as a broken Redis would: "garbage" (not RESP), "error" (an
    error to everything), "cut" (half a reply, then the connection closed), "hang" (reads,
    never answers). Counts its connections."""

    def __init__(self, mode):
        self.mode = mode
        self.port = harness.free_port()
        self.connections = 0
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", self.port))
        self.sock.listen(64)
        self.held = []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self.answer, args=(conn,), daemon=True).start()

    def answer(self, conn):
        try:
            while conn.recv(65536):
                if self.mode == "garbage":
                    conn.sendall(b"HELLO THERE\r\n")
                elif self.mode == "error":
                    conn.sendall(b"-ERR not today\r\n")
                elif self.mode == "cut":
                    conn.sendall(b"*2\r\n:5\r\n")
                    conn.close()
                    return
                else:
                    self.held.append(conn)  # hang: read on, answer nothing
        except OSError:
            pass

    def close(self):
        self.sock.close()
        for c in self.held:
            c.close()


class BrokenRedis(unittest.TestCase):
    def test_garbage_errors_cut_replies_and_hangs_cost_at_most_the_timeout(self):
        backend = harness.Backend(workers=1, unix=True)
        self.addCleanup(backend.stop)
        for mode in ("garbage", "error", "cut", "hang"):
            with self.subTest(mode=mode):
                fake = FakeRedis(mode)
                proxy = Proxy([f"unix:{backend.sock_path}"], workers=1,
                              routes_first=shared_routes(fake.port, timeout=0.1),
                              catch_all=False)
                try:
                    c = Connection(proxy.port)
                    slowest = 0
                    for _ in range(10):
                        start = time.monotonic()
                        self.assertEqual(c.get("/open/hello"), 200)
                        self.assertEqual(c.get("/closed/hello"), 429)
                        slowest = max(slowest, time.monotonic() - start)
                    c.close()
                    self.assertLess(slowest, 1.0)  # two requests, each at most the 0.1 s timeout
                    self.assertEqual(proxy.metric("portico_rate_limit_requests_total",
                                                  limit="open", result="unchecked"), 10)
                    if mode == "hang":  # no answer for 4 timeouts: dropped, connected again
                        harness.wait_until(lambda: fake.connections >= 2,
                                           what="a new connection after the hang")
                    self.assertEqual(harness.http_get(proxy.port, "/nothing/")[0], 404)
                finally:
                    proxy.stop()
                    fake.close()


if __name__ == "__main__":
    unittest.main()
