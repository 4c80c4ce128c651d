"""SNI picks the certificate of the first `sni` entry that names the client's server name,
exactly or by "*." (one leftmost label), case aside; an unknown or absent name gets the
default certificate. Looked up by hash (tls/tls_context.cc), so many certificates cost a
handshake what one does; this holds the lookup to the order the entries are written in."""
import shutil
import socket
import ssl
import tempfile
import unittest

import harness
from proxy_harness import Proxy, make_certificate, toml_string


class ProxySni(unittest.TestCase):
    def setUp(self):
        harness.need("openssl")
        self.tmp = tempfile.mkdtemp(prefix="portico-sni-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.certs = {n: make_certificate(self.tmp, n) for n in
                      ["a.example", "wild.b.example", "x.b.example", "late.a.example"]}

        def entry(cert, names):
            c, k = self.certs[cert]
            return (f"{{ certificate = {toml_string(c)}, private_key = {toml_string(k)}, "
                    f"server_names = [{', '.join(toml_string(n) for n in names)}] }}")

        sni = ("[" + ", ".join([
            entry("a.example", ["a.example"]),
            entry("wild.b.example", ["*.B.example"]),
            # Later entries naming what an earlier one names are never chosen for it.
            entry("x.b.example", ["x.b.example", "only.x.example"]),
            entry("late.a.example", ["a.example", "late.a.example"]),
        ]) + "]")
        self.backend = harness.Backend(workers=1, unix=True)
        self.addCleanup(self.backend.stop)
        self.proxy = Proxy([f"unix:{self.backend.sock_path}"], tls=True, workers=1,
                           tls_options={"sni": sni})
        self.addCleanup(self.proxy.stop)

    def served(self, server_name):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        with socket.create_connection(("127.0.0.1", self.proxy.tls_port), timeout=10) as s:
            with ctx.wrap_socket(s, server_hostname=server_name) as t:
                der = t.getpeercert(binary_form=True)
        for name, (cert, _) in self.certs.items():
            with open(cert) as f:
                if ssl.PEM_cert_to_DER_cert(f.read()) == der:
                    return name
        return "default"

    def test_first_entry_that_names_it(self):
        cases = {
            "a.example": "a.example",          # not late.a.example, which names it later
            "A.EXAMPLE": "a.example",
            "late.a.example": "late.a.example",
            "x.b.example": "wild.b.example",   # the wildcard entry comes first
            "y.B.Example": "wild.b.example",
            "z.y.b.example": "default",       # "*." is one label
            "b.example": "default",
            "only.x.example": "x.b.example",
            "other.example": "default",
            None: "default",
        }
        got = {name: self.served(name) for name in cases}
        self.assertEqual(got, cases)


if __name__ == "__main__":
    unittest.main()
