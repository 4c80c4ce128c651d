"""portico convert-nginx on real configurations: Debian's own (nginx.conf with its includes,
and sites-available/default), the nginx configurations of bench/peers, and one written to
use every directive the converter carries over. Each converted file passes `portico -t`; for
the bench ones and the written one, nginx and the converted Portico are started in turn on the
same ports in front of the same portico-backend, and answer the same requests with the same
statuses, bodies and redirect targets."""
import http.client
import os
import re
import shutil
import ssl
import string
import subprocess
import tempfile
import unittest

import harness
import proxy_harness

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
PEERS = os.path.join(ROOT, "bench", "peers")


def convert(path):
    r = subprocess.run([proxy_harness.PORTICO, "convert-nginx", path], capture_output=True,
                       text=True, timeout=30)
    return r.returncode, r.stdout, r.stderr


def check(test, toml_text, directory):
    path = os.path.join(directory, "converted.toml")
    with open(path, "w") as f:
        f.write(toml_text)
    t = subprocess.run([proxy_harness.PORTICO, "-t", "-c", path], capture_output=True,
                       text=True, timeout=30)
    test.assertEqual(t.returncode, 0, t.stderr + "\n" + toml_text)
    return path


def request(port, method, path, host="localhost", body=None, tls=False, headers=None):
    """(status, body, location) of one request on a fresh connection."""
    if tls:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=ctx)
    else:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, body=body, headers={"Host": host, **(headers or {})})
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, data, resp.getheader("Location")
    finally:
        conn.close()


class Nginx:
    """nginx on a configuration file, in the foreground, its prefix a temporary directory."""

    def __init__(self, conf, prefix, ports):
        for d in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi", "logs"):
            os.makedirs(os.path.join(prefix, d), exist_ok=True)
        self.proc = harness.Process(["nginx", "-p", prefix + "/", "-c", conf, "-g",
                                     "daemon off;"], os.path.join(prefix, "nginx.out"))
        harness.wait_until(lambda: all(harness.port_open("127.0.0.1", p) for p in ports),
                           what="nginx listening")

    def stop(self):
        self.proc.stop()


class Portico:
    def __init__(self, conf, tmp, ports):
        self.proc = harness.Process([proxy_harness.PORTICO, "-c", conf],
                                    os.path.join(tmp, "portico.out"))
        harness.wait_until(lambda: all(harness.port_open("127.0.0.1", p) for p in ports),
                           what="portico listening")

    def stop(self):
        self.proc.stop()


