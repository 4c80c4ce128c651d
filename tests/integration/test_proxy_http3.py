"""HTTP/3: a QUIC listener beside the TLS one ([[listener]] quic). Headless Chromium, forced
onto QUIC for the proxy's origin and trusting its certificate by its key's hash, loads a page,
its script and a large file through the proxy from portico-backend, and posts a body that comes
back whole: the Performance API names h3 for each. The TCP listener advertises it (Alt-Svc).
Hostile and odd datagrams are sent raw: an unknown version gets Version Negotiation, a packet
for no connection a stateless reset, Initials past the handshake limit a Retry (and a forged
Retry token nothing), garbage nothing at all, and the proxy serves on."""
import base64
import hashlib
import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import unittest

import harness
from harness import Backend
from proxy_harness import Proxy, make_certificate
from test_dashboard import browser, severe_console

INDEX = b"""<!doctype html><html><head><meta charset="utf-8"><title>h3</title>
<link rel="icon" href="data:,"></head>
<body><p id="probe">waiting</p><script src="app.js"></script></body></html>
"""
APP = b"document.getElementById('probe').textContent = 'ran';\n"
BIG = 3 * 1024 * 1024 + 17


def spki_hash(cert):
    """base64(SHA-256(SubjectPublicKeyInfo)): what --ignore-certificate-errors-spki-list takes."""
    der = subprocess.run(
        "openssl x509 -in '%s' -pubkey -noout | openssl pkey -pubin -outform der" % cert,
        shell=True, check=True, capture_output=True).stdout
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


def varint(n):
    if n < 64:
        return bytes([n])
    if n < 16384:
        return struct.pack(">H", 0x4000 | n)
    return struct.pack(">I", 0x80000000 | n)


def initial(dcid, scid, token=b"", size=1200, version=1):
    """A client Initial's header, with a payload of random bytes: all a server looks at before
    it does any handshake work (RFC 9000 17.2.2), padded to the 1,200 bytes a client must send."""
    head = (bytes([0xC0]) + struct.pack(">I", version) + bytes([len(dcid)]) + dcid +
            bytes([len(scid)]) + scid + varint(len(token)) + token)
    rest = size - len(head) - 2
    return head + struct.pack(">H", 0x4000 | rest) + os.urandom(rest)


def parse_long(packet):
    """(type bits, version, dcid, scid, rest) of a long-header packet."""
    version = struct.unpack(">I", packet[1:5])[0]
    n = packet[5]
    dcid = packet[6:6 + n]
    m = packet[6 + n]
    scid = packet[7 + n:7 + n + m]
    return (packet[0] & 0x30) >> 4, version, dcid, scid, packet[7 + n + m:]


