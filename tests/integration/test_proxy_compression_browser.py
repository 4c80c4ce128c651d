"""Headless Chromium loads a page through the proxy, over cleartext and over TLS, whose HTML,
JavaScript and CSS come from portico-backend's document root, or from the proxy's own `static`
root, and are compressed by the proxy's `compress` (or served from precompressed siblings): the script must run (it sets a marker the test reads, and uses the stylesheet), and
the Performance API must show each asset arrived encoded (encodedBodySize < decodedBodySize).
Chromium offers zstd and br as well as gzip (to localhost over http too, a secure context);
a route that offers gzip alone makes the browser decode gzip. The coding the proxy chose is
read from its metrics."""
import os
import shutil
import tempfile
import unittest

import brotli

import harness
from harness import Backend
from proxy_harness import Proxy
from test_dashboard import browser, severe_console

INDEX = b"""<!doctype html><html><head><meta charset="utf-8"><title>compressed</title>
<link rel="icon" href="data:,"><link rel="stylesheet" href="style.css"></head>
<body><p id="probe">waiting</p><script src="app.js"></script></body></html>
"""


ROUTES = """
[[route]]
path_prefix = "/static/"
static = {{ alias = "{root}" }}
compress = true

[[route]]
path_prefix = "/pre/"
static = {{ alias = "{root}", precompressed = ["br"] }}

[[route]]
path_prefix = "/gzip/"
prefix_rewrite = "/"
cluster = "app"
compress = {{ encodings = ["gzip"] }}

[[route]]
cluster = "app"
compress = true
"""


def script():
    # Enough repeated code to be worth compressing, and a last line that proves it all ran.
    funcs = "".join(f"function f{i}(x) {{ return x * {i} + {i % 7}; }}\n" for i in range(2000))
    return (funcs + "var total = 0; for (var i = 0; i < 2000; i++) total += window['f' + i](1);\n"
            "document.getElementById('probe').textContent = 'ran ' + total;\n"
            "document.body.dataset.color = getComputedStyle(document.getElementById('probe'))"
            ".color;\n").encode()


def stylesheet():
    rules = "".join(f".c{i} {{ margin: {i % 9}px; padding: {i % 5}px; }}\n" for i in range(1500))
    return (rules + "#probe { color: rgb(1, 2, 3); }\n").encode()


class BrowserDecodes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="portico-compressed-site-")
        for name, data in (("index.html", INDEX * 20), ("app.js", script()),
                           ("style.css", stylesheet())):
            with open(os.path.join(cls.root, name), "wb") as f:
                f.write(data)
            with open(os.path.join(cls.root, name + ".br"), "wb") as f:
                f.write(brotli.compress(data))
        cls.backend = Backend("--document-root", cls.root, workers=1)
        cls.proxy = Proxy([f"127.0.0.1:{cls.backend.port}"], tls=True, workers=1,
                          catch_all=False, extra_config=ROUTES.format(root=cls.root))

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.backend.stop()
        shutil.rmtree(cls.root, ignore_errors=True)

    def codings_counted(self):
        return {c: self.proxy.metric("portico_compressed_responses_total", encoding=c)
                for c in ("gzip", "br", "zstd")}

    def load(self, base):
        # The proxy's certificate is its own, made for the test.
        driver = browser(self, "--ignore-certificate-errors")
        before = self.codings_counted()
        driver.get(base + "/index.html")
        harness.wait_until(lambda: driver.find_element("id", "probe").text.startswith("ran"),
                           what="the page's script to run")
        self.assertEqual(driver.find_element("id", "probe").text, "ran " + str(
            sum(i + i % 7 for i in range(2000))))
        self.assertEqual(driver.execute_script("return document.body.dataset.color"),
                         "rgb(1, 2, 3)")  # the stylesheet arrived whole
        sizes = driver.execute_script(
            "return performance.getEntriesByType('navigation').concat("
            "performance.getEntriesByType('resource')).map(e => "
            "[e.name, e.encodedBodySize, e.decodedBodySize]);")
        by_name = {name.rsplit("/", 1)[1]: (enc, dec) for name, enc, dec in sizes}
        for name in ("index.html", "app.js", "style.css"):
            enc, dec = by_name[name]
            self.assertGreater(dec, 0, name)
            self.assertLess(enc, dec / 2, f"{name}: {enc} bytes encoded, {dec} decoded")
        self.assertEqual(severe_console(driver), [])
        after = self.codings_counted()
        return {c: after[c] - before[c] for c in after}

    def test_over_cleartext_a_gzip_only_route(self):
        used = self.load(self.proxy.url + "/gzip")
        self.assertEqual(used, {"gzip": 3, "br": 0, "zstd": 0})

    def test_over_cleartext(self):
        used = self.load(self.proxy.url)
        self.assertEqual(sum(used.values()), 3, used)

    def test_files_from_the_proxys_own_root(self):
        before = self.proxy.metric("portico_sendfile_bytes_total")
        used = self.load(self.proxy.url + "/static")
        self.assertEqual(sum(used.values()), 3, used)
        self.assertEqual(self.proxy.metric("portico_sendfile_bytes_total"), before)

    def test_precompressed_siblings_from_the_proxys_own_root(self):
        used = self.load(f"https://localhost:{self.proxy.tls_port}/pre")
        self.assertEqual(used, {"gzip": 0, "br": 0, "zstd": 0})  # served as they are

    def test_over_tls_a_newer_coding(self):
        used = self.load(f"https://localhost:{self.proxy.tls_port}")
        self.assertEqual(used["gzip"], 0, used)
        self.assertEqual(used["br"] + used["zstd"], 3, used)


if __name__ == "__main__":
    unittest.main()
