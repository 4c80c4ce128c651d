"""Scripted origins for the proxy's trust tests: they record every request they were handed
(what an application would have applied) and misbehave on request, by path:

- /drop          read the whole request, then close the connection without answering
- /drop-once     the same the first time an x-id is seen; answer 200 after
- /refuse-once   (h2c) RST_STREAM(REFUSED_STREAM) the first time an x-id is seen, unrecorded
- /fields?n=N&size=S   200 with N extra fields x-field-I, each value S bytes
- /hop-fields    (HTTP/1.1) 200 with "Connection: x-hop" and the fields x-hop and x-kept
- /late-body     (HTTP/1.1) once self.go is set: a bodiless answer (HEAD, or 304 for GET) that
                 announces Content-Length: 4, then 50 ms later a whole forged response, "EVIL"
- anything else  200 "ok", keep-alive

Each runs in a thread of the test process on a loopback port it picks, stopped by stop()."""
import socket
import threading
import time

import harness


def extra_fields(path, query):
    if path == "/hop-fields":
        return [("connection", "x-hop"), ("x-hop", "secret"), ("x-kept", "yes")]
    if path != "/fields":
        return []
    args = dict(p.split("=") for p in query.split("&"))
    n, size = int(args["n"]), int(args.get("size", 8))
    return [(f"x-field-{i}", f"{i:0{size}d}") for i in range(n)]


class _Origin:
    def __init__(self):
        self.port = harness.free_port()
        self.listener = socket.create_server(("127.0.0.1", self.port))
        self.lock = threading.Lock()
        self.applied = []  # (method, path, x-id, body length) in arrival order
        self.connections = 0
        self.seen = set()
        self.go = threading.Event()
        self.stopping = False
        self.threads = []
        t = threading.Thread(target=self._accept, daemon=True)
        t.start()
        self.accept_thread = t

    @property
    def endpoint(self):
        return f"127.0.0.1:{self.port}"

    def count(self, method, path, xid=None):
        with self.lock:
            return sum(1 for m, p, i, _ in self.applied
                       if m == method and p == path and (xid is None or i == xid))

    def _first_time(self, xid):
        with self.lock:
            if xid in self.seen:
                return False
            self.seen.add(xid)
            return True

    def _record(self, method, path, xid, length):
        with self.lock:
            self.applied.append((method, path, xid, length))

    def _accept(self):
        while not self.stopping:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
            t = threading.Thread(target=self._serve_guarded, args=(conn,), daemon=True)
            t.start()
            self.threads.append(t)

    def _serve_guarded(self, conn):
        try:
            self.serve(conn)
        except (OSError, ValueError):
            pass  # the proxy cut the connection mid-request (a timeout under test)
        finally:
            conn.close()

    def stop(self):
        self.stopping = True
        self.listener.close()


class Http1Origin(_Origin):
    def serve(self, conn):
        f = conn.makefile("rb")
        try:
            while True:
                line = f.readline()
                if not line:
                    return
                method, target, _ = line.decode("latin1").split(" ", 2)
                headers = {}
                while True:
                    h = f.readline()
                    if h in (b"\r\n", b""):
                        break
                    n, _, v = h.decode("latin1").partition(":")
                    headers[n.strip().lower()] = v.strip()
                body = self._read_body(f, headers)
                path, _, query = target.partition("?")
                xid = headers.get("x-id", query)
                self._record(method, path, xid, len(body))
                if path == "/drop" or (path == "/drop-once" and self._first_time(xid)):
                    return  # the application took it and the connection died
                if path == "/late-body":
                    self.go.wait(30)
                    status = "200 OK" if method == "HEAD" else "304 Not Modified"
                    conn.sendall(f"HTTP/1.1 {status}\r\nContent-Length: 4\r\n\r\n".encode())
                    time.sleep(0.05)  # the misbehaviour's shape: the body in a later write
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nEVIL\n")
                    continue
                fields = "".join(f"{n}: {v}\r\n" for n, v in extra_fields(path, query))
                conn.sendall(f"HTTP/1.1 200 OK\r\n{fields}Content-Length: 3\r\n\r\nok\n"
                             .encode())
        finally:
            f.close()

    @staticmethod
    def _read_body(f, headers):
        if "content-length" in headers:
            return f.read(int(headers["content-length"]))
        if "chunked" in headers.get("transfer-encoding", ""):
            body = b""
            while True:
                size = int(f.readline().split(b";")[0], 16)
                if size == 0:
                    while f.readline() not in (b"\r\n", b""):
                        pass
                    return body
                body += f.read(size)
                f.read(2)
        return b""


