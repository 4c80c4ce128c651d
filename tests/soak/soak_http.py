"""The soak's HTTP/1.1 clients (cleartext and TLS): keep-alive connections sending Plans one
after another, each answer read whole and judged; slow readers; clients that vanish mid-answer
(once its first bytes came) or mid-upload (after the 100 Continue that proves the proxy has
the request). A connection is dropped after any error, and after a random number of requests."""
import socket
import ssl
import struct
import threading
import time

import harness
import soak_plans

LINGER_RESET = struct.pack("ii", 1, 0)


class _Tracking:
    """A reader that knows whether any byte of an answer arrived."""

    def __init__(self, f):
        self.f, self.got = f, 0

    def readline(self):
        line = self.f.readline()
        self.got += len(line)
        return line

    def read(self, n=-1):
        data = self.f.read(n) if n >= 0 else self.f.read()
        self.got += len(data)
        return data


def tls_context(alpn):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(alpn)
    return ctx


def connect(port, tls, alpn, timeout=30):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if tls:
        s = tls_context(alpn).wrap_socket(s, server_hostname="localhost")
    return s


class Http1Client(threading.Thread):
    def __init__(self, ctx, name, port, tls, seed, kinds):
        super().__init__(daemon=True, name=name)
        self.ctx, self.port, self.tls, self.kinds = ctx, port, tls, kinds
        self.listener = "tls" if tls else "plain"
        import random
        self.rng = random.Random(seed)
        self.sock = self.f = None
        self.left = 0  # requests before this connection is dropped on purpose

    def close(self, reset=False):
        if self.sock is not None:
            if reset:
                try:
                    self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_RESET)
                except OSError:
                    pass
            try:
                self.f.close()
                self.sock.close()
            except OSError:
                pass
        self.sock = self.f = None

    def run(self):
        try:
            while not self.ctx.stopping.is_set():
                kind = self.rng.choices([k for k, _ in self.kinds], [w for _, w in self.kinds])[0]
                self.one(soak_plans.make_plan(self.rng, kind))
        except Exception as e:  # noqa: BLE001 - a client's own error is the soak's failure
            self.ctx.tally.fail("h1", f"client thread died: {e!r}")
        finally:
            self.close()

    def one(self, plan):
        ctx = self.ctx
        kind = "h1s-" + plan.kind if self.tls else "h1-" + plan.kind
        reused = self.sock is not None
        if not reused:
            try:
                self.sock = connect(self.port, self.tls, ["http/1.1"])
            except OSError as e:
                ctx.tally.fail(kind, f"connect: {e!r}")
                time.sleep(0.1)
                return
            self.f = self.sock.makefile("rb")
            self.left = self.rng.randint(1, 60)
        plan.start = time.monotonic()
        outcome, seen = self.exchange(plan, reused)
        plan.end = time.monotonic()
        if outcome is None:  # judged here, from what came
            return
        ctx.tally.note(kind, outcome, self.listener, seen, (plan.method, plan.path))
        soak_plans.note_post(ctx.tally, plan, outcome)

    def exchange(self, plan, reused):
        """Returns (outcome, seen); the connection is closed unless it may be used again."""
        head = f"{plan.method} {plan.path} HTTP/1.1\r\nHost: soak\r\n"
        for n, v in plan.headers:
            head += f"{n}: {v}\r\n"
        if plan.method == "POST":
            head += f"Content-Length: {len(plan.body)}\r\n"
        if plan.vanish == "upload":
            head += "Expect: 100-continue\r\n"
        head = head.encode() + b"\r\n"
        reader = _Tracking(self.f)
        sent_all = True
        try:
            if plan.vanish == "upload":
                self.sock.sendall(head)
            else:
                self.sock.sendall(head + plan.body)
        except OSError:
            sent_all = False
        if plan.vanish:
            return self.vanish(plan, reader)
        if plan.slow:
            return self.slow_read(plan, reader)
        try:
            resp = harness.read_http1_response(reader)
        except (OSError, AssertionError, ValueError):
            resp = None
        if resp is None:
            self.close()
            if reader.got == 0:
                # Closed before any byte of an answer: the proxy read nothing it counted,
                # unless a body was on its way (an early answer lost in a reset).
                why = "reused" if reused else "fresh"
                if plan.body or not sent_all:
                    return f"allowed: closed before an answer ({why}, body)", None
                return f"allowed: closed before an answer ({why})", False
            return plan.judge(0, b"", True, self.ctx.events), True
        if resp.status == 100:
            return "FAIL: unasked 100 Continue", True
        outcome = plan.judge(resp.status, resp.body, False, self.ctx.events)
        self.left -= 1
        if resp.header("connection") == "close" or self.left <= 0 or resp.version != "HTTP/1.1":
            self.close()
        return outcome, True

    def vanish(self, plan, reader):
        """Leaves once the answer began (or, mid-upload, once the 100 Continue came)."""
        try:
            line = reader.readline()
            if plan.vanish == "upload" and line.startswith(b"HTTP/1.1 100"):
                while reader.readline() not in (b"\r\n", b""):
                    pass
                self.sock.sendall(plan.body[:50000])
                time.sleep(0.05)
        except OSError:
            pass
        self.close(reset=True)
        if reader.got:
            return "vanished", True
        return "allowed: closed before an answer (vanish)", None

    def slow_read(self, plan, reader):
        """Reads the answer in small pieces, with pauses: a client slower than the origin."""
        try:
            line = reader.readline()
            if not line:
                self.close()
                return "allowed: closed before an answer (slow)", False
            status = int(line.split()[1])
            length = None
            while True:
                h = reader.readline()
                if h in (b"\r\n", b""):
                    break
                if h.lower().startswith(b"content-length:"):
                    length = int(h.split(b":")[1])
            body = bytearray()
            if length is not None:
                while len(body) < length:
                    piece = reader.read(min(32768, length - len(body)))
                    if not piece:
                        break
                    body += piece
                    time.sleep(0.02)
                cut = len(body) < length
            else:
                cut = True
        except (OSError, ValueError, IndexError):
            self.close()
            return plan.judge(0, b"", True, self.ctx.events), True if reader.got else None
        outcome = plan.judge(status, bytes(body), cut, self.ctx.events)
        self.close()
        return outcome, True
