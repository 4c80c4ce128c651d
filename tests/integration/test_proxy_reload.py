"""SIGHUP reload as an nginx operator uses it: the file is loaded again and, when valid, every
worker switches to it while serving: new connections get the new routes, clusters and TLS
certificate; requests under way finish on the old configuration; listeners that stay keep
their sockets (so no connection is refused), an added one opens, a removed one closes; a
cluster that did not change keeps its pooled upstream connections. As in Envoy, a connection
open across the reload is not closed for it: its next request follows the new routes. A file with errors is
logged as FILE:LINE:COL and the running configuration stays. Under h2load (h2c) and wrk
(HTTP/1.1) load, alternating reloads fail no request."""
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import unittest

import harness
import load_clients
from harness import wait_until
from proxy_harness import PORTICO, make_certificate, toml_string


def who_backend(tmp, name):
    """A backend whose /who.txt says name."""
    root = os.path.join(tmp, f"root-{name}")
    os.makedirs(root)
    with open(os.path.join(root, "who.txt"), "w") as f:
        f.write(name + "\n")
    return harness.Backend("--document-root", root, workers=1)


def peer_certificate(port):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        with ctx.wrap_socket(s, server_hostname="localhost") as t:
            return t.getpeercert(binary_form=True)


def der(cert_path):
    with open(cert_path) as f:
        return ssl.PEM_cert_to_DER_cert(f.read())


