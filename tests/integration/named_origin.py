"""An HTTP/1.1 origin in a thread of the test process that answers with its name, for the
tests that tell endpoints apart (load balancing, health checks, service discovery): after
`delay` seconds; /slow after one more second; /healthz with 503 while `bad` is set. It listens
on host (any loopback address) and port (picked here when not given); stop() ends it.
`checks` holds the time.monotonic() of each /healthz request."""
import http.server
import socketserver
import threading
import time

import harness


class NamedOrigin:
    def __init__(self, name, host="127.0.0.1", port=None, delay=0):
        self.port = port or harness.free_port()
        self.bad = False
        self.checks = []
        origin = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                if self.path == "/healthz":
                    origin.checks.append(time.monotonic())
                if self.path.startswith("/slow"):
                    time.sleep(1)
                time.sleep(delay)
                status = 503 if self.path == "/healthz" and origin.bad else 200
                body = name.encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.do_GET()

            def log_message(self, *args):
                pass

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server((host, self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
