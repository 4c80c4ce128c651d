"""An origin for the compression tests, in a thread of the test process, answering by query:

  /doc?len=N&type=T          200 with N bytes of JSON-like text (len 0: an empty body)
       &status=S             that status instead
       &etag=E&vary=V&cc=C&ce=E2&ranges=1   those fields (cc: Cache-Control, ce:
                             Content-Encoding, ranges: Accept-Ranges: bytes)
       &chunked=1            the body chunked, with no Content-Length
  /stream                    text/event-stream, chunked: line i ("data: i") is sent once the
                             test calls release(i), so the test decides when each one leaves
  /stream?lines=N            N lines, then the end

HEAD answers the fields a GET would have, with no body."""
import threading
import urllib.parse

from threaded_origin import AnswerHandler, ThreadedOrigin


def body_of(n):
    words = b'{"id": 42, "name": "portico", "tags": ["edge", "proxy"]}\n'
    return (words * (n // len(words) + 1))[:n]


class _Handler(AnswerHandler):
    def answer(self, head):
        url = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(url.query))
        self.server.origin.requests.append((self.command, self.path, dict(self.headers)))
        if url.path == "/stream":
            self.stream(int(q.get("lines", "3")))
            return
        body = body_of(int(q.get("len", "1000")))
        status = int(q.get("status", "200"))
        self.send_response(status)
        self.send_header("Content-Type", q.get("type", "application/json"))
        for key, name in (("etag", "ETag"), ("vary", "Vary"), ("cc", "Cache-Control"),
                          ("ce", "Content-Encoding")):
            if key in q:
                self.send_header(name, q[key])
        if q.get("ranges"):
            self.send_header("Accept-Ranges", "bytes")
        if status in (204, 304):
            self.end_headers()
            return
        if q.get("chunked"):
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            if not head:
                for at in range(0, len(body), 4096):
                    piece = body[at:at + 4096]
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.write(b"0\r\n\r\n")
            return
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def stream(self, lines):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        origin = self.server.origin
        for i in range(lines):
            if not origin.released[i].wait(30):
                return
            line = b"data: %d\n\n" % i
            self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class CompressibleOrigin(ThreadedOrigin):
    def __init__(self):
        self.requests = []
        self.released = [threading.Event() for _ in range(100)]
        super().__init__(_Handler)

    def release(self, i):
        self.released[i].set()

    def stop(self):
        for e in self.released:
            e.set()
        super().stop()
