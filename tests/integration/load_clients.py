"""Load generators run in the background while a test changes the proxy under them (a reload,
an upgrade), with their outcome parsed: h2load's request counts and status classes, wrk's
socket errors and non-2xx responses. A failed request is anything but a 2xx answer."""
import http.client
import re
import signal
import subprocess
import threading
import time

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

    def interrupt(self, timeout=120):
        """Ends a load started to run longer than its scenario (wrk prints its summary on
        SIGINT), so that no scenario depends on a load generator outliving it by luck; the
        result, and whether it was still running when told to end (it must be)."""
        was_running = self.running()
        if was_running:
            self.proc.send_signal(signal.SIGINT)
        return was_running, self.result(timeout)

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
    non-200 answer, or a connection lost while a stream the server may have processed is open,
    is a failure. Frames are read by hand (hpack for the header blocks): python3-h2's state
    machine refuses every frame after a GOAWAY, even those of the streams it says go on."""

    def __init__(self, port, path="/hello", connections=4, streams=8):
        import threading
        self.port, self.path, self.streams = port, path, streams
        self.ok = self.failed = self.retried = self.goaways = self.header_table_sizes = 0
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

    def _fail(self, n, why):
        with self.lock:
            self.failed += n
            self.errors.append(why)

    def _run(self):
        retry = 0
        while not self.stopping.is_set():
            conn = _H2Connection(self)
            try:
                retry = conn.run(retry)
            except OSError as e:
                lost = conn.maybe_processed()
                if conn.goaway is not None and not lost:
                    # After the GOAWAY and its last stream: a write (a WINDOW_UPDATE) met the
                    # close. Nothing was lost; what was not processed goes again.
                    retry += conn.retry_later + len(conn.open)
                    continue
                self._fail(max(1, len(lost)), f"{e!r} with goaway={conn.goaway} "
                           f"(code {conn.goaway_code}) open={sorted(conn.open)}")
                return
            except Exception as e:  # a frame this client could not read
                self._fail(1, repr(e))
                return
            finally:
                conn.sock.close()

    def total(self):
        with self.lock:
            return self.ok + self.failed

    def table_sizes(self):
        """How many SETTINGS_HEADER_TABLE_SIZE the server has sent: each is followed."""
        with self.lock:
            return self.header_table_sizes

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=30)
        return {"ok": self.ok, "failed": self.failed, "retried": self.retried,
                "goaways": self.goaways, "errors": self.errors[:5]}


class _H2Connection:
    """One connection of H2Load's."""

    def __init__(self, load):
        import socket
        import hpack
        self.load = load
        self.sock = socket.create_connection(("127.0.0.1", load.port), timeout=10)
        self.enc, self.dec = hpack.Encoder(), hpack.Decoder()
        self.open, self.status, self.block = set(), {}, {}
        self.next_id, self.goaway, self.buf = 1, None, b""
        self.goaway_code = None  # named in a failure: a drain (0) or the server's complaint
        self.retry_later = 0  # streams a GOAWAY said were not processed

    @staticmethod
    def frame(kind, flags, sid, payload=b""):
        import struct
        return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + \
            struct.pack(">I", sid) + payload

    def maybe_processed(self):
        return {s for s in self.open if self.goaway is None or s <= self.goaway}

    def run(self, retry):
        """Sends and reads until no stream is open and no new one may go; returns how many
        requests are still to be sent again."""
        load, frame = self.load, self.frame
        headers = [(":method", "GET"), (":scheme", "http"), (":authority", "x"),
                   (":path", load.path)]
        self.sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0))
        while True:
            out = b""
            while self.goaway is None and not load.stopping.is_set() and \
                    len(self.open) < load.streams:
                out += frame(1, 0x5, self.next_id, self.enc.encode(headers))
                self.open.add(self.next_id)
                self.next_id += 2
                if retry:
                    retry -= 1
                    load._count(retried=1)
            if out:
                self.sock.sendall(out)
            if not self.open:
                return retry + self.retry_later
            data = self.sock.recv(65536)
            if not data:
                lost = self.maybe_processed()
                if lost:
                    load._fail(len(lost), f"connection closed under streams {sorted(lost)}"
                               f" (GOAWAY last-stream-id {self.goaway}, code {self.goaway_code})")
                return retry + self.retry_later + len(self.open - lost)
            self.buf += data
            reply = b""
            while len(self.buf) >= 9:
                length = int.from_bytes(self.buf[:3], "big")
                if len(self.buf) < 9 + length:
                    break
                kind, flags = self.buf[3], self.buf[4]
                sid = int.from_bytes(self.buf[5:9], "big") & 0x7fffffff
                payload, self.buf = self.buf[9:9 + length], self.buf[9 + length:]
                reply += self.on_frame(kind, flags, sid, payload)
            if reply:
                self.sock.sendall(reply)

    def on_frame(self, kind, flags, sid, payload):
        import struct
        load, frame = self.load, self.frame
        reply, ended = b"", False
        if kind == 0:  # DATA: the window given back at once
            if payload:
                inc = struct.pack(">I", len(payload))
                reply = frame(8, 0, 0, inc) + frame(8, 0, sid, inc)
            ended = bool(flags & 0x1)
        elif kind in (1, 9):  # HEADERS, CONTINUATION
            if kind == 1:
                if flags & 0x8:  # PADDED
                    payload = payload[1:len(payload) - payload[0]]
                if flags & 0x20:  # PRIORITY
                    payload = payload[5:]
                self.block[sid] = (b"", bool(flags & 0x1))
            got, end_stream = self.block[sid]
            self.block[sid] = (got + payload, end_stream)
            if flags & 0x4:  # END_HEADERS
                got, end_stream = self.block.pop(sid)
                for name, value in self.dec.decode(got):
                    if name == ":status":
                        self.status.setdefault(sid, value)
                ended = end_stream
        elif kind == 3:  # RST_STREAM
            self.open.discard(sid)
            load._fail(1, f"stream {sid} reset")
        elif kind == 4 and not flags & 0x1:  # SETTINGS: acknowledged
            for i in range(0, len(payload) - 5, 6):
                if int.from_bytes(payload[i:i + 2], "big") == 1:  # HEADER_TABLE_SIZE
                    # The next header block says so first (RFC 7541 4.2): a dormant
                    # connection asks for 0, and refuses a block that ignores it.
                    self.enc.header_table_size = int.from_bytes(payload[i + 2:i + 6], "big")
                    load._count(header_table_sizes=1)
            reply = frame(4, 0x1, 0)
        elif kind == 6 and not flags & 0x1:  # PING
            reply = frame(6, 0x1, 0, payload)
        elif kind == 7:  # GOAWAY: no new stream; those above last-stream-id go again
            self.goaway = int.from_bytes(payload[:4], "big") & 0x7fffffff
            self.goaway_code = int.from_bytes(payload[4:8], "big")
            load._count(goaways=1)
        if ended and sid in self.open:
            self.open.discard(sid)
            if self.status.pop(sid, None) == "200":
                load._count(ok=1)
            else:
                load._fail(1, f"stream {sid} answered {self.status.get(sid)}")
        if self.goaway is not None:
            again = {s for s in self.open if s > self.goaway}
            self.open -= again
            self.retry_later += len(again)
        return reply


def keep_alive_requests(port, clients, each, method="GET"):
    """clients threads, each sending `each` requests one after another on a keep-alive
    connection to 127.0.0.1:port (a new one after a Connection: close): the (status, body,
    seconds) of every request, in the order they finished."""
    results, lock = [], threading.Lock()

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            for _ in range(each):
                start = time.monotonic()
                conn.request(method, "/")
                r = conn.getresponse()
                body = r.read()
                with lock:
                    results.append((r.status, body, time.monotonic() - start))
                if r.getheader("connection") == "close":
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        finally:
            conn.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return results