class Http3Proxy(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="portico-h3-site-")
        cls.big = random.Random(3).randbytes(BIG)
        for name, data in (("index.html", INDEX), ("app.js", APP), ("big.bin", cls.big)):
            with open(os.path.join(cls.root, name), "wb") as f:
                f.write(data)
        cls.backend = Backend("--document-root", cls.root, workers=1)
        cls.certdir = tempfile.mkdtemp(prefix="portico-h3-cert-")
        cert, key = make_certificate(cls.certdir)
        cls.spki = spki_hash(cert)
        cls.proxy = Proxy([f"127.0.0.1:{cls.backend.port}"], tls=True, workers=2,
                          certificate=(cert, key), tls_listener_options={"quic": "true"})

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.backend.stop()
        shutil.rmtree(cls.root, ignore_errors=True)
        shutil.rmtree(cls.certdir, ignore_errors=True)

    def h3_browser(self):
        port = self.proxy.tls_port
        return browser(self, f"--origin-to-force-quic-on=localhost:{port}",
                       "--host-resolver-rules=MAP localhost 127.0.0.1",
                       f"--ignore-certificate-errors-spki-list={self.spki}")

    def h3_requests(self, code="200"):
        return self.proxy.metric("portico_requests_total", protocol="h3", code=code)

    def test_a_page_and_its_script_over_h3(self):
        driver = self.h3_browser()
        before = self.h3_requests()
        driver.get(f"https://localhost:{self.proxy.tls_port}/index.html")
        harness.wait_until(lambda: driver.find_element("id", "probe").text == "ran",
                           what="the page's script to run")
        protocols = driver.execute_script(
            "return performance.getEntriesByType('navigation').concat("
            "performance.getEntriesByType('resource')).map(e => "
            "[e.name.split('/').pop(), e.nextHopProtocol]);")
        self.assertEqual(sorted(protocols), [["app.js", "h3"], ["index.html", "h3"]])
        self.assertEqual(severe_console(driver), [])
        # Counted as each exchange ends, which can be a moment after its last byte was read.
        harness.wait_until(lambda: self.h3_requests() - before >= 2,
                           what="both requests counted as h3")

    def test_bodies_stream_both_ways(self):
        # 3 MiB down (more than the stream's flow-control window, and than the proxy's
        # high watermark), 2 MiB up and back through the echo app.
        driver = self.h3_browser()
        driver.get(f"https://localhost:{self.proxy.tls_port}/index.html")
        harness.wait_until(lambda: driver.find_element("id", "probe").text == "ran",
                           what="the page")
        got = driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            const hex = b => Array.from(new Uint8Array(b)).map(
                x => x.toString(16).padStart(2, '0')).join('');
            (async () => {
              const big = await (await fetch('/big.bin')).arrayBuffer();
              const up = new Uint8Array(2 * 1024 * 1024);
              for (let i = 0; i < up.length; i++) up[i] = (i * 7 + (i >> 10)) & 255;
              const r = await fetch('/echo', {method: 'POST', body: up});
              const back = await r.arrayBuffer();
              const nav = performance.getEntriesByType('resource').map(e => e.nextHopProtocol);
              done([big.byteLength, hex(await crypto.subtle.digest('SHA-256', big)),
                    r.status, back.byteLength,
                    hex(await crypto.subtle.digest('SHA-256', back)),
                    hex(await crypto.subtle.digest('SHA-256', up)), nav]);
            })().catch(e => done(String(e)));
        """)
        self.assertIsInstance(got, list, got)
        size, digest, status, back_size, back_digest, up_digest, protocols = got
        self.assertEqual((size, digest), (BIG, hashlib.sha256(self.big).hexdigest()))
        self.assertEqual((status, back_size, back_digest), (200, 2 * 1024 * 1024, up_digest))
        self.assertEqual(set(protocols), {"h3"})

    def test_tcp_responses_advertise_h3(self):
        port = self.proxy.tls_port
        for flag in ("--http1.1", "--http2"):
            out = subprocess.run(["curl", "-sk", flag, "-o", "/dev/null", "-D", "-",
                                  f"https://127.0.0.1:{port}/hello"],
                                 capture_output=True, text=True, timeout=30).stdout
            self.assertIn(f'alt-svc: h3=":{port}"; ma=86400', out.lower(), flag)
        # The cleartext listener has no QUIC beside it: nothing to advertise.
        out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-D", "-",
                              f"http://127.0.0.1:{self.proxy.port}/hello"],
                             capture_output=True, text=True, timeout=30).stdout
        self.assertNotIn("alt-svc", out.lower())

class RawDatagrams(unittest.TestCase):
    """Datagrams no browser sends, to a proxy of their own: no connection a browser left open
    (until its idle timeout) counts in the figures looked at."""

    @classmethod
    def setUpClass(cls):
        cls.backend = Backend(workers=1)
        cls.proxy = Proxy([f"127.0.0.1:{cls.backend.port}"], tls=True, workers=2,
                          tls_listener_options={"quic": "true"})

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.backend.stop()

    def udp(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(10)
        self.addCleanup(s.close)
        return s

    def test_an_unknown_version_gets_version_negotiation(self):
        s = self.udp()
        dcid, scid = os.urandom(8), os.urandom(8)
        s.sendto(initial(dcid, scid, version=0x1A2A3A4A), ("127.0.0.1", self.proxy.tls_port))
        reply = s.recv(2048)
        self.assertTrue(reply[0] & 0x80)
        _, version, rdcid, rscid, rest = parse_long(reply)
        self.assertEqual((version, rdcid, rscid), (0, scid, dcid))
        versions = [struct.unpack(">I", rest[i:i + 4])[0] for i in range(0, len(rest), 4)]
        self.assertIn(1, versions)

    def test_a_packet_for_no_connection_gets_a_stateless_reset(self):
        s = self.udp()
        # A short header (0x40: fixed bit) and a 17-byte ID of worker 0 that no connection has.
        packet = bytes([0x40 | 0x01]) + b"\x00" + os.urandom(16) + os.urandom(82)
        s.sendto(packet, ("127.0.0.1", self.proxy.tls_port))
        reply = s.recv(2048)
        self.assertEqual(reply[0] & 0xC0, 0x40)  # looks like a short-header packet
        self.assertGreaterEqual(len(reply), 21)
        self.assertLess(len(reply), len(packet))  # never as large as what provoked it

    def test_garbage_starts_nothing_and_the_proxy_serves_on(self):
        s = self.udp()
        rng = random.Random(7)
        for n in (0, 1, 5, 40, 1199, 1500):
            s.sendto(bytes([0x80]) + rng.randbytes(n), ("127.0.0.1", self.proxy.tls_port))
            s.sendto(rng.randbytes(n), ("127.0.0.1", self.proxy.tls_port))
        # A short Initial (under 1,200 bytes) starts nothing either.
        s.sendto(initial(os.urandom(8), os.urandom(8), size=600), ("127.0.0.1", self.proxy.tls_port))
        # Garbage may get a stateless reset or a Version Negotiation, never a connection.
        probe_scid = wait_for_probe(s, self.proxy.tls_port)
        self.assertEqual(len(probe_scid), 8)
        self.assertEqual(self.proxy.metric("portico_quic_connections"), 0)
        self.assertEqual(harness.http_get(self.proxy.port)[0], 200)


def wait_for_probe(s, port):
    """Sends a packet of an unknown version and reads until its Version Negotiation comes:
    what was sent before it has been read by then. Returns the probe's source ID."""
    scid = os.urandom(8)
    s.sendto(initial(os.urandom(8), scid, version=0x0A0A0A0A), ("127.0.0.1", port))
    while True:
        reply = s.recv(4096)
        if reply[0] & 0x80 and reply[1:5] == b"\0\0\0\0" and parse_long(reply)[2] == scid:
            return scid


