"""A unix-socket upstream whose listen backlog is full refuses connect(2) with EAGAIN. While the
proxy holds a connection to it, that means "at capacity", not "down": the request waits for a
connection to come back instead of failing with a 502."""
import json
import os
import shutil
import socket
import tempfile
import threading
import unittest

import harness
from proxy_clients import curl
from proxy_harness import Proxy
from test_proxy_metrics import get


class SerialUpstream:
    """One connection at a time, like a blocking app server's single worker: serves requests on
    the connection it accepted (each answer takes `delay`) until the connection has been quiet
    for `idle`, then accepts the next. Its listen backlog holds one pending connection."""

    def __init__(self, delay=0.3, idle=0.3):
        self.path = os.path.join(tempfile.mkdtemp(prefix="portico-backlog-"), "up.sock")
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(self.path)
        self.sock.listen(0)
        self.delay, self.idle = delay, idle
        self.served = 0
        self.accepted = threading.Event()
        self.stopped = False
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while not self.stopped:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.set()
            with c:
                self._serve(c)

    def _serve(self, c):
        data = b""
        while not self.stopped:
            c.settimeout(self.idle if not data else 10)
            try:
                chunk = c.recv(65536)
            except (socket.timeout, OSError):
                return
            if not chunk:
                return
            data += chunk
            while b"\r\n\r\n" in data:
                _, data = data.split(b"\r\n\r\n", 1)
                threading.Event().wait(self.delay)  # the app's own work, not synchronisation
                # Counted before the answer goes: a client that has it may look at once.
                self.served += 1
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")

    def stop(self):
        self.stopped = True
        self.sock.close()
        shutil.rmtree(os.path.dirname(self.path), ignore_errors=True)


class BacklogFull(unittest.TestCase):
    def test_requests_wait_instead_of_502(self):
        harness.need("curl")
        up = SerialUpstream()
        self.addCleanup(up.stop)
        proxy = Proxy([f"unix:{up.path}"], workers=1, cluster_options={"queue_timeout": 10})
        self.addCleanup(proxy.stop)
        results = {}

        def request(name):
            results[name] = curl(proxy, "h1", f"/{name}").status

        def in_flight():
            ep = json.loads(get(proxy.admin_port, "/status")[1])["clusters"][0]["endpoints"][0]
            return ep["busy"] + ep["queue_depth"]

        threads = []
        # a: accepted and being served; b: waits in the backlog (full now); c: connect gets
        # EAGAIN, and must wait for a's connection.
        for name, want in (("a", 1), ("b", 2), ("c", 3)):
            t = threading.Thread(target=request, args=(name,))
            t.start()
            threads.append(t)
            harness.wait_until(lambda: name in results or in_flight() >= want,
                               what=f"request {name} upstream")
        for t in threads:
            t.join(timeout=30)
        self.assertEqual(results, {"a": 200, "b": 200, "c": 200})
        self.assertEqual(up.served, 3)


if __name__ == "__main__":
    unittest.main()
