"""protocol = "h2c": many client requests share a few h2c connections to the upstream. What is
special about sharing: a graceful restart of the upstream (GOAWAY) must lose nothing, a dead
upstream fails only its own streams, and requests do not each open a connection."""
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import threading
import unittest

import fake_origins
import harness
import load_clients
from proxy_clients import curl
from proxy_harness import Proxy
from test_proxy_metrics import get, sample

H2C = {"protocol": '"h2c"'}


def h2load(port, *args, n=2000):
    """n requests (a load that must outlive an event is load_clients.H2Load, stopped when the
    test is done with it: a run bounded by time, -D, may end before the event on a busy
    machine)."""
    out = subprocess.run(["h2load", "-t1", "-n", str(n), *args, f"http://127.0.0.1:{port}/hello"],
                         capture_output=True, text=True, timeout=120).stdout
    line = next(l for l in out.splitlines() if l.startswith("requests:"))
    f = line.split()
    return {"total": int(f[1]), "done": int(f[5]), "succeeded": int(f[7]), "failed": int(f[9]),
            "errored": int(f[11]), "text": out}


class H2cUpstream(unittest.TestCase):
    def setUp(self):
        harness.need("curl", "h2load")
        self.backend = harness.Backend(workers=2, unix=True)
        self.addCleanup(self.backend.stop)
        self.proxy = Proxy([f"unix:{self.backend.sock_path}"], workers=1, cluster_options=H2C)
        self.addCleanup(self.proxy.stop)

    def test_requests_share_connections(self):
        for mode in ("h1", "h2c"):
            self.assertEqual(curl(self.proxy, mode, "/hello").body, b"hello world\n")
        r = h2load(self.proxy.port, "-c", "20", "-m", "10", n=4000)
        self.assertEqual(r["succeeded"], 4000, r["text"])
        text = get(self.proxy.admin_port, "/metrics")[1]
        # 4,002 requests, a handful of connections: a new one only when one is full (its
        # streams at the backend's limit).
        connects = sample(text, "portico_upstream_connect_seconds_count", cluster="app")
        self.assertGreaterEqual(connects, 1)
        self.assertLessEqual(connects, 4)
        self.assertEqual(sample(text, "portico_requests_total", protocol="h2c",
                                code="200", answered_by="upstream"), 4001)
        doc = json.loads(get(self.proxy.admin_port, "/status")[1])
        ep = doc["clusters"][0]["endpoints"][0]
        self.assertEqual((ep["busy"], ep["in_flight"], ep["health"]), (0, 0, "up"))
        self.assertGreaterEqual(ep["idle"], 1)

    def test_http10_without_host(self):
        with socket.create_connection(("127.0.0.1", self.proxy.port), timeout=10) as s:
            s.sendall(b"GET /hello HTTP/1.0\r\n\r\n")
            r = harness.read_http1_response(s.makefile("rb"))
        self.assertEqual((r.status, r.body), (200, b"hello world\n"))

    def test_h2_connections_spreads_requests(self):
        proxy = Proxy([f"unix:{self.backend.sock_path}"], workers=1,
                      cluster_options={**H2C, "h2_connections": 3})
        self.addCleanup(proxy.stop)
        r = h2load(proxy.port, "-c", "10", "-m", "10", n=3000)
        self.assertEqual(r["succeeded"], 3000, r["text"])
        text = get(proxy.admin_port, "/metrics")[1]
        self.assertEqual(sample(text, "portico_upstream_connect_seconds_count", cluster="app"), 3)
        ep = json.loads(get(proxy.admin_port, "/status")[1])["clusters"][0]["endpoints"][0]
        self.assertEqual((ep["idle"], ep["busy"]), (3, 0))

    def test_no_connection_beyond_h2_connections_while_settings_are_on_their_way(self):
        # 400 streams at once, more than 2 connections take before the backend's SETTINGS
        # (100 each until then); with them, 2 take 512. The requests wait for the SETTINGS
        # rather than open connections the load does not need: a connection beyond
        # h2_connections stays open and takes its share for good, and on a preforked backend
        # 3 connections cannot spread over 2 workers. The backend's workers are stopped while
        # the burst arrives, so that no SETTINGS can come first.
        proxy = Proxy([f"unix:{self.backend.sock_path}"], workers=1,
                      cluster_options={**H2C, "h2_connections": 2, "queue_timeout": 30})
        self.addCleanup(proxy.stop)
        workers = self.backend.worker_pids()
        for pid in workers:
            harness.stop_process(pid)
        resumed = False
        try:
            result = {}
            load = threading.Thread(target=lambda: result.update(
                h2load(proxy.port, "-c", "4", "-m", "100", n=400)))
            load.start()

            harness.wait_until(
                lambda: json.loads(get(proxy.admin_port, "/status")[1])["requests"] == 400,
                timeout=30, what="400 requests at the proxy")
            for pid in workers:
                os.kill(pid, signal.SIGCONT)
            resumed = True
            load.join(timeout=60)
        finally:
            if not resumed:
                for pid in workers:
                    os.kill(pid, signal.SIGCONT)
        self.assertEqual(result.get("succeeded"), 400, result.get("text"))
        text = get(proxy.admin_port, "/metrics")[1]
        self.assertEqual(sample(text, "portico_upstream_connect_seconds_count", cluster="app"), 2)

    def test_a_clients_burst_goes_up_on_one_connection(self):
        # Two connections open (a held stream makes the pool open the second), then ten
        # requests in one client write: they go up together on one connection, so their
        # answers come back together, not spread one by one over both.
        import h2.connection
        origin = fake_origins.H2cOrigin()
        self.addCleanup(origin.stop)
        self.addCleanup(origin.release.set)
        proxy = Proxy([origin.endpoint], workers=1, cluster_options={**H2C, "h2_connections": 2})
        self.addCleanup(proxy.stop)
        held = threading.Thread(target=lambda: curl(proxy, "h2c", "/hold"))
        held.start()
        harness.wait_until(lambda: origin.count("GET", "/hold"), what="a stream held upstream")
        self.assertEqual(curl(proxy, "h2c", "/second").status, 200)
        origin.release.set()
        held.join(timeout=30)
        with origin.lock:
            self.assertEqual(len({c for c, _ in origin.streams_by_connection}), 2)
            origin.streams_by_connection.clear()
        client = h2.connection.H2Connection()
        client.initiate_connection()
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as s:
            for _ in range(10):
                client.send_headers(client.get_next_available_stream_id(),
                                    [(":method", "GET"), (":scheme", "http"),
                                     (":authority", "x"), (":path", "/burst")], end_stream=True)
            s.sendall(client.data_to_send())
            ended = 0
            while ended < 10:
                data = s.recv(65536)
                self.assertTrue(data, "the proxy closed the connection")
                for ev in client.receive_data(data):
                    ended += type(ev).__name__ == "StreamEnded"
                s.sendall(client.data_to_send())
        with origin.lock:
            carried = {c for c, p in origin.streams_by_connection if p == "/burst"}
        self.assertEqual(len(carried), 1, origin.streams_by_connection)

    def test_backend_graceful_restart_under_load_loses_nothing(self):
        # HUP: the old workers send GOAWAY and finish what they took; streams they did not take
        # come back refused and are retried on a connection to a new worker.
        # The load (10 h2c connections, 10 streams each) runs until stopped here, so that it
        # spans the whole restart however slow the machine; a client thread ends at its first
        # failure (a reset, a non-200, a connection lost under its streams). Each request takes
        # 100 ms upstream, so that the HUP finds streams in the old workers' hands (with /hello
        # the old workers had none left by the time they read the HUP: gone in 10 ms, with no
        # answer completed in between).
        load = load_clients.H2Load(self.proxy.port, path="/delay?ms=100", connections=10,
                                   streams=10)
        self.addCleanup(load.stop)
        harness.wait_until(lambda: load.total() >= 300, timeout=60, what="load under way")
        old = set(self.backend.worker_pids())
        self.backend.signal(signal.SIGHUP)
        harness.wait_until(lambda: not old & set(self.backend.worker_pids()), timeout=60,
                           what="old workers gone")
        # Still running when the restart ended: every client thread, and requests still
        # completing after it (on the new workers alone).
        alive = sum(t.is_alive() for t in load.threads)
        self.assertEqual(alive, len(load.threads), f"load ended before the restart did: "
                                                   f"{load.errors[:5]}")
        after = load.total()
        harness.wait_until(lambda: load.total() >= after + 300, timeout=60,
                           what="requests answered after the restart")
        result = load.stop()
        self.assertEqual(result["failed"], 0, result)
        self.assertGreaterEqual(result["ok"], 600, result)

    def test_killed_backend_fails_its_streams_then_recovers(self):
        # The connection is first taken by a worker (a GET answered on it): a connection still
        # in the listening socket's queue when the workers die is accepted by their successors,
        # which answer the POST with 200 (correctly: no one had read it). That happened in CI
        # when the workers were slow to reach accept().
        self.assertEqual(curl(self.proxy, "h1", "/hello").status, 200)
        done = {}
        # A POST: the application may have applied it, so it is not sent again (an idempotent
        # request would be, on the fresh connection: test_proxy_retry_policy).
        t = threading.Thread(target=lambda: done.update(
            r=curl(self.proxy, "h1", "/delay?ms=5000", extra=["-d", "x"])))
        t.start()
        harness.wait_until(lambda: json.loads(get(self.proxy.admin_port, "/status")[1])
                           ["clusters"][0]["endpoints"][0]["in_flight"] == 1,
                           what="the slow request upstream")
        for pid in self.backend.worker_pids():
            harness.os.kill(pid, signal.SIGKILL)
        t.join(timeout=30)
        self.assertEqual(done["r"].status, 502)
        # The POST went up on the connection the GET had opened.
        text = get(self.proxy.admin_port, "/metrics")[1]
        self.assertEqual(sample(text, "portico_upstream_connect_seconds_count", cluster="app"), 1)
        # The master starts new workers; the next requests open a new connection.
        harness.wait_until(lambda: curl(self.proxy, "h1", "/hello").status == 200, timeout=30,
                           what="a request served after the restart")

    def test_retiring_backend_workers_cut_no_response_over_a_unix_socket(self):
        # Each worker retires after a few requests: it sends GOAWAY, finishes its streams and
        # closes. The proxy still has their last DATA frames to read when it next writes (a
        # WINDOW_UPDATE for what it consumed) and meets EPIPE: the answers already in its
        # socket's queue must still reach their clients.
        self.retiring_workers_cut_nothing(unix=True)

    def test_retiring_backend_workers_cut_no_response_over_tcp(self):
        # Over TCP the worker's close, with those WINDOW_UPDATEs unread, was a reset, which
        # destroyed the DATA frames still on their way: the server now lingers.
        self.retiring_workers_cut_nothing(unix=False)

    def retiring_workers_cut_nothing(self, unix):
        backend = harness.Backend("--max-requests", "5", "--min-requests", "1", workers=2,
                                  unix=unix)
        self.addCleanup(backend.stop)
        endpoint = f"unix:{backend.sock_path}" if unix else f"127.0.0.1:{backend.port}"
        proxy = Proxy([endpoint], workers=1, cluster_options=H2C)
        self.addCleanup(proxy.stop)
        outcomes, lock = [], threading.Lock()

        def client(k):
            rng = random.Random(k)
            conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
            for _ in range(20):
                body = rng.randbytes(rng.choice([10, 65536, 200000]))
                try:
                    conn.request("POST", "/echo", body=body)
                    r = conn.getresponse()
                    data = r.read()
                    # A 502 is honest (a POST is never sent twice); a 200 carries the body.
                    outcome = "ok" if (r.status, data) == (200, body) else \
                        "502" if r.status == 502 else f"status {r.status}, {len(data)} bytes"
                except (http.client.HTTPException, OSError) as e:
                    outcome = f"cut: {e!r:.80}"
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
                with lock:
                    outcomes.append(outcome)
            conn.close()

        threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        bad = [o for o in outcomes if o not in ("ok", "502")]
        self.assertEqual(len(outcomes), 160)
        self.assertEqual(bad, [])
        # The workers did retire, many times over.
        self.assertGreaterEqual(backend.read_log().count("started"), 20)

    def test_refused_endpoint_is_502(self):
        # Bound, never listening, and held until the test ends (not released for another
        # process to take before the proxy connects).
        proxy = Proxy([harness.dead_endpoint(self)], workers=1, cluster_options=H2C)
        self.addCleanup(proxy.stop)
        self.assertEqual(curl(proxy, "h1", "/hello").status, 502)
        self.assertEqual(curl(proxy, "h2c", "/hello").status, 502)



