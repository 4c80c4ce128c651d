#!/usr/bin/python3
"""The training run of a profile-guided build (deploy/pgo-build.sh).

Runs BUILD's portico in front of its portico-backend (1 worker, unix socket) with the
defaults a user runs (forwarded fields and request ids on, metrics on) and drives it with
h2load over what an edge serves: HTTP/1.1, h2c and h2 over TLS from the client, HTTP/1.1 and
h2c to the origin, GETs and POSTs with a body, small and 64 KiB responses, and /metrics. Then
it stops portico with SIGTERM: the counts are written when it exits. Every request must get a
2xx, or the run fails (a profile of error pages would lay out the wrong code).

  deploy/pgo-train.py --build-dir BUILD [--requests N] [--ports PLAIN,TLS,ADMIN]
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from lib.servers import endpoint_open, free_port, make_certificate  # noqa: E402

# (h2load arguments, path, what it trains, kind): kind "tls" goes to the TLS port, "post"
# sends the 4 KiB body, "few" sends a tenth of the requests; every other to the plain port.
WORKLOADS = [
    (["--h1", "-c", "50"], "/", "HTTP/1.1 keep-alive to an HTTP/1.1 origin", ""),
    (["-c", "50", "-m", "10"], "/", "h2c, 10 streams a connection, HTTP/1.1 origin", ""),
    (["-c", "10", "-m", "100"], "/", "h2c, 100 streams a connection, HTTP/1.1 origin", ""),
    (["--h1", "-c", "50"], "/h2c/hello", "HTTP/1.1 to an h2c origin", ""),
    (["-c", "50", "-m", "10"], "/h2c/hello", "h2c to an h2c origin", ""),
    (["--h1", "-c", "50"], "/", "HTTP/1.1 over TLS", "tls"),
    (["-c", "50", "-m", "10"], "/", "h2 over TLS (ALPN)", "tls"),
    (["--h1", "-c", "20"], "/echo", "HTTP/1.1 POST of 4 KiB, echoed", "post"),
    (["-c", "20", "-m", "10"], "/echo", "h2c POST of 4 KiB, echoed", "post"),
    (["--h1", "-c", "20"], "/static/64k.bin", "HTTP/1.1, 64 KiB file", "few"),
    (["-c", "20", "-m", "10"], "/static/64k.bin", "h2c, 64 KiB file", "few"),
]


def wait_for(what, ready, proc, timeout=30):
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None:
            sys.exit(f"pgo-train: {what} exited with {proc.returncode} before it was ready")
        if time.monotonic() > deadline:
            sys.exit(f"pgo-train: {what} not ready after {timeout} s")
        time.sleep(0.05)


CONFIG = """\
[server]
workers = 2

[[listener]]
address = "127.0.0.1:{port}"

[[listener]]
address = "127.0.0.1:{tls_port}"
tls = {{ certificate = "{cert}", private_key = "{key}" }}

[admin]
address = "127.0.0.1:{admin_port}"

[[cluster]]
name = "h1"
endpoints = ["unix:{dir}/app.sock"]

[[cluster]]
name = "h2c"
endpoints = ["unix:{dir}/app.sock"]
protocol = "h2c"

[[route]]
path_prefix = "/h2c/"
prefix_rewrite = "/"
cluster = "h2c"

[[route]]
path_prefix = "/"
cluster = "h1"
"""


def run_h2load(args, path, kind, requests, ports, body):
    n = requests // 10 if kind == "few" else requests
    scheme, port = ("https", ports["tls"]) if kind == "tls" else ("http", ports["plain"])
    cmd = ["h2load", "-t", "1", "-n", str(n)] + args
    if kind == "post":
        cmd += ["-d", body]
    cmd.append(f"{scheme}://127.0.0.1:{port}{path}")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    ok = re.search(r"status codes: (\d+) 2xx", out.stdout)
    if out.returncode != 0 or not ok or int(ok.group(1)) != n:
        sys.exit(f"pgo-train: {' '.join(cmd)} did not get {n} 2xx:\n{out.stdout}{out.stderr}")
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--requests", type=int, default=40000, help="per workload (a tenth for "
                    "the 64 KiB file)")
    ap.add_argument("--ports", help="PLAIN,TLS,ADMIN: the ports portico listens on "
                    "(default: free ones, picked as bench/run picks them)")
    opts = ap.parse_args()
    portico = os.path.join(opts.build_dir, "proxy", "portico")
    backend = os.path.join(opts.build_dir, "backend", "portico-backend")
    for b in (portico, backend):
        if not os.access(b, os.X_OK):
            sys.exit(f"pgo-train: {b} is not built")
    with tempfile.TemporaryDirectory(prefix="portico-pgo-") as d:
        tls = make_certificate(d)
        os.makedirs(f"{d}/www/static")
        with open(f"{d}/www/static/64k.bin", "wb") as f:
            f.write(b"p" * 65536)
        body = f"{d}/body"
        with open(body, "wb") as f:
            f.write(b"b" * 4096)
        picked = ([int(p) for p in opts.ports.split(",")] if opts.ports else
                  [free_port(), free_port(), free_port()])
        ports = dict(zip(("plain", "tls", "admin"), picked))
        with open(f"{d}/portico.toml", "w") as f:
            f.write(CONFIG.format(port=ports["plain"], tls_port=ports["tls"],
                                  admin_port=ports["admin"], dir=d, cert=tls.cert,
                                  key=tls.key))
        log = open(f"{d}/log", "w")
        app = subprocess.Popen([backend, "--workers", "1", "--listen", f"unix:{d}/app.sock",
                                "--document-root", f"{d}/www"], stdout=log, stderr=log)
        proxy = None
        try:
            wait_for("portico-backend", lambda: endpoint_open(f"{d}/app.sock"), app)
            proxy = subprocess.Popen([portico, "-c", f"{d}/portico.toml"], stdout=log,
                                     stderr=log)
            wait_for("portico", lambda: all(endpoint_open(p) for p in ports.values()), proxy)
            total = 0
            for args, path, what, kind in WORKLOADS:
                started = time.monotonic()
                n = run_h2load(args, path, kind, opts.requests, ports, body)
                total += n
                print(f"pgo-train: {n} requests, {what} ({time.monotonic() - started:.1f} s)",
                      flush=True)
            for _ in range(20):
                urllib.request.urlopen(f"http://127.0.0.1:{ports['admin']}/metrics").read()
            proxy.send_signal(signal.SIGTERM)
            code = proxy.wait(timeout=60)
            proxy = None
            if code != 0:
                log.flush()
                sys.exit(f"pgo-train: portico exited with {code}:\n{open(f'{d}/log').read()}")
            print(f"pgo-train: {total} requests; portico stopped, its profile written")
        finally:
            for p in (proxy, app):
                if p is not None and p.poll() is None:
                    p.send_signal(signal.SIGTERM)
                    try:
                        p.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        p.kill()
                        p.wait()


if __name__ == "__main__":
    main()