class Reload(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="portico-reload-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.backends = {}
        for name in ("a", "b", "c"):
            self.backends[name] = who_backend(self.tmp, name)
            self.addCleanup(self.backends[name].stop)
        self.certs = [make_certificate(self.tmp, "localhost"),
                      make_certificate(self.tmp, "localhost", extra_names=("two.test",))]
        self.port, self.tls_port = harness.free_port(), harness.free_port()
        self.old_port, self.new_port = harness.free_port(), harness.free_port()
        self.admin_port = harness.free_port()
        self.config_path = os.path.join(self.tmp, "portico.toml")
        self.pid_file = os.path.join(self.tmp, "portico.pid")
        self.access_log = os.path.join(self.tmp, "access.log")

    def write_config(self, generation, workers=2, extra=""):
        """Generation 0: /who -> a, cluster b on backend b, the first certificate, the
        listener old_port. Generation 1: /who -> b, cluster b on backend c, the second
        certificate, new_port instead of old_port. Cluster a and the main listener stay."""
        cert, key = self.certs[generation]
        side = self.old_port if generation == 0 else self.new_port
        b = self.backends["b" if generation == 0 else "c"]
        lines = [
            "[server]", f"workers = {workers}", f"pid_file = {toml_string(self.pid_file)}",
            "grace_period = 10", "",
            "[[listener]]", f'address = "127.0.0.1:{self.port}"',
            f"access_log = {toml_string(self.access_log)}", 'access_log_format = "json"', "",
            "[[listener]]", f'address = "127.0.0.1:{self.tls_port}"',
            f"tls = {{ certificate = {toml_string(cert)}, private_key = {toml_string(key)} }}",
            "", "[[listener]]", f'address = "127.0.0.1:{side}"', "",
            "[admin]", f'address = "127.0.0.1:{self.admin_port}"', "",
            "[[cluster]]", 'name = "a"', f'endpoints = ["127.0.0.1:{self.backends["a"].port}"]',
            "", "[[cluster]]", 'name = "b"', f'endpoints = ["127.0.0.1:{b.port}"]', "",
            "[[route]]", 'path_prefix = "/who"', f'cluster = "{"a" if generation == 0 else "b"}"',
            "", "[[route]]", 'path_prefix = "/delay"', 'cluster = "b"', "",
            "[[route]]", 'path_prefix = "/"', 'cluster = "a"', "", extra]
        with open(self.config_path + ".new", "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(self.config_path + ".new", self.config_path)  # as an editor saves it

    def start(self, workers=2):
        self.write_config(0, workers)
        self.proxy = harness.Process([PORTICO, "-c", self.config_path],
                                     os.path.join(self.tmp, "portico.log"))
        self.addCleanup(self.proxy.stop)
        wait_until(lambda: self.proxy.proc.poll() is not None or
                   harness.port_open("127.0.0.1", self.admin_port), what="portico")
        self.assertIsNone(self.proxy.proc.poll(), self.proxy.read_log())
        self.generation = 1

    def reload(self, generation):
        """Writes the file for generation 0 or 1, sends HUP, waits until every worker serves it."""
        self.write_config(generation)
        self.generation += 1
        os.kill(self.proxy.pid, signal.SIGHUP)
        wait_until(lambda: f"every worker serves generation {self.generation}"
                   in self.proxy.read_log(), what=f"generation {self.generation} applied")

    def get(self, path, port=None):
        status, body = harness.http_get(port or self.port, path)[:2]
        return status, body.decode()

    def test_a_reload_changes_routes_clusters_certificates_and_listeners(self):
        self.start()
        self.assertEqual(self.get("/who.txt"), (200, "a\n"))
        self.assertEqual(peer_certificate(self.tls_port), der(self.certs[0][0]))
        self.assertEqual(self.get("/who.txt", self.old_port), (200, "a\n"))
        self.assertFalse(harness.port_open("127.0.0.1", self.new_port))
        # A client holding a keep-alive connection from before, and a request under way.
        held = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        held_in = held.makefile("rb")
        held.sendall(b"GET /who.txt HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertEqual(harness.read_http1_response(held_in).body, b"a\n")
        slow = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        slow.sendall(b"GET /delay?ms=1500 HTTP/1.1\r\nHost: x\r\n\r\n")
        wait_until(lambda: self.in_flight("b") == 1, what="the slow request upstream")

        self.reload(1)
        self.assertEqual(self.get("/who.txt"), (200, "c\n"))  # new route, changed cluster
        self.assertEqual(peer_certificate(self.tls_port), der(self.certs[1][0]))
        self.assertEqual(self.get("/who.txt", self.new_port), (200, "c\n"))
        wait_until(lambda: not harness.port_open("127.0.0.1", self.old_port),
                   what="the removed listener closed")
        status = self.get("/status", self.admin_port)[1]
        self.assertIn('"reloads":1', status)
        held.sendall(b"GET /who.txt HTTP/1.1\r\nHost: x\r\n\r\n")
        again = harness.read_http1_response(held_in)
        self.assertEqual(again.body, b"c\n")  # the new routes, on the connection kept open
        self.assertNotEqual(again.header("connection"), "close")
        # The request under way finishes where it started (backend b, the old cluster b).
        with slow, slow.makefile("rb") as slow_in:
            self.assertEqual(harness.read_http1_response(slow_in).status, 200)
        self.assertNotIn("generation 1 has drained", self.proxy.read_log())  # held is open
        held_in.close()
        held.close()
        wait_until(lambda: "generation 1 has drained" in self.proxy.read_log(),
                   what="the first generation freed once its last connection closed")

        self.reload(0)
        self.assertEqual(self.get("/who.txt"), (200, "a\n"))
        self.assertEqual(peer_certificate(self.tls_port), der(self.certs[0][0]))
        wait_until(lambda: harness.port_open("127.0.0.1", self.old_port),
                   what="the listener added again")

    def test_an_unchanged_cluster_keeps_its_pooled_connections(self):
        self.start(workers=1)
        for _ in range(3):
            self.assertEqual(self.get("/hello")[0], 200)
        connects = self.connects("a")
        self.assertGreaterEqual(connects, 1)
        self.reload(1)
        for _ in range(3):
            self.assertEqual(self.get("/hello")[0], 200)
        self.assertEqual(self.connects("a"), connects)  # the same pooled connection
        self.assertEqual(self.get("/who.txt"), (200, "c\n"))
        self.assertEqual(self.connects("b"), 1)  # changed: a new pool, counted afresh

    def in_flight(self, cluster):
        text = self.get("/metrics", self.admin_port)[1]
        return harness.metric_sample(text, "portico_upstream_connections", cluster=cluster,
                                     state="busy")

    def connects(self, cluster):
        text = self.get("/metrics", self.admin_port)[1]
        return harness.metric_sample(text, "portico_upstream_connect_seconds_count",
                                     cluster=cluster)

    def test_a_file_with_errors_is_logged_and_the_running_one_stays(self):
        self.start()
        with open(self.config_path, "a") as f:
            f.write("\n[[route]]\npath_prefix = 7\n")
        os.kill(self.proxy.pid, signal.SIGHUP)
        wait_until(lambda: "still serving the configuration loaded before"
                   in self.proxy.read_log(), what="the refusal")
        self.assertRegex(self.proxy.read_log(), r"reload: \S+portico\.toml:\d+:\d+: ")
        self.assertEqual(self.get("/who.txt"), (200, "a\n"))
        self.assertEqual(peer_certificate(self.tls_port), der(self.certs[0][0]))
        # A certificate that cannot be read is refused as well, before any worker sees it.
        self.write_config(1)
        os.rename(self.certs[1][1], self.certs[1][1] + ".gone")
        os.kill(self.proxy.pid, signal.SIGHUP)
        wait_until(lambda: self.proxy.read_log().count("still serving the configuration") == 2,
                   what="the second refusal")
        self.assertEqual(self.get("/who.txt"), (200, "a\n"))
        os.rename(self.certs[1][1] + ".gone", self.certs[1][1])
        r = subprocess.run([PORTICO, "-s", "reload", "-c", self.config_path],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        wait_until(lambda: "every worker serves generation 2" in self.proxy.read_log(),
                   what="the reload -s asked for")
        self.assertEqual(self.get("/who.txt"), (200, "c\n"))

    def test_reloads_under_load_fail_no_request(self):
        self.start()
        # Both run until the reloads are over and the test ends them (h2load cannot be: it
        # says nothing when interrupted, so h2c is load_clients.H2Load).
        h2 = load_clients.H2Load(self.port, connections=8, streams=10)
        self.addCleanup(h2.stop)
        h1 = load_clients.wrk(f"http://127.0.0.1:{self.port}/hello", 300)
        self.addCleanup(h1.stop)
        wait_until(lambda: self.requests() > 2000 and h2.total() > 50, timeout=30,
                   what="load flowing")
        for i in range(6):
            self.reload(1 - i % 2)
            served, h2_served = self.requests(), h2.total()
            # Both loads answered on the new generation (wrk's pace is not H2Load's: each is
            # waited on by itself, not by a total that one of them can make alone).
            wait_until(lambda: self.requests() > served + 500 and h2.total() > h2_served + 50,
                       timeout=30, what="requests of both loads on the new generation")
        r2 = h2.stop()
        running, r1 = h1.interrupt()
        self.assertTrue(running, f"wrk ended before the reloads:\n{r1['out']}")
        if r1["failed"]:
            self.fail(f"{r1['out']}\nThe slowest requests in the access log:\n{self.slowest()}")
        self.assertGreater(r1["total"], 1000, r1["out"])
        self.assertEqual(r2["failed"], 0, r2)
        self.assertGreater(r2["ok"], 6 * 50, r2)

    def slowest(self, n=12):
        """The n slowest requests the proxy logged, once it has stopped and written them all:
        where a slow one spent its time (queue, connect, ttfb, total) tells a stall of the
        proxy from one of the origin."""
        self.proxy.stop()
        with open(self.access_log) as f:
            lines = [json.loads(line) for line in f if line.strip()]
        lines.sort(key=lambda e: e["total"], reverse=True)
        return "\n".join(json.dumps(e) for e in lines[:n])

    def requests(self):
        m = re.search(r'"requests":(\d+)', self.get("/status", self.admin_port)[1])
        return int(m.group(1))


if __name__ == "__main__":
    unittest.main()
