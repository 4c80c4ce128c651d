"""TLS policy (issue 10, item 8): TLS 1.2 at least by default (min_version = "1.3" raises it),
ECDHE + AEAD ciphers only for TLS 1.2 by default, RFC 9113 9.2.2's blocklist enforced (a
blocklisted cipher the operator allowed gets HTTP/1.1, never h2), session ticket keys rotated
with the previous key still accepted, an OCSP response stapled from a file, a private key every
user can read warned about by -t, and cipher lists OpenSSL refuses reported as FILE:LINE:COL."""
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import unittest

import harness
from proxy_harness import PORTICO, Proxy


def client_context(max_tls12=False, ciphers=None, alpn=("h2", "http/1.1")):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if max_tls12:
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    if ciphers:
        ctx.set_ciphers(ciphers)
    ctx.set_alpn_protocols(list(alpn))
    return ctx


def handshake(port, ctx, session=None):
    """(ssl socket, None) after a handshake, or (None, the error)."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s = ctx.wrap_socket(raw, server_hostname="localhost", session=session)
        return s, None
    except (ssl.SSLError, OSError) as e:
        raw.close()
        return None, e


def s_client(port, *args):
    return subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}",
                           "-servername", "localhost", *args],
                          input=b"", capture_output=True, timeout=20)


class TlsPolicy(unittest.TestCase):
    def setUp(self):
        self.backend = harness.Backend(workers=1)
        self.addCleanup(self.backend.stop)

    def proxy(self, **tls_options):
        p = Proxy([f"127.0.0.1:{self.backend.port}"], workers=1, tls=True,
                  tls_options=tls_options)
        self.addCleanup(p.stop)
        return p

    def test_tls_1_1_is_refused_and_1_2_and_1_3_served(self):
        p = self.proxy()
        r = s_client(p.tls_port, "-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0")
        self.assertNotEqual(r.returncode, 0, r.stdout[-500:])
        for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
            ctx = client_context()
            ctx.minimum_version = ctx.maximum_version = version
            s, err = handshake(p.tls_port, ctx)
            self.assertIsNone(err, version)
            s.close()

    def test_plain_http_to_the_tls_port_gets_nginxs_400(self):
        # Issue 22, defect 7: the connection was reset. A request line gets a clear-text 400,
        # as nginx's; anything else that is no ClientHello is still just closed.
        p = self.proxy()
        for method in (b"GET", b"POST", b"HEAD"):
            with socket.create_connection(("127.0.0.1", p.tls_port), timeout=10) as s:
                s.sendall(method + b" /hello HTTP/1.1\r\nHost: x\r\nUser-Agent: t\r\n\r\n")
                data = b""
                while chunk := s.recv(4096):
                    data += chunk
            self.assertTrue(data.startswith(b"HTTP/1.1 400 Bad Request\r\n"), (method, data))
            self.assertTrue(data.endswith(b"\r\n\r\nThe plain HTTP request was sent to HTTPS "
                                          b"port\n"), data)
        with socket.create_connection(("127.0.0.1", p.tls_port), timeout=10) as s:
            s.sendall(b"\x00\x01 binary\r\n\r\n")
            try:
                self.assertEqual(s.recv(4096), b"")
            except ConnectionResetError:
                pass
        s, err = handshake(p.tls_port, client_context())  # and TLS is served on
        self.assertIsNone(err)
        s.close()

    def test_min_version_1_3(self):
        p = self.proxy(min_version='"1.3"')
        s, err = handshake(p.tls_port, client_context(max_tls12=True))
        self.assertIsNotNone(err)
        s, err = handshake(p.tls_port, client_context())
        self.assertIsNone(err)
        self.assertEqual(s.version(), "TLSv1.3")
        s.close()

    def test_default_tls12_ciphers_are_ecdhe_aead_only(self):
        p = self.proxy()
        s, err = handshake(p.tls_port, client_context(max_tls12=True,
                                                      ciphers="ECDHE-ECDSA-AES128-SHA"))
        self.assertIsNotNone(err, "a CBC cipher was accepted by default")
        s, err = handshake(p.tls_port, client_context(max_tls12=True))
        self.assertIsNone(err)
        self.assertRegex(s.cipher()[0], "GCM|CHACHA20")
        self.assertEqual(s.selected_alpn_protocol(), "h2")
        s.close()

    def test_blocklisted_cipher_gets_http11_not_h2(self):
        p = self.proxy(ciphers='"ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES128-GCM-SHA256"')
        s, err = handshake(p.tls_port, client_context(max_tls12=True,
                                                      ciphers="ECDHE-ECDSA-AES128-SHA"))
        self.assertIsNone(err)
        self.assertEqual(s.cipher()[0], "ECDHE-ECDSA-AES128-SHA")
        self.assertEqual(s.selected_alpn_protocol(), "http/1.1")
        s.sendall(b"GET /hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        self.assertTrue(s.recv(100).startswith(b"HTTP/1.1 200 "))
        s.close()
        s, err = handshake(p.tls_port, client_context(max_tls12=True,
                                                      ciphers="ECDHE-ECDSA-AES128-GCM-SHA256"))
        self.assertIsNone(err)
        self.assertEqual(s.selected_alpn_protocol(), "h2")
        s.close()

    def test_ticket_keys_rotate_and_the_previous_key_still_opens(self):
        period = 2.0
        p = self.proxy(ticket_key_rotation=str(period))
        ctx = client_context(max_tls12=True)
        s, err = handshake(p.tls_port, ctx)
        self.assertIsNone(err)
        session, got_at = s.session, time.monotonic()
        s.close()
        self.assertTrue(session.has_ticket)
        # Resumed with the same ticket until its key has left both slots: that is after the
        # second rotation, more than one period from now (at most two).
        stopped = None
        while stopped is None and time.monotonic() - got_at < 3 * period + 2:
            s, err = handshake(p.tls_port, ctx, session=session)
            self.assertIsNone(err)
            if not s.session_reused:
                stopped = time.monotonic() - got_at
            s.close()
            time.sleep(0.1)  # the pace of the probes; the deadline is the rotation's
        self.assertIsNotNone(stopped, "the ticket was never refused: no rotation")
        self.assertGreater(stopped, period - 0.1, "the previous key did not open the ticket")
        self.assertLess(stopped, 2 * period + 1)

    def test_ocsp_response_is_stapled(self):
        d = tempfile.mkdtemp(prefix="portico-ocsp-")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        self.addCleanup(subprocess.run, ["rm", "-rf", d])

        def sh(*cmd):
            subprocess.run(cmd, cwd=d, check=True, capture_output=True)
        sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
           "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=test CA")
        sh("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
           "-nodes", "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=localhost")
        with open(os.path.join(d, "ext"), "w") as f:
            f.write("subjectAltName=DNS:localhost\n")
        sh("openssl", "x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
           "-CAcreateserial", "-out", "leaf.pem", "-days", "2", "-extfile", "ext")
        serial = subprocess.run(["openssl", "x509", "-in", "leaf.pem", "-noout", "-serial"],
                                cwd=d, capture_output=True, text=True, check=True).stdout
        with open(os.path.join(d, "index.txt"), "w") as f:
            f.write(f"V\t300101000000Z\t\t{serial.strip().split('=')[1]}\tunknown\t/CN=localhost\n")
        sh("openssl", "ocsp", "-issuer", "ca.pem", "-cert", "leaf.pem", "-reqout", "req.der")
        sh("openssl", "ocsp", "-index", "index.txt", "-rsigner", "ca.pem", "-rkey", "ca.key",
           "-CA", "ca.pem", "-reqin", "req.der", "-respout", "resp.der", "-ndays", "1")
        from proxy_harness import make_certificate
        other, other_key = make_certificate(d, "other.example")
        sni = (f'[{{ server_names = ["other.example"], certificate = "{other}", '
               f'private_key = "{other_key}" }}]')
        p = Proxy([f"127.0.0.1:{self.backend.port}"], workers=1, tls=True,
                  certificate=(os.path.join(d, "leaf.pem"), os.path.join(d, "leaf.key")),
                  tls_options={"ocsp_staple": f'"{os.path.join(d, "resp.der")}"', "sni": sni})
        self.addCleanup(p.stop)
        out = s_client(p.tls_port, "-status").stdout.decode(errors="replace")
        self.assertIn("OCSP Response Status: successful", out)
        self.assertIn("Cert Status: good", out)
        # The response is about the default certificate: never stapled to an SNI entry's.
        out = s_client(p.tls_port, "-status", "-servername", "other.example").stdout.decode(
            errors="replace")
        self.assertIn("subject=CN = other.example", out)
        self.assertIn("OCSP response: no response sent", out)

    def test_check_warns_of_a_world_readable_key_and_refuses_bad_ciphers(self):
        d = tempfile.mkdtemp(prefix="portico-tlscheck-")
        self.addCleanup(shutil.rmtree, d, ignore_errors=True)
        self.addCleanup(subprocess.run, ["rm", "-rf", d])
        from proxy_harness import make_certificate
        cert, key = make_certificate(d)
        os.chmod(key, 0o644)
        path = os.path.join(d, "p.toml")

        def check(extra):
            with open(path, "w") as f:
                f.write(f'''[[listener]]
address = "127.0.0.1:8443"
tls = {{ certificate = "{cert}", private_key = "{key}"{extra} }}

[[cluster]]
name = "app"
endpoints = ["127.0.0.1:9000"]

[[route]]
cluster = "app"
''')
            return subprocess.run([PORTICO, "-t", "-c", path], capture_output=True, text=True)

        r = check("")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stderr, r"p\.toml:3:\d+: warning: private key .* readable by every user")
        os.chmod(key, 0o600)
        self.assertNotIn("warning", check("").stderr)
        r = check(', ciphers = "NOT-A-CIPHER"')
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stderr, r"p\.toml:3:\d+: .*no TLS 1.2 cipher")
        r = check(', min_version = "1.1"')
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stderr, r'p\.toml:3:\d+: .*min_version is "1.2" or "1.3"')


if __name__ == "__main__":
    unittest.main()
