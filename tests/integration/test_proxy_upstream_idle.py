"""When the proxy retires an idle HTTP/1.1 upstream connection: at the cluster's idle_timeout,
sooner when a response's "Keep-Alive: timeout=N" asks (half a second ahead of the origin), and
sooner still once the pool has learned that the origin closes connections idle for less (a
reused connection that died unanswered after T seconds idle). A connection handed straight
from one request to the next was idle for no time, and teaches nothing; a shorter hint that
comes after a longer one is kept to.

The origin times every connection's requests, answers and close; the waits in the scenarios
are the traffic's shape (a connection left idle, an answer held back), not synchronisation."""
import threading
import time
import unittest

import harness
from fake_origins import _Origin
from proxy_harness import Proxy


class TimingOrigin(_Origin):
    """HTTP/1.1, bodiless requests. Per connection: (event, path, monotonic time) with events
    request, answer, eof. /hold?ms=N answers N ms late; /hint answers with Keep-Alive:
    timeout=1; /after-hint answers once /hint has arrived; /drop-once closes the connection
    unanswered the first time."""

    def __init__(self):
        self.events = {}  # connection number -> [(event, path, time)]
        self.hint_arrived = threading.Event()
        self.dropped = False
        self.served = 0
        super().__init__()

    def note(self, n, event, path):
        with self.lock:
            self.events.setdefault(n, []).append((event, path, time.monotonic()))

    def find(self, event, path):
        """(connection, time) of the last such event, or None."""
        with self.lock:
            found = [(n, t) for n, evs in self.events.items() for e, p, t in evs
                     if e == event and p == path]
        return max(found, key=lambda f: f[1]) if found else None

    def eof(self, n):
        with self.lock:
            return next((t for e, _, t in self.events.get(n, []) if e == "eof"), None)

    def serve(self, conn):
        with self.lock:
            self.served += 1
            n = self.served
        f = conn.makefile("rb")
        try:
            while True:
                line = f.readline()
                if not line:
                    self.note(n, "eof", None)
                    return
                while f.readline() not in (b"\r\n", b""):
                    pass
                path, _, query = line.decode("latin1").split(" ")[1].partition("?")
                self.note(n, "request", path)
                fields = ""
                if path == "/hold":
                    time.sleep(int(query.split("=")[1]) / 1000)
                elif path == "/hint":
                    self.hint_arrived.set()
                    time.sleep(0.3)
                    fields = "Keep-Alive: timeout=1\r\n"
                elif path == "/after-hint":
                    self.hint_arrived.wait(10)
                elif path == "/drop-once" and not self.dropped:
                    self.dropped = True
                    self.note(n, "eof", None)  # ours: the proxy's close is not timed
                    return
                # Noted before it goes: the client may act on the answer at once.
                self.note(n, "answer", path)
                conn.sendall(f"HTTP/1.1 200 OK\r\n{fields}Content-Length: 3\r\n\r\nok\n"
                             .encode())
        finally:
            f.close()


def get_in_thread(port, path, results):
    def run():
        results[path] = harness.http_get(port, path)[0]
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


class UpstreamIdle(unittest.TestCase):
    def start(self, **cluster):
        self.origin = TimingOrigin()
        self.addCleanup(self.origin.stop)
        self.proxy = Proxy([self.origin.endpoint], workers=1, cluster_options=cluster)
        self.addCleanup(self.proxy.stop)

    def retired_after(self, path, longest=15):
        """Seconds from the answer to `path` until the proxy closed that connection."""
        n, answered = self.origin.find("answer", path)
        harness.wait_until(lambda: self.origin.eof(n) is not None, timeout=longest,
                           what=f"the connection of {path} retired")
        return self.origin.eof(n) - answered

    def test_a_connection_handed_straight_on_teaches_no_idle_timeout(self):
        self.start(max_connections=1, idle_timeout=3)
        self.assertEqual(harness.http_get(self.proxy.port, "/first")[0], 200)
        time.sleep(0.6)  # the connection idles: what a later failure must not be blamed on
        results = {}
        held = get_in_thread(self.proxy.port, "/hold?ms=500", results)
        harness.wait_until(lambda: self.origin.find("request", "/hold"), what="/hold sent")
        # Queued behind /hold (one connection), then handed its connection as /hold ends: the
        # origin closes it unanswered, the GET goes again on a new connection.
        dropped = get_in_thread(self.proxy.port, "/drop-once", results)
        held.join(15)
        dropped.join(15)
        self.assertEqual(results, {"/hold?ms=500": 200, "/drop-once": 200})
        # Nothing was learned: the retry's connection idles for idle_timeout, not for 0.75
        # of the 1.1 s since /first's answer.
        self.assertGreater(self.retired_after("/drop-once"), 2.5)

    def test_a_shorter_keep_alive_hint_after_a_longer_wait_is_kept_to(self):
        self.start(idle_timeout=6)
        results = {}
        first = get_in_thread(self.proxy.port, "/after-hint", results)
        hinted = get_in_thread(self.proxy.port, "/hint", results)
        first.join(15)
        hinted.join(15)
        self.assertEqual(results, {"/after-hint": 200, "/hint": 200})
        # /after-hint's connection went idle first, for 6 s; /hint's asks for 1 s, so it goes
        # half a second after its answer, long before the other.
        self.assertLess(self.retired_after("/hint"), 2.5)


if __name__ == "__main__":
    unittest.main()
