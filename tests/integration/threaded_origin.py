"""What the test origins in a thread of the test process share: a quiet HTTP/1.1 handler whose
GET and HEAD go to its answer(head), and a threaded server that ignores clients cut off
mid-body (the proxy's side of a test that cuts them)."""
import http.server
import threading

import harness


class AnswerHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.answer(head=True)

    def do_GET(self):
        self.answer(head=False)

    def answer(self, head):
        raise NotImplementedError


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024

    def handle_error(self, request, client_address):
        pass


class ThreadedOrigin:
    """Serves handler on a free loopback port until stop(); the handler finds this object as
    self.server.origin."""

    def __init__(self, handler):
        self.port = harness.free_port()
        self.server = _Server(("127.0.0.1", self.port), handler)
        self.server.origin = self
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self):
        return f"127.0.0.1:{self.port}"

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
