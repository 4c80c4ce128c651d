"""SNI picks the certificate of the first `sni` entry that names the client's server name,
exactly or by "*." (one leftmost label), case aside; an unknown or absent name gets the
default certificate. Looked up by hash (tls/tls_context.cc), so many certificates cost a
handshake what one does; this holds the lookup to the order the entries are written in."""
import os
import shutil
import socket
import ssl
import subprocess
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
        # An RSA entry beside the ECDSA default: its handshakes must not fall back on the
        # default's key type. And an entry whose file carries a chain after the leaf.
        rsa = (os.path.join(self.tmp, "rsa.pem"), os.path.join(self.tmp, "rsa.key"))
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                        rsa[1], "-out", rsa[0], "-days", "2", "-subj", "/CN=rsa.example"],
                       check=True, capture_output=True)
        self.certs["rsa.example"] = rsa
        leaf, key = make_certificate(self.tmp, "chain.example")
        with open(leaf, "a") as out, open(self.certs["a.example"][0]) as extra:
            out.write(extra.read())
        self.certs["chain.example"] = (leaf, key)

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
            entry("rsa.example", ["rsa.example"]),
            entry("chain.example", ["chain.example"]),
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
                end = "-----END CERTIFICATE-----"
                first = f.read().split(end)[0] + end + "\n"  # the leaf, ahead of any chain
                if ssl.PEM_cert_to_DER_cert(first) == der:
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
            "rsa.example": "rsa.example",
            "chain.example": "chain.example",
            None: "default",
        }
        got = {name: self.served(name) for name in cases}
        self.assertEqual(got, cases)

    def test_an_entry_sends_the_chain_of_its_file(self):
        out = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{self.proxy.tls_port}",
                              "-servername", "chain.example", "-showcerts"], input=b"",
                             capture_output=True, timeout=20).stdout.decode(errors="replace")
        self.assertIn(" 0 s:CN = chain.example", out)
        self.assertIn(" 1 s:CN = a.example", out)


if __name__ == "__main__":
    unittest.main()
