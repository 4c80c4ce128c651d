#!/usr/bin/python3
"""TLS connections one after the other against 127.0.0.1:PORT, each a GET / over HTTP/1.0 read
to the end: full handshakes, or (--reuse) every connection resuming the session of the one
before (TLS 1.3 tickets or TLS 1.2 session IDs, whatever the server gives).

The client of the tls-full and tls-resumed workloads (what `openssl s_time -new/-reuse` does,
plus a status check per response and a run bounded by a count as well as by time). With
--reuse, one first connection gets the session and is not counted. No ALPN is offered, so the
servers speak HTTP/1.1 (answering an HTTP/1.0 request and closing).

Prints one JSON line: connections, resumed, errors, seconds, bytes.
"""
import argparse
import json
import socket
import ssl
import time

REQUEST = b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n"


def one(ctx, port, session):
    """One connection: (ok, resumed, session, bytes)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with ctx.wrap_socket(raw, server_hostname="localhost", session=session) as s:
            s.sendall(REQUEST)
            data = bytearray()
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            # Read after the response: a TLS 1.3 ticket has arrived by now.
            return (data.startswith((b"HTTP/1.0 200", b"HTTP/1.1 200")), s.session_reused,
                    s.session, len(data))


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("port", type=int)
    p.add_argument("--seconds", type=float, default=4.0)
    p.add_argument("--count", type=int, default=None,
                   help="stop after this many connections (or --seconds, whichever first)")
    p.add_argument("--reuse", action="store_true", help="resume the previous session")
    p.add_argument("--tls12", action="store_true", help="offer TLS 1.2 at most")
    a = p.parse_args()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if a.tls12:
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    session = None
    if a.reuse:
        _, _, session, _ = one(ctx, a.port, None)
    n = resumed = errors = nbytes = 0
    start = time.monotonic()
    deadline = start + a.seconds
    while (a.count is None or n < a.count) and time.monotonic() < deadline:
        try:
            ok, reused, new_session, size = one(ctx, a.port, session if a.reuse else None)
        except (OSError, ssl.SSLError):
            ok, reused, new_session, size = False, False, None, 0
        n += 1
        errors += not ok
        resumed += bool(reused)
        nbytes += size
        if a.reuse and new_session is not None:
            session = new_session
    print(json.dumps({"connections": n, "resumed": resumed, "errors": errors,
                      "seconds": time.monotonic() - start, "bytes": nbytes}), flush=True)


if __name__ == "__main__":
    main()