class ConvertNginx(unittest.TestCase):
    def setUp(self):
        harness.need("nginx")
        self.tmp = tempfile.mkdtemp(prefix="portico-convert-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def same_answers(self, nginx_conf, ports, requests, admin_port=None):
        """Runs nginx, then the converted configuration, on the same ports; compares."""
        code, toml_text, warnings = convert(nginx_conf)
        self.assertEqual(code, 0, warnings)
        admin = harness.free_port()
        toml_text = toml_text.replace('address = "127.0.0.1:9901"', f'address = "127.0.0.1:{admin}"')
        conf = check(self, toml_text, self.tmp)
        nginx = Nginx(nginx_conf, self.tmp, ports)
        try:
            expected = [request(*r[:3], **r[3] if len(r) > 3 else {}) for r in requests]
        finally:
            nginx.stop()
        portico = Portico(conf, self.tmp, ports)
        self.addCleanup(portico.stop)
        got = [request(*r[:3], **r[3] if len(r) > 3 else {}) for r in requests]
        for r, e, g in zip(requests, expected, got):
            self.assertEqual(g[0], e[0], f"{r}: status (nginx {e}, portico {g})")
            if e[0] < 300 or e[0] == 404 and b"nginx" not in e[1]:
                self.assertEqual(g[1], e[1], f"{r}: body")
            if e[2]:
                # Where to, not how: nginx writes absolute Locations with its own port.
                self.assertEqual(re.sub(r"^https?://[^/]*", "", g[2] or ""),
                                 re.sub(r"^https?://[^/]*", "", e[2]), f"{r}: Location")
        # Answers by method, path and options: {"GET /": (status, body, location)}.
        return toml_text, warnings, dict(zip((f"{r[1]} {r[2]}{r[3] if len(r) > 3 else ''}"
                                              for r in requests), got))

    def test_debian_configurations(self):
        for path in ("/etc/nginx/nginx.conf", "/etc/nginx/sites-available/default"):
            code, toml_text, warnings = convert(path)
            self.assertEqual(code, 0, warnings)
            check(self, toml_text, self.tmp)
            self.assertIn('path_prefix = "/"', toml_text)
            self.assertIn('root = "/var/www/html"', toml_text)
            self.assertIn('try_files = ["$uri", "$uri/", "=404"]', toml_text)
            self.assertIn('address = "[::]:80"', toml_text)
        # Every directive not carried over is named with its place and why.
        code, _, warnings = convert("/etc/nginx/nginx.conf")
        self.assertRegex(warnings, r"/etc/nginx/nginx.conf:1: warning: user: not carried over")
        self.assertRegex(warnings, r"/etc/nginx/nginx.conf:\d+: warning: sendfile: not needed")
        self.assertRegex(warnings, r"ssl_protocols: TLSv1 is not carried over")
        for line in warnings.splitlines()[:-1]:
            self.assertRegex(line, r"^/etc/nginx/\S+:\d+: warning: \w+: ")

    def bench_template(self, name, **values):
        with open(os.path.join(PEERS, name)) as f:
            text = string.Template(f.read()).substitute(prefix=self.tmp, workers=1, **values)
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_bench_hello(self):
        docroot = os.path.join(self.tmp, "docroot")
        os.makedirs(docroot)
        with open(os.path.join(docroot, "static.txt"), "w") as f:
            f.write("static bytes\n")
        port, h2c = harness.free_port(), harness.free_port()
        conf = self.bench_template("nginx-hello.conf", port=port, h2c_port=h2c,
                                   static_path="/static.txt", docroot=docroot)
        _, _, got = self.same_answers(conf, [port, h2c], [
            (port, "GET", "/"), (port, "GET", "/anything"), (port, "GET", "/static.txt"),
            (port, "HEAD", "/"), (port, "GET", "/static.txt?x=1")])
        self.assertEqual(got["GET /"][:2], (200, b"hello world\n"))
        self.assertEqual(got["GET /static.txt"][:2], (200, b"static bytes\n"))

    def test_bench_proxy(self):
        backend = harness.Backend(unix=True)
        self.addCleanup(backend.stop)
        cert, key = proxy_harness.make_certificate(self.tmp)
        port, h2c, tls = harness.free_port(), harness.free_port(), harness.free_port()
        conf = self.bench_template(
            "nginx-proxy.conf", port=port, h2c_port=h2c, tls_port=tls, cert=cert, key=key,
            nofile=4096, max_connections=1024, origin_nginx=f"unix:{backend.sock_path}",
            proxy_cache_path="", upstream_keepalive="        keepalive 16;",
            proxy_keepalive='            proxy_http_version 1.1;\n'
                            '            proxy_set_header Connection "";',
            proxy_cache="")
        _, _, got = self.same_answers(conf, [port, h2c, tls], [
            (port, "GET", "/"), (port, "GET", "/hello"), (port, "GET", "/status/404"),
            (port, "GET", "/bytes?n=5000"), (port, "POST", "/echo", {"body": b"x" * 1000}),
            (tls, "GET", "/hello", {"tls": True}), (port, "GET", "/nothing-here")])
        self.assertEqual(got["GET /hello"][:2], (200, b"hello world\n"))
        self.assertEqual(got["GET /status/404"][0], 404)

    def test_every_directive(self):
        backend = harness.Backend(unix=True)
        self.addCleanup(backend.stop)
        docroot = os.path.join(self.tmp, "www")
        os.makedirs(os.path.join(docroot, "sub"))
        for name, text in (("a.txt", "file a\n"), ("index.html", "<p>index</p>\n"),
                           ("sub/b.txt", "file b\n"), ("sub/c.css", "p {}\n")):
            with open(os.path.join(docroot, name), "w") as f:
                f.write(text)
        os.makedirs(os.path.join(self.tmp, "cache"))
        cert, key = proxy_harness.make_certificate(self.tmp)
        port, tls = harness.free_port(), harness.free_port()
        conf = os.path.join(self.tmp, "nginx.conf")
        with open(os.path.join(self.tmp, "upstreams.conf"), "w") as f:
            f.write(f"""
upstream app {{
    server unix:{backend.sock_path} weight=2 max_fails=3 fail_timeout=5s;
    keepalive 8;
    hash $http_x_user consistent;
}}
""")
        with open(conf, "w") as f:
            f.write(f"""user root;
worker_processes 1;
pid {self.tmp}/nginx.pid;
error_log {self.tmp}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    include {self.tmp}/upst*.conf;
    limit_req_zone $binary_remote_addr zone=api:10m rate=1000r/s;
    proxy_cache_path {self.tmp}/cache levels=1:2 keys_zone=c:1m max_size=10m;
    gzip on;
    gzip_types application/json;
    gzip_comp_level 5;
    gzip_min_length 100;
    client_max_body_size 64k;
    keepalive_timeout 30s;
    proxy_connect_timeout 3s;
    proxy_read_timeout 20s;
    ssl_protocols TLSv1.2 TLSv1.3;
    # The first server of a listen is its default: any other name.
    server {{
        listen 127.0.0.1:{port};
        server_name other.test;
        return 302 http://example.test/;
    }}
    server {{
        listen 127.0.0.1:{port};
        server_name example.test www.example.test;
        rewrite ^/legacy$ /new permanent;
        location = /ping {{ return 200 "pong\\n"; }}
        location /old/ {{ return 301 https://$host$request_uri; }}
        location /api/ {{
            proxy_pass http://app/;
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Env "prod";
            add_header X-Served-By portico;
            limit_req zone=api burst=10 nodelay;
        }}
        location ~ \\.txt$ {{ root {docroot}; }}
        location /assets/ {{ alias {docroot}/sub/; expires 1h; }}
        location /cached/ {{ proxy_pass http://app/; proxy_cache c; }}
        location / {{ root {docroot}; try_files $uri $uri/ @app; }}
        location @app {{ proxy_pass http://app; }}
    }}
    server {{
        listen 127.0.0.1:{tls} ssl;
        server_name example.test;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        location / {{ proxy_pass http://app; }}
    }}
}}
""")
        h = {"host": "example.test"}
        toml_text, warnings, got = self.same_answers(conf, [port, tls], [
            (port, "GET", "/ping", h), (port, "GET", "/old/x?y=1", h), (port, "GET", "/legacy", h),
            (port, "GET", "/api/hello", h), (port, "GET", "/api/status/503", h),
            (port, "GET", "/a.txt", h), (port, "GET", "/sub/b.txt", h),
            (port, "GET", "/assets/b.txt", h), (port, "GET", "/assets/c.css", h), (port, "GET", "/", h), (port, "GET", "/hello", h),
            (port, "GET", "/no/such/file", h), (port, "GET", "/cached/bytes?n=10", h),
            (port, "GET", "/", {"host": "other.test"}),
            (port, "GET", "/", {"host": "unknown.test"}),
            (port, "GET", "/hello", {"host": "www.example.test"}),
            (port, "POST", "/echo", {"host": "example.test", "body": b"x" * 100_000}),
            (tls, "GET", "/hello", {"tls": True, "host": "example.test"})])
        h = str(h)
        self.assertEqual(got["GET /ping" + h][:2], (200, b"pong\n"))
        self.assertEqual(got["GET /api/hello" + h][:2], (200, b"hello world\n"))
        self.assertEqual(got["GET /assets/c.css" + h][:2], (200, b"p {}\n"))
        # nginx: a regular expression beats a prefix; the alias cannot serve a .txt
        self.assertEqual(got["GET /assets/b.txt" + h][0], 404)
        self.assertEqual(got["GET /hello" + h][:2], (200, b"hello world\n"))  # try_files' @app
        self.assertEqual(got["GET /legacy" + h][0], 301)
        self.assertEqual(got["POST /echo" + str({"host": "example.test", "body": b"x" * 100_000})][0],
                         413)
        for key in ('lb = "ring_hash"', 'hash_on = "header:x-user"', "max_idle_per_endpoint = 8",
                    '"x-env" = "prod"', '"x-served-by" = "portico"', "rate_limit = { name = \"api\"",
                    "burst = 10, nodelay = true", 'prefix_rewrite = "/"', "connect_timeout = 3",
                    "response_timeout = 20", "max_body_bytes = 65536", 'path_exact = "/ping"',
                    'path_regex = ".*\\\\.txt"', "gzip_level = 5", "min_length = 100",
                    '"@upstream"', "expires = 3600", f'disk = "{self.tmp}/cache"',
                    'scheme = "https"', "weight = 2", "consecutive_gateway_errors = 3",
                    'host = "www.example.test"', 'min_version = "1.2"'):
            self.assertIn(key, toml_text)
        # What nginx does that Portico leaves out is named, with its place.
        self.assertNotIn("warning: proxy_set_header", warnings)
        self.assertRegex(warnings, r"nginx.conf:5: warning: worker_connections: not needed")


if __name__ == "__main__":
    unittest.main()
