"""The soak's faulty HTTP/1.1 origin, run as a process of its own so that the soak can kill it
(SIGKILL: a crash) and start it again on the same port. Each request asks for its own fault
with f=FAULT in its query:

  GET  /c/tok?t=TOKEN&f=F   ok: 200 with TOKEN as the body; stall: no answer for 30 s (the
                            proxy's response_timeout answers 504); reset: the connection reset
                            before any answer; resetmid: the head and part of the body, then a
                            reset; garbage: not HTTP; halfclose: the answer framed by the close,
                            the write side shut down after it while the proxy's side stays open;
                            slow: the body dribbled out over a quarter of a second
  POST /c/post?id=ID&f=F    the whole body read, then ID, its length and sha256 appended to the
                            record file (one write, O_APPEND, so that it survives a SIGKILL), then
                            ok: 200 "ID LENGTH SHA256"; or reset, stall, garbage as above

The record file is what the application applied: the soak asserts that no POST id is in it
twice. Run as: chaos_origin.py PORT RECORD_FILE; stops on SIGTERM."""
import hashlib
import os
import signal
import socket
import socketserver
import struct
import sys
import threading
import time
from urllib.parse import parse_qs, urlsplit

LINGER_RESET = struct.pack("ii", 1, 0)  # close() sends RST


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        conn = self.request
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.settimeout(60)
        f = conn.makefile("rb")
        try:
            while self.one(conn, f):
                pass
        except (OSError, ValueError):
            pass
        finally:
            f.close()

    def one(self, conn, f):
        """Serves one request; False when the connection is over."""
        line = f.readline()
        if not line:
            return False
        method, target, _ = line.decode("latin1").split(" ", 2)
        headers = {}
        while True:
            h = f.readline()
            if h in (b"\r\n", b""):
                break
            n, _, v = h.decode("latin1").partition(":")
            headers[n.strip().lower()] = v.strip()
        body = read_body(f, headers)
        url = urlsplit(target)
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        fault = q.get("f", "ok")
        if url.path == "/c/post" and method == "POST":
            digest = hashlib.sha256(body).hexdigest()
            answer = f"{q.get('id', '')} {len(body)} {digest}".encode()
            os.write(self.server.record_fd, answer + b"\n")
        elif url.path == "/c/tok":
            answer = q.get("t", "").encode()
        else:
            conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            return True
        if fault == "stall":
            time.sleep(30)  # the fault's shape: the proxy gives up first
            return False
        if fault == "reset":
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_RESET)
            return False
        if fault == "garbage":
            conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\nnot http at all\r\n\r\n")
            return False
        if fault == "resetmid":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (len(answer) + 100000)
                         + answer + b"x" * 1000)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_RESET)
            return False
        if fault == "halfclose":
            conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + answer)
            conn.shutdown(socket.SHUT_WR)
            while f.read1(65536):  # the proxy's side stays open until it closes it
                pass
            return False
        head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(answer)
        if fault == "slow":
            conn.sendall(head)
            step = max(1, len(answer) // 5)
            for i in range(0, len(answer), step):
                time.sleep(0.05)
                conn.sendall(answer[i:i + step])
            return True
        conn.sendall(head + answer)
        return True


def read_body(f, headers):
    if "content-length" in headers:
        n = int(headers["content-length"])
        body = f.read(n)
        if len(body) != n:
            raise ValueError("body cut short")
        return body
    if "chunked" in headers.get("transfer-encoding", ""):
        body = bytearray()
        while True:
            size = int(f.readline().split(b";")[0], 16)
            if size == 0:
                while f.readline() not in (b"\r\n", b""):
                    pass
                return bytes(body)
            body += f.read(size)
            f.read(2)
    return b""


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True  # started again on its port after a SIGKILL
    daemon_threads = True
    request_queue_size = 256

    def handle_error(self, request, client_address):
        pass


def main(port, record_path):
    server = Server(("127.0.0.1", port), Handler)
    server.record_fd = os.open(record_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    server.serve_forever()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