def _drain_resets(conn, h2conn, resets, lock):
    """Frames that came while a stream was held: the RST_STREAMs among them recorded (any
    other frame is dropped: for hold_all's single-request tests only)."""
    import h2.events
    conn.settimeout(0.5)
    try:
        data = conn.recv(65536)
    except (socket.timeout, BlockingIOError):
        data = b""
    finally:
        conn.settimeout(None)
    for ev in h2conn.receive_data(data) if data else []:
        if isinstance(ev, h2.events.StreamReset):
            with lock:
                resets.append(ev.stream_id)


class H2cOrigin(_Origin):
    """Prior-knowledge h2c (python3-h2) with the same paths, plus /refuse-once, and /hold, which
    is answered only once `release` is set (holding its connection's thread: a stream kept
    open); with hold_all, every path is. `streams_by_connection` records (connection serial,
    path) of every request, `resets` the streams the proxy reset."""

    def __init__(self):
        super().__init__()
        self.release = threading.Event()
        self.streams_by_connection = []
        self.serials = 0
        self.hold_all = False  # every path held as /hold is
        self.resets = []  # streams the proxy reset (RST_STREAM), by id

    def _reset_while_held(self, conn, h2conn, stream_id):
        _drain_resets(conn, h2conn, self.resets, self.lock)
        with self.lock:
            return stream_id in self.resets

    def serve(self, conn):
        with self.lock:
            self.serials += 1
            serial = self.serials
        import h2.config
        import h2.connection
        import h2.errors
        import h2.events
        h2conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
        h2conn.initiate_connection()
        conn.sendall(h2conn.data_to_send())
        streams = {}
        while True:
            data = conn.recv(65536)
            if not data:
                return
            events = h2conn.receive_data(data)
            # A RST_STREAM read in the same recv() as its request closes the stream in h2's state
            # before the request is handled: recorded first, so that no answer is sent on it.
            reset_now = {ev.stream_id for ev in events if isinstance(ev, h2.events.StreamReset)}
            with self.lock:
                self.resets.extend(sorted(reset_now))
            for ev in events:
                if isinstance(ev, h2.events.RequestReceived):
                    streams[ev.stream_id] = [dict(ev.headers), 0]
                elif isinstance(ev, h2.events.DataReceived):
                    streams[ev.stream_id][1] += len(ev.data)
                    h2conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.StreamEnded):
                    headers, length = streams.pop(ev.stream_id)
                    method = headers[b":method"].decode()
                    path, _, query = headers[b":path"].decode().partition("?")
                    xid = headers.get(b"x-id", query.encode()).decode()
                    if path == "/refuse-once" and self._first_time(xid):
                        h2conn.reset_stream(ev.stream_id, h2.errors.ErrorCodes.REFUSED_STREAM)
                        continue
                    self._record(method, path, xid, length)
                    with self.lock:
                        self.streams_by_connection.append((serial, path))
                    if path == "/drop" or (path == "/drop-once" and self._first_time(xid)):
                        return
                    if ev.stream_id in reset_now:
                        continue
                    if path == "/hold" or self.hold_all:
                        self.release.wait(10)
                        if self.hold_all and self._reset_while_held(conn, h2conn, ev.stream_id):
                            continue
                    h2conn.send_headers(ev.stream_id, [(":status", "200"),
                                                       ("content-length", "3"),
                                                       *extra_fields(path, query)])
                    h2conn.send_data(ev.stream_id, b"ok\n", end_stream=True)
            conn.sendall(h2conn.data_to_send())
