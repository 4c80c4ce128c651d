"""An origin for the cache tests, in a thread of the test process. Every request is recorded
(method, path, fields) and counted; the response is chosen by the query:

  /any/path?cc=C&etag=E&lm=L&vary=V&age=A&expires=X&status=S&len=N&type=T&cl=LIE
      Cache-Control C, ETag E, Last-Modified L, Vary V, Age A, Expires X (each when given),
      status S (200), N bytes of body (100) that name the request's number, type T; cl: a
      Content-Length other than the body's (the connection is then closed after it)
  &vary_many=N         N Vary fields, each naming another request field
  &gate=1              the head waits until the test calls open_gate()
  &trickle=1           the body's second half waits until the test calls open_gate()
  &echo=NAME           the value of request field NAME ends the body
  &head_cc=C           a HEAD's Cache-Control instead
  &get_only=1          X-Get-Only: 1 on a GET's response, not a HEAD's
  &cookie=C            Set-Cookie: C=N, N the request's number (a 304's too)
  &cookie304=C         the same on a 304 only
  &cc304=C             a 304's Cache-Control instead

While failing is set, every answer is a 503. A conditional request whose If-None-Match names E (or whose If-Modified-Since is L) gets a
304 with the same fields."""
import threading
import urllib.parse

from threaded_origin import AnswerHandler, ThreadedOrigin


class _Handler(AnswerHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(length)
        self.answer(head=False)

    do_PUT = do_DELETE = do_POST

    def answer(self, head):
        origin = self.server.origin
        url = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(url.query))
        with origin.lock:
            origin.count += 1
            n = origin.count
            origin.requests.append((self.command, self.path, dict(self.headers)))
            origin.arrived.notify_all()
        if q.get("gate"):
            origin.gate.wait(30)
        etag, lm = q.get("etag"), q.get("lm")
        inm, ims = self.headers.get("If-None-Match"), self.headers.get("If-Modified-Since")
        status = 503 if origin.failing else int(q.get("status", "200"))
        if (etag and inm and etag in inm) or (lm and ims and not inm and ims == lm):
            status = 304
        body = b"response %d " % n
        body += b"x" * max(0, int(q.get("len", "100")) - len(body))
        if q.get("echo"):
            body += (self.headers.get(q["echo"]) or "-").encode()
        self.send_response(status)
        self.send_header("Content-Type", q.get("type", "text/plain"))
        if status == 304 and "cc304" in q:
            q["cc"] = q["cc304"]
        if head and "head_cc" in q:
            q["cc"] = q["head_cc"]
        if not head and q.get("get_only"):
            self.send_header("X-Get-Only", "1")
        for key, name in (("cc", "Cache-Control"), ("etag", "ETag"), ("lm", "Last-Modified"),
                          ("vary", "Vary"), ("age", "Age"), ("expires", "Expires")):
            if key in q:
                self.send_header(name, q[key])
        cookie = q.get("cookie") or (q.get("cookie304") if status == 304 else None)
        if cookie:
            self.send_header("Set-Cookie", f"{cookie}={n}")
        for i in range(int(q.get("vary_many", "0"))):
            self.send_header("Vary", f"x-field-{i}")
        if status == 304:
            self.end_headers()
            return
        if "cl" in q:
            self.send_header("Content-Length", q["cl"])
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if head:
            return
        if q.get("trickle"):
            half = len(body) // 2
            self.wfile.write(body[:half])
            self.wfile.flush()
            origin.gate.wait(30)
            self.wfile.write(body[half:])
        else:
            self.wfile.write(body)


class CacheOrigin(ThreadedOrigin):
    def __init__(self):
        self.requests = []
        self.count = 0
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)
        self.gate = threading.Event()
        self.failing = False  # every answer a 503 (the fields as asked)
        super().__init__(_Handler)

    def requests_for(self, path):
        with self.lock:
            return [r for r in self.requests if r[1] == path]

    def wait_requests(self, path, n, timeout=10):
        """Waits until n requests for path have arrived."""
        with self.lock:
            ok = self.arrived.wait_for(
                lambda: sum(1 for r in self.requests if r[1] == path) >= n, timeout)
        assert ok, f"{n} requests for {path} did not arrive"

    def open_gate(self):
        self.gate.set()

    def close_gate(self):
        self.gate.clear()

    def stop(self):
        self.gate.set()
        super().stop()