class ShutWindowOrigin(fake_origins._Origin):
    """h2c that never gives back window (no WINDOW_UPDATE: 64 KiB of a request body go, no
    more) and answers every request 200, without a body, as soon as its head is in."""

    def serve(self, conn):
        import h2.config
        import h2.connection
        import h2.events
        h2conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
        h2conn.initiate_connection()
        conn.sendall(h2conn.data_to_send())
        while True:
            data = conn.recv(65536)
            if not data:
                return
            for ev in h2conn.receive_data(data):
                if isinstance(ev, h2.events.RequestReceived):
                    h2conn.send_headers(ev.stream_id, [(":status", "200"),
                                                       ("content-length", "0")],
                                        end_stream=True)
            conn.sendall(h2conn.data_to_send())


class EarlyAnswer(unittest.TestCase):
    def test_a_client_held_back_for_its_body_is_read_again_once_the_answer_ends(self):
        # The POST's body piles up for an upstream that takes none of it, so the proxy stops
        # reading the client; the upstream's answer ends the exchange, and what the client
        # sends next (the rest of the body, dropped, then a request) must be read again.
        origin = ShutWindowOrigin()
        self.addCleanup(origin.stop)
        proxy = Proxy([origin.endpoint], workers=1, cluster_options={"protocol": '"h2c"'},
                      server_options={"keepalive_timeout": 30})
        self.addCleanup(proxy.stop)
        with harness.connection(proxy.port, timeout=10) as (s, f):
            body = b"b" * 330_000
            s.sendall(b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                      % len(body) + body)
            self.assertEqual(harness.read_http1_response(f).status, 200)
            s.sendall(b"GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertEqual(harness.read_http1_response(f).status, 200,
                             "the next request on the connection was never read")

if __name__ == "__main__":
    unittest.main()
