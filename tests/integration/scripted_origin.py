"""An HTTP/1.1 origin whose n-th request gets what behaviour(n) says: a status, or (status,
seconds to wait first), or ("reset", seconds): the connection closed with no answer after that
long. Its body is "NAME STATUS". Counts requests (and notes each one's arrival time, method,
Host and body); threaded, so slow answers overlap."""
import http.server
import socket
import socketserver
import sys
import threading
import time


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        # Its head and body are two writes: without this, Nagle holds the body back for the
        # proxy's delayed ACK (tens of milliseconds a request).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.owner.lock:
            self.server.owner.connections.add(self.connection)

    def finish(self):
        with self.server.owner.lock:
            self.server.owner.connections.discard(self.connection)
        super().finish()

    def do_GET(self):
        o = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if "chunked" in (self.headers.get("Transfer-Encoding") or ""):
            body = self.read_chunked()
        with o.lock:
            o.requests += 1
            n = o.requests
            o.arrivals.append((time.monotonic(), self.command))
            o.hosts.append(self.headers.get("Host"))
            o.bodies.append(body)
        what = o.behaviour(n)
        status, delay = what if isinstance(what, tuple) else (what, 0)
        if delay:
            time.sleep(delay)  # the origin's scripted slowness, not a synchronisation
        if status == "reset":
            self.close_connection = True
            return
        body = f"{o.name} {status}\n".encode()
        try:
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the proxy cut this try (a per-try timeout, a hedge)

    do_POST = do_GET

    def read_chunked(self):
        body = b""
        while True:
            size = int(self.rfile.readline().split(b";")[0], 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b""):
                    pass  # trailers
                return body
            body += self.rfile.read(size)
            self.rfile.readline()


class _Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True  # an origin stopped and started again on its port
    # socketserver's default backlog of 5 drops SYNs when a burst of connections outpaces its
    # accepting thread, and a dropped SYN costs the proxy a second: a real origin listens deeper.
    request_queue_size = 128

    def handle_error(self, request, client_address):
        # The proxy closing a connection it gave up on (a hedge, a per-try timeout) is a
        # test's intent, not an error to print.
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


class ScriptedOrigin:
    def __init__(self, name, behaviour, port=0):
        """port: 0 for a free one, or the port of an origin stopped before (its return)."""
        self.name, self.behaviour = name, behaviour
        self.requests = 0
        self.arrivals = []  # (time.monotonic(), method) of each request
        self.connections = set()
        self.hosts, self.bodies = [], []  # each request's Host and body
        self.lock = threading.Lock()
        self.server = _Server(("127.0.0.1", port), _Handler)
        self.server.daemon_threads = True
        self.server.owner = self
        self.endpoint = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        """Gone: not listening, and its open connections (the proxy's pooled ones) closed."""
        self.server.shutdown()
        self.server.server_close()
        with self.lock:
            for c in self.connections:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
