"""TLS to an upstream ([[cluster]] tls), against nginx with TLS that asks for a client
certificate: the endpoint's certificate is verified against the cluster's CA and its name
(server_name, sent as SNI), Portico presents its client certificate (mTLS), a second
connection resumes the first's session, and ALPN says http/1.1, or h2 for an HTTP/2 cluster. A
wrong CA or a wrong name is a 502 with the reason in the error log; a missing client
certificate is no handshake failure (nginx asks for one and judges it per request): nginx's own
400 comes back through, answered by the upstream; verify = false takes any certificate."""
import os
import shutil
import subprocess
import tempfile
import unittest

import harness
from harness import wait_until
from proxy_harness import Proxy, toml_string

NGINX_CONF = """
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log info;
events {{ worker_connections 256; }}
http {{
    access_log {d}/access.log;
    client_body_temp_path {d}/client_body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    server {{
        listen 127.0.0.1:{port} ssl http2;
        ssl_certificate {d}/server.pem;
        ssl_certificate_key {d}/server.key;
        ssl_client_certificate {d}/ca.pem;
        ssl_verify_client on;
        keepalive_timeout 0;
        location / {{
            return 200 "client=$ssl_client_s_dn reused=$ssl_session_reused alpn=$ssl_alpn_protocol\\n";
        }}
    }}
}}
"""


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_pki(d):
    """A CA, a server certificate for upstream.test and 127.0.0.1, a client certificate, and a
    second CA that signed nothing here."""
    for ca in ("ca", "other-ca"):
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                "-nodes", "-keyout", f"{d}/{ca}.key", "-out", f"{d}/{ca}.pem", "-days", "2",
                "-subj", f"/CN=Test {ca}")
    for name, ext in (("server", "subjectAltName=DNS:upstream.test,IP:127.0.0.1"),
                      ("client", "extendedKeyUsage=clientAuth")):
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", f"{d}/{name}.key", "-out", f"{d}/{name}.csr", "-subj",
                f"/CN=portico-{name}")
        with open(f"{d}/{name}.ext", "w") as f:
            f.write(ext + "\n")
        openssl("x509", "-req", "-in", f"{d}/{name}.csr", "-CA", f"{d}/ca.pem", "-CAkey",
                f"{d}/ca.key", "-CAcreateserial", "-out", f"{d}/{name}.pem", "-days", "2",
                "-extfile", f"{d}/{name}.ext")
        os.chmod(f"{d}/{name}.key", 0o600)


class UpstreamTls(unittest.TestCase):
    def setUp(self):
        harness.need("nginx", "openssl")
        self.backend = harness.Backend(workers=1)
        self.addCleanup(self.backend.stop)
        self.d = tempfile.mkdtemp(prefix="portico-utls-")
        self.addCleanup(shutil.rmtree, self.d, ignore_errors=True)
        make_pki(self.d)
        self.port = harness.free_port()
        conf = os.path.join(self.d, "nginx.conf")
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(d=self.d, port=self.port))
        self.nginx = harness.Process(["nginx", "-p", self.d, "-c", conf, "-g", "daemon off;"],
                                     os.path.join(self.d, "nginx.log"))
        self.addCleanup(self.nginx.stop)
        wait_until(lambda: harness.port_open("127.0.0.1", self.port), what="nginx")

    def proxy(self, clusters, protocol="http1"):
        """clusters: name -> the tls table's keys (TOML values)."""
        parts = []
        for name, tls in clusters.items():
            table = ", ".join(f"{k} = {v}" for k, v in tls.items())
            parts += ["[[cluster]]", f'name = "{name}"', f'protocol = "{protocol}"',
                      f'endpoints = ["127.0.0.1:{self.port}"]', f"tls = {{ {table} }}", "",
                      "[[route]]", f'path_prefix = "/{name}"', f'cluster = "{name}"', ""]
        p = Proxy([f"127.0.0.1:{self.backend.port}"], workers=1, routes_first="\n".join(parts))
        self.addCleanup(p.stop)
        return p

    def f(self, name):
        return toml_string(os.path.join(self.d, name))

    def test_verified_mutual_tls_with_resumption(self):
        mtls = {"ca": self.f("ca.pem"), "server_name": '"upstream.test"',
                "certificate": self.f("client.pem"), "private_key": self.f("client.key")}
        p = self.proxy({"good": mtls, "ip": {**mtls, "server_name": '"127.0.0.1"'}})
        status, body = harness.http_get(p.port, "/good/x")
        self.assertEqual(status, 200, body)
        self.assertIn(b"client=CN=portico-client", body)
        self.assertIn(b"alpn=http/1.1", body)
        # nginx keeps no connection alive: the next request needs a new one, which resumes
        # the first one's session.
        status, body = harness.http_get(p.port, "/good/x")
        self.assertEqual(status, 200, body)
        self.assertIn(b"reused=r", body)
        status, body = harness.http_get(p.port, "/ip/x")  # the IP address as the verified name
        self.assertEqual(status, 200, body)

    def test_http2_over_tls_by_alpn(self):
        mtls = {"ca": self.f("ca.pem"), "server_name": '"upstream.test"',
                "certificate": self.f("client.pem"), "private_key": self.f("client.key")}
        p = self.proxy({"h2": mtls}, protocol="h2c")
        for _ in range(3):  # several streams on the one connection
            status, body = harness.http_get(p.port, "/h2/x")
            self.assertEqual(status, 200, body)
            self.assertIn(b"alpn=h2", body)
            self.assertIn(b"client=CN=portico-client", body)

    def test_refusals_are_502_with_the_reason_logged(self):
        client = {"certificate": self.f("client.pem"), "private_key": self.f("client.key")}
        p = self.proxy({
            "wrongca": {"ca": self.f("other-ca.pem"), "server_name": '"upstream.test"', **client},
            "wrongname": {"ca": self.f("ca.pem"), "server_name": '"other.test"', **client},
            "nocert": {"ca": self.f("ca.pem"), "server_name": '"upstream.test"'},
            "noverify": {"verify": "false", **client}})
        self.assertEqual(harness.http_get(p.port, "/wrongca/x")[0], 502)
        wait_until(lambda: "certificate verify failed" in p.read_log() or
                   "unable to get local issuer certificate" in p.read_log(),
                   what="the wrong CA logged")
        # The error log says each kind of failure at most once a second: ask until it has.
        wait_until(lambda: harness.http_get(p.port, "/wrongname/x")[0] == 502 and
                   "hostname mismatch" in p.read_log(), interval=0.2, what="the wrong name logged")
        # nginx refuses a request without the certificate it requires with a 400 of its own:
        # its page, counted as the upstream's answer, not one of Portico's.
        status, body = harness.http_get(p.port, "/nocert/x")
        self.assertEqual(status, 400)
        self.assertIn(b"No required SSL certificate was sent", body)
        self.assertEqual(p.metric("portico_requests_total", code="400", answered_by="upstream"), 1)
        self.assertEqual(harness.http_get(p.port, "/noverify/x")[0], 200)


if __name__ == "__main__":
    unittest.main()