class Http3Drain(unittest.TestCase):
    def test_a_graceful_stop_lets_the_request_under_way_finish(self):
        backend = Backend(workers=1)
        self.addCleanup(backend.stop)
        certdir = tempfile.mkdtemp(prefix="portico-h3-cert-")
        self.addCleanup(shutil.rmtree, certdir, True)
        cert, key = make_certificate(certdir)
        proxy = Proxy([f"127.0.0.1:{backend.port}"], tls=True, workers=1,
                      certificate=(cert, key), tls_listener_options={"quic": "true"})
        self.addCleanup(proxy.stop)
        driver = browser(self, f"--origin-to-force-quic-on=localhost:{proxy.tls_port}",
                         "--host-resolver-rules=MAP localhost 127.0.0.1",
                         f"--ignore-certificate-errors-spki-list={spki_hash(cert)}")
        driver.get(f"https://localhost:{proxy.tls_port}/hello")
        in_flight = lambda: json.loads(proxy.admin("/status"))["clusters"][0]["endpoints"][0][
            "in_flight"]
        driver.execute_script(
            "window.slow = fetch('/delay?ms=1500', {cache: 'no-store'}).then(async r => "
            "[r.status, await r.text(), performance.getEntriesByType('resource')"
            ".map(e => e.nextHopProtocol)]).catch(e => String(e));")
        harness.wait_until(lambda: in_flight() == 1, what="the slow request at the upstream")
        os.kill(proxy.process.proc.pid, signal.SIGTERM)
        got = driver.execute_async_script("window.slow.then(arguments[arguments.length - 1]);")
        self.assertIsInstance(got, list, got)
        self.assertEqual(got[0], 200)
        self.assertEqual(set(got[2]), {"h3"})
        # GOAWAY, the last stream done, the connection closed: the proxy is gone well within
        # its grace period (30 s).
        self.assertEqual(proxy.process.proc.wait(timeout=15), 0)


