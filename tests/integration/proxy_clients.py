"""The clients of the proxy tests: curl in each protocol mode, returning what came back."""
import os
import subprocess
import tempfile

# Each client mode: the curl flags, and whether it talks to the TLS listener.
CLIENTS = {
    "h1": (["--http1.1"], False),
    "h2c": (["--http2-prior-knowledge"], False),
    "h2c-upgrade": (["--http2"], False),
    "h2-tls": (["--http2"], True),
    "h1-tls": (["--http1.1"], True),
}


class CurlResult:
    def __init__(self, status, version, headers, body, exit_code, stderr):
        self.status = status
        self.version = version
        self.headers = headers  # list of (lower name, value) of the final response
        self.body = body
        self.exit_code = exit_code
        self.stderr = stderr

    def header(self, name):
        for n, v in self.headers:
            if n == name:
                return v
        return None

    def __repr__(self):
        return (f"<{self.status} HTTP/{self.version} exit={self.exit_code} "
                f"{len(self.body)} bytes {self.stderr.strip()[:200]!r}>")


def curl(proxy, mode, path, extra=(), timeout=60):
    flags, tls = CLIENTS[mode]
    if tls:
        url = f"https://localhost:{proxy.tls_port}{path}"
        flags = flags + ["-k", "--resolve", f"localhost:{proxy.tls_port}:127.0.0.1"]
    else:
        url = f"http://127.0.0.1:{proxy.port}{path}"
    with tempfile.TemporaryDirectory() as d:
        body_path = os.path.join(d, "body")
        head_path = os.path.join(d, "head")
        cmd = ["curl", "-sS", "-o", body_path, "-D", head_path, "-w",
               "%{http_code} %{http_version}", "--max-time", str(timeout), *flags, *extra, url]
        p = subprocess.run(cmd, capture_output=True, timeout=timeout + 10)
        status, _, version = p.stdout.decode().partition(" ")
        body = b""
        if os.path.exists(body_path):
            with open(body_path, "rb") as f:
                body = f.read()
        headers = []
        if os.path.exists(head_path):
            with open(head_path, "rb") as f:
                blocks = f.read().decode("latin-1").split("\r\n\r\n")
            final = [b for b in blocks if b.strip()]
            for line in (final[-1].split("\r\n")[1:] if final else []):
                n, _, v = line.partition(":")
                headers.append((n.strip().lower(), v.strip()))
        return CurlResult(int(status or 0), version, headers, body, p.returncode,
                          p.stderr.decode(errors="replace"))
