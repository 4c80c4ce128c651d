"""h2o serving files (bench/peers/h2o-files.conf): the proxy suite's origin, and a peer of the
backend suite.

As the origin (listen="unix") it is nobody's own code, and it speaks HTTP/1.1 and h2c (prior
knowledge) on one unix socket, so every proxy, whichever protocol it uses upstream, reaches
the same server doing the same work. Its document root holds hello.txt (the index: GET /
returns the 12-byte hello), static.txt (the backend suite's 25-byte file) and bytes (the bytes
workload's N bytes: GET /bytes?n=N is that file, the query ignored); for the h3 suite also
1mib.bin (MIB_PATH: 1 MiB whatever --bytes says, the h3-1mib download). It has no counter app.
"""
import os
import subprocess

from .proxies import fd_limit
from .servers import (HELLO, STATIC_BODY, STATIC_PATH, BenchError, RunningServer, ServerSpec,
                      first_line, free_port, render, write_docroot)

H2_MAX_STREAMS = 256  # portico-backend's default SETTINGS_MAX_CONCURRENT_STREAMS
MIB_PATH = "/1mib.bin"  # the h3 suite's 1 MiB download (mib_file=True)
MIB = 1048576


class H2oFiles(ServerSpec):
    """listen: "unix" (a socket in the workdir: the proxy suite's origin) or "tcp" (a free
    127.0.0.1 port: the backend suite). body_bytes: size of the `bytes` file (None: none).
    mib_file: also MIB_PATH, a 1 MiB file (the h3 suite)."""

    name = "h2o"
    programs = ("h2o",)
    protocols = ("h1", "h2c")
    apps = ("hello", "static", "bytes")
    not_applicable = {"counter-shm": "no counter app (files only)",
                      "counter-mc": "no counter app (files only)"}

    def __init__(self, workers=1, listen="tcp", body_bytes=None, name=None, mib_file=False):
        super().__init__(workers)
        self.listen = listen
        self.body_bytes = body_bytes
        self.mib_file = mib_file
        if body_bytes is None:
            self.apps = ("hello", "static")
        if name:
            self.name = name

    def version(self):
        return first_line(["h2o", "--version"])

    def describe(self):
        where = "one unix socket" if self.listen == "unix" else "one TCP port"
        files = f"/ = hello.txt ({len(HELLO)} bytes), {STATIC_PATH} ({len(STATIC_BODY)} bytes)"
        if self.body_bytes is not None:
            files += f", /bytes ({self.body_bytes} bytes, the query ignored)"
        if self.mib_file:
            files += f", {MIB_PATH} ({MIB} bytes)"
        return (f"peers/h2o-files.conf: num-threads {self.workers}, HTTP/1.1 and h2c (prior "
                f"knowledge) on {where}; files: {files}; keep-alive 75 s "
                "(http1-request-timeout, http2-idle-timeout), "
                f"{H2_MAX_STREAMS} streams per h2 connection, no access log")

    def start(self, workdir, cpu, workload=None):
        files = {"hello.txt": HELLO, STATIC_PATH[1:]: STATIC_BODY}
        if self.body_bytes is not None:
            files["bytes"] = b"x" * self.body_bytes
        if self.mib_file:
            files[MIB_PATH[1:]] = b"x" * MIB
        root = write_docroot(workdir, files)
        if self.listen == "unix":
            endpoint = os.path.join(workdir, "origin.sock")
            listen = f"  type: unix\n  port: {endpoint}"
        else:
            endpoint = free_port()
            listen = f"  host: 127.0.0.1\n  port: {endpoint}"
        conf = render("h2o-files.conf", workdir, prefix=workdir, workers=self.workers,
                      max_connections=min(20000, fd_limit() - 200), listen=listen,
                      docroot=root, h2_max_streams=H2_MAX_STREAMS)
        return RunningServer(self, ["h2o", "-c", conf], workdir, {"h1": endpoint,
                                                                   "h2c": endpoint}, cpu)


def check_h2c(endpoint, path="/", expect=HELLO):
    """One GET over h2c with prior knowledge (curl) on a unix socket or TCP port: the origin
    must speak h2c on the socket the h2c-upstream proxies use."""
    where = (["--unix-socket", endpoint, f"http://localhost{path}"] if isinstance(endpoint, str)
             else [f"http://127.0.0.1:{endpoint}{path}"])
    argv = ["curl", "-sS", "--http2-prior-knowledge", "--max-time", "5",
            "-w", "\n%{http_version} %{http_code}"] + where
    proc = subprocess.run(argv, capture_output=True, timeout=10)
    body, _, status = proc.stdout.rpartition(b"\n")
    if proc.returncode != 0 or status != b"2 200" or body != expect:
        raise BenchError(f"h2c GET {path} on {endpoint} gave {status!r} {body[:100]!r} "
                         f"(curl exit {proc.returncode}: {proc.stderr.decode()[-300:]})")