def udp_bound(port):
    """Whether a UDP socket is bound to port (/proc/net/udp)."""
    with open("/proc/net/udp") as f:
        next(f)
        return any(int(line.split()[1].split(":")[1], 16) == port for line in f)


class QuicReload(unittest.TestCase):
    def test_a_reload_turns_quic_off_and_on(self):
        backend = Backend(workers=1)
        self.addCleanup(backend.stop)
        proxy = Proxy([f"127.0.0.1:{backend.port}"], tls=True, workers=2,
                      tls_listener_options={"quic": "true"})
        self.addCleanup(proxy.stop)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(10)
        self.addCleanup(s.close)
        self.assertEqual(len(wait_for_probe(s, proxy.tls_port)), 8)
        generation = 1
        for quic in ("false", "true"):
            with open(proxy.config_path) as f:
                text = f.read()
            with open(proxy.config_path, "w") as f:
                f.write(text.replace(f"quic = {'true' if quic == 'false' else 'false'}",
                                     f"quic = {quic}"))
            generation += 1
            os.kill(proxy.process.proc.pid, signal.SIGHUP)
            harness.wait_until(lambda: f"every worker serves generation {generation}"
                               in proxy.process.read_log(), what=f"generation {generation}")
            # Off: the UDP sockets are closed (the endpoints gone with their connections); on
            # again: new ones answer.
            self.assertEqual(udp_bound(proxy.tls_port), quic == "true")
            if quic == "true":
                self.assertEqual(len(wait_for_probe(s, proxy.tls_port)), 8)
        self.assertEqual(harness.http_get(proxy.port)[0], 200)


class QuicRetry(unittest.TestCase):
    """retry_above_handshakes = 0: every client proves its address first."""

    @classmethod
    def setUpClass(cls):
        cls.backend = Backend(workers=1)
        cls.proxy = Proxy([f"127.0.0.1:{cls.backend.port}"], tls=True, workers=1,
                          tls_listener_options={"quic": "{ retry_above_handshakes = 0 }"})

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.backend.stop()

    def test_initials_get_a_retry_and_no_connection(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(10)
        self.addCleanup(s.close)
        before = self.proxy.metric("portico_quic_retries_total")
        for _ in range(20):
            dcid, scid = os.urandom(8), os.urandom(8)
            packet = initial(dcid, scid)
            s.sendto(packet, ("127.0.0.1", self.proxy.tls_port))
            reply = s.recv(4096)
            kind, version, rdcid, rscid, rest = parse_long(reply)
            self.assertEqual((kind, version, rdcid), (3, 1, scid))  # Retry, to the client's ID
            self.assertNotEqual(rscid, dcid)
            self.assertGreater(len(rest), 16)  # a token, then the 16-byte integrity tag
            self.assertLessEqual(len(reply), 3 * len(packet))
        self.assertEqual(self.proxy.metric("portico_quic_retries_total") - before, 20)
        self.assertEqual(self.proxy.metric("portico_quic_connections"), 0)

    def test_a_forged_retry_token_gets_nothing(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(10)
        self.addCleanup(s.close)
        before = self.proxy.metric("portico_quic_retries_total")
        # 0xb6: the first byte of ngtcp2's Retry tokens; the rest is not one it made.
        s.sendto(initial(os.urandom(8), os.urandom(8), token=b"\xb6" + os.urandom(80)),
                 ("127.0.0.1", self.proxy.tls_port))
        s.sendto(initial(os.urandom(8), os.urandom(8), token=b"\xb6" + os.urandom(80)),
                 ("127.0.0.1", self.proxy.tls_port))
        # The first reply is the probe's: neither Initial got a Retry or a connection.
        scid = os.urandom(8)
        s.sendto(initial(os.urandom(8), scid, version=0x0A0A0A0A), ("127.0.0.1", self.proxy.tls_port))
        reply = s.recv(4096)
        self.assertEqual(parse_long(reply)[1:3], (0, scid))
        self.assertEqual(self.proxy.metric("portico_quic_retries_total"), before)
        self.assertEqual(self.proxy.metric("portico_quic_connections"), 0)


if __name__ == "__main__":
    unittest.main()
