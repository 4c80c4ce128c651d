"""Load generators run in the background while a test changes the proxy under them (a reload,
an upgrade), with their outcome parsed: h2load's request counts and status classes, wrk's
socket errors and non-2xx responses. A failed request is anything but a 2xx answer."""
import re
import subprocess

import harness


class Load:
    def __init__(self, cmd, parse):
        harness.need(cmd[0])
        self.cmd, self.parse = cmd, parse
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, start_new_session=True)

    def running(self):
        return self.proc.poll() is None

    def result(self, timeout=120):
        out, _ = self.proc.communicate(timeout=timeout)
        return self.parse(out)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def parse_h2load(out):
    done = re.search(r"requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded, "
                     r"(\d+) failed, (\d+) errored, (\d+) timeout", out)
    codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out)
    if not done or not codes:
        raise AssertionError(f"unexpected h2load output:\n{out}")
    total, ok2xx = int(done.group(1)), int(codes.group(1))
    return {"total": total, "done": int(done.group(2)), "ok": ok2xx,
            "failed": total - ok2xx, "out": out}


def parse_wrk(out):
    total = re.search(r"(\d+) requests in", out)
    if not total:
        raise AssertionError(f"unexpected wrk output:\n{out}")
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)",
                       out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    failed = (sum(int(g) for g in errors.groups()) if errors else 0) + \
        (int(non2xx.group(1)) if non2xx else 0)
    return {"total": int(total.group(1)), "failed": failed, "out": out}


def h2load(url, n, c=10, m=10, *flags):
    return Load(["h2load", "-n", str(n), "-c", str(c), "-m", str(m), *flags, url], parse_h2load)


def wrk(url, seconds, c=20, threads=2):
    return Load(["wrk", "-t", str(threads), "-c", str(c), "-d", f"{seconds}s", url], parse_wrk)


class H2Load:
    """h2c load that behaves as browsers and gRPC do when a server drains (RFC 9113 6.8):
    after GOAWAY no new stream goes on the connection, streams above its last-stream-id were
    not processed and are sent again on a new connection, and the rest are awaited. h2load
    opens no new connection after a GOAWAY and counts every request it had left as failed, so
    it cannot watch a process drain (nginx's or anyone's); this can. A stream reset, a
    non-200 answer or a connection lost under a processed stream is a failure."""

    def __init__(self, port, path="/hello", connections=4, streams=8):
        import threading
        self.port, self.path, self.streams = port, path, streams
        self.ok = self.failed = self.retried = self.goaways = 0
        self.errors = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._run, daemon=True)
                        for _ in range(connections)]
        for t in self.threads:
            t.start()

    def _count(self, **kw):
        with self.lock:
            for k, v in kw.items():
                setattr(self, k, getattr(self, k) + v)

    def _run(self):
        retry = 0
        while not self.stopping.is_set():
            try:
                retry = self._connection(retry)
            except Exception as e:  # refused, reset, or a frame this client could not read
                with self.lock:
                    self.failed += 1
                    self.errors.append(repr(e))
                return

    def _connection(self, retry):
        # Frames by hand (hpack for the header blocks): python3-h2's state machine refuses
        # every frame after a GOAWAY, even those of the streams the GOAWAY says go on.
        import socket
        import struct
        import hpack
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        enc, dec = hpack.Encoder(), hpack.Decoder()

        def frame(kind, flags, sid, payload=b""):
            return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + \
                struct.pack(">I", sid) + payload

        sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0))
        headers = [(":method", "GET"), (":scheme", "http"), (":authority", "x"),
                   (":path", self.path)]
        open_streams, status, block = set(), {}, {}
        next_id, goaway, buf = 1, None, b""
        try:
            while True:
                out = b""
                while goaway is None and not self.stopping.is_set() and \
                        len(open_streams) < self.streams:
                    out += frame(1, 0x5, next_id, enc.encode(headers))  # END_STREAM|HEADERS
                    open_streams.add(next_id)
                    next_id += 2
                    if retry:
                        retry -= 1
                        self._count(retried=1)
                if out:
                    sock.sendall(out)
                if not open_streams:
                    return retry
                data = sock.recv(65536)
                if not data:
                    unprocessed = {s for s in open_streams if goaway is not None and s > goaway}
                    lost = open_streams - unprocessed
                    if lost:
                        self._count(failed=len(lost))
                        with self.lock:
                            self.errors.append(f"connection closed under streams {sorted(lost)}")
                    return retry + len(unprocessed)
                buf += data
                reply = b""
                while len(buf) >= 9:
                    length = int.from_bytes(buf[:3], "big")
                    if len(buf) < 9 + length:
                        break
                    kind, flags = buf[3], buf[4]
                    sid = int.from_bytes(buf[5:9], "big") & 0x7fffffff
                    payload, buf = buf[9:9 + length], buf[9 + length:]
                    ended = False
                    if kind == 0:  # DATA: give the window back at once
                        if length:
                            inc = struct.pack(">I", length)
                            reply += frame(8, 0, 0, inc) + frame(8, 0, sid, inc)
                        ended = bool(flags & 0x1)
                    elif kind in (1, 9):  # HEADERS, CONTINUATION
                        if kind == 1:
                            if flags & 0x8:  # PADDED
                                payload = payload[1:len(payload) - payload[0]]
                            if flags & 0x20:  # PRIORITY
                                payload = payload[5:]
                            block[sid] = (b"", bool(flags & 0x1))
                        got, end_stream = block[sid]
                        block[sid] = (got + payload, end_stream)
                        if flags & 0x4:  # END_HEADERS
                            got, end_stream = block.pop(sid)
                            for name, value in dec.decode(got):
                                if name == ":status":
                                    status.setdefault(sid, value)
                            ended = end_stream
                    elif kind == 3:  # RST_STREAM
                        open_streams.discard(sid)
                        if goaway is not None and sid > goaway:
                            retry += 1
                        else:
                            self._count(failed=1)
                            with self.lock:
                                self.errors.append(f"stream {sid} reset")
                    elif kind == 4 and not flags & 0x1:  # SETTINGS: acknowledged
                        reply += frame(4, 0x1, 0)
                    elif kind == 6 and not flags & 0x1:  # PING
                        reply += frame(6, 0x1, 0, payload)
                    elif kind == 7:  # GOAWAY: no new stream; above last-stream-id: again
                        goaway = int.from_bytes(payload[:4], "big") & 0x7fffffff
                        self._count(goaways=1)
                        again = {s for s in open_streams if s > goaway}
                        open_streams -= again
                        retry += len(again)
                    if ended and sid in open_streams:
                        open_streams.discard(sid)
                        self._count(**({"ok": 1} if status.pop(sid, None) == "200"
                                       else {"failed": 1}))
                if reply:
                    sock.sendall(reply)
        finally:
            sock.close()

    def total(self):
        with self.lock:
            return self.ok + self.failed

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=30)
        return {"ok": self.ok, "failed": self.failed, "retried": self.retried,
                "goaways": self.goaways, "errors": self.errors[:5]}
