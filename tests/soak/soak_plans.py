"""What the soak's clients ask for, and how each answer is judged.

A Plan is one request (method, path, fields, body) with what it must get back: the right body
for it (an echo of its unique token or body, a known body, the counter at 1 for a fresh id), or
a proxy error status (502, 503, 504), or a cut response where the fault it asked for or an
origin crash during it allows one. Every outcome is noted in a Tally, with whether the proxy
certainly saw the request (for the exact count against its metrics): seen=True (an answer or a
part of one came), False (the connection closed before any byte of an answer, having carried
no body: the proxy read nothing it counted), None (ambiguous: the proxy may have read it)."""
import collections
import hashlib
import itertools
import json
import threading
import time

PATTERN = b"0123456789abcdef"  # portico-backend's /bytes body, repeated
_ids = itertools.count(1)
_ids_lock = threading.Lock()


def unique(prefix):
    with _ids_lock:
        return f"{prefix}{next(_ids)}"


def pattern(n):
    return (PATTERN * (n // len(PATTERN) + 1))[:n]


class Tally:
    """Every client's outcomes, shared by all client threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.outcomes = collections.Counter()  # (kind, outcome) -> n
        self.failures = []  # (time, kind, what)
        self.failure_count = 0
        self.seen = collections.Counter()  # listener -> requests the proxy certainly saw
        self.ambiguous = collections.Counter()  # listener -> requests it may have seen
        self.posts = []  # (origin, id, outcome, length, sha256) of every POST with an id
        # listener -> Counter of (method, path) the proxy certainly saw / may have seen, to say
        # which requests differ when its count and the clients' do not agree
        self.seen_paths = collections.defaultdict(collections.Counter)
        self.ambiguous_paths = collections.defaultdict(collections.Counter)
        self.started = time.monotonic()

    def note(self, kind, outcome, listener=None, seen=True, request=None):
        with self.lock:
            self.outcomes[(kind, outcome.split(":")[0] if outcome.startswith("FAIL") else outcome)] += 1
            if outcome.startswith("FAIL"):
                self.failure_count += 1
                if len(self.failures) < 60:
                    self.failures.append((round(time.monotonic() - self.started, 2), kind,
                                          outcome))
            if listener is not None:
                if seen is True:
                    self.seen[listener] += 1
                    self.seen_paths[listener][request] += 1
                elif seen is None:
                    self.ambiguous[listener] += 1
                    self.ambiguous_paths[listener][request] += 1

    def fail(self, kind, what):
        self.note(kind, "FAIL: " + what)

    def post(self, origin, pid, outcome, length, digest):
        with self.lock:
            self.posts.append((origin, pid, outcome, length, digest))


class Events:
    """Windows during which an origin was down or crashing: a cut response (or a failed gRPC
    call, a closed WebSocket) is allowed only for a request that overlapped one of them."""

    SETTLE = 3.0  # seconds after a restart for the proxy to notice its pooled connections died

    def __init__(self):
        self.lock = threading.Lock()
        self.windows = []  # [origin, start, end or None]

    def begin(self, origin):
        with self.lock:
            w = [origin, time.monotonic(), None]
            self.windows.append(w)
            return w

    def end(self, w):
        with self.lock:
            w[2] = time.monotonic() + self.SETTLE

    def crashed(self, origin, start, end):
        with self.lock:
            return any(o == origin and s <= end and (e is None or e >= start)
                       for o, s, e in self.windows)


# The faults a chaos-origin request asks for, by weight.
TOKEN_FAULTS = [("ok", 55), ("slow", 8), ("halfclose", 8), ("reset", 8), ("resetmid", 8),
                ("garbage", 8), ("stall", 5)]
POST_FAULTS = [("ok", 70), ("reset", 15), ("garbage", 10), ("stall", 5)]
FAULT_STATUS = {"reset": 502, "garbage": 502, "stall": 504}


def weighted(rng, choices):
    return rng.choices([c for c, _ in choices], [w for _, w in choices])[0]


class Plan:
    def __init__(self, kind, method, path, origin, expect=None, body=b"", fault="ok",
                 post_id=None, headers=()):
        self.kind, self.method, self.path, self.origin = kind, method, path, origin
        self.expect, self.body, self.fault, self.post_id = expect, body, fault, post_id
        self.headers = list(headers)
        self.slow = False  # read slowly (a slow reader)
        self.vanish = None  # "response": leave once the answer began; "upload": mid-body
        self.start = self.end = 0.0

    def judge(self, status, body, cut, events):
        """The outcome of an answer: "ok", "allowed: ...", or "FAIL: ..."."""
        self.end = self.end or time.monotonic()
        if cut:
            if self.fault == "resetmid":
                return "allowed: cut (origin reset mid-response)"
            if events.crashed(self.origin, self.start, self.end):
                return "allowed: cut (origin crashed)"
            return (f"FAIL: cut after {len(body)} bytes with no fault (status {status}): "
                    f"{self.method} {self.path}")
        if status == 200:
            if self.fault in ("reset", "garbage", "stall", "resetmid"):
                return f"FAIL: 200 for a request whose origin answered {self.fault}"
            why = self.wrong_body(body)
            return f"FAIL: {why}" if why else "ok"
        if status in (502, 503, 504):
            if FAULT_STATUS.get(self.fault) == status or self.fault == "resetmid":
                return f"allowed: {status} (fault {self.fault})"
            if events.crashed(self.origin, self.start, self.end):
                return f"allowed: {status} (origin crashed)"
            if self.origin == "backend" and status == 502:
                # A worker retiring (--max-requests) or restarting (HUP) closes its idle
                # keep-alive connections: a POST on one the proxy reused that very moment is
                # an honest 502 (never replayed), a GET is replayed once and may meet another.
                return "allowed: 502 (backend worker retired or restarted)"
            return f"allowed: {status} (unattributed)"
        return f"FAIL: status {status} body {body[:80]!r}"

    def wrong_body(self, body):
        e = self.expect
        if callable(e):
            return e(body)
        if body != e:
            return f"wrong body: {len(body)} bytes {body[:60]!r}, expected {len(e)} {e[:60]!r}"
        return None


def _counter_one(body):
    try:
        if json.loads(body) == {"counter": 1}:
            return None
    except ValueError:
        pass
    return f"counter for a fresh id is not 1: {body[:80]!r}"


def make_plan(rng, kind):
    """A request of that kind, with unique tokens and ids."""
    if kind == "hello":
        prefix = rng.choice(["", "/h2"])  # an HTTP/1.1 or an h2c upstream
        return Plan(kind, "GET", prefix + "/hello", "backend", b"hello world\n")
    if kind == "bytes":
        n = rng.choice([0, 1, 100, 16384, 70000, 300000])
        return Plan(kind, "GET", f"/bytes?n={n}", "backend", pattern(n))
    if kind == "echo":
        body = rng.randbytes(rng.choice([0, 10, 4000, 65536, 70000, 200000]))
        prefix = rng.choice(["", "/h2"])
        return Plan(kind, "POST", prefix + "/echo", "backend", body, body=body,
                    headers=[("content-type", "application/octet-stream")])
    if kind == "counter":
        pid = unique("k")
        return Plan(kind, "POST", f"/counter?id={pid}", "backend", _counter_one, post_id=pid)
    if kind == "token":
        token = unique("t")
        fault = weighted(rng, TOKEN_FAULTS)
        return Plan(kind, "GET", f"/c/tok?t={token}&f={fault}", "chaos", token.encode(),
                    fault=fault)
    if kind == "post":
        pid = unique("p")
        fault = weighted(rng, POST_FAULTS)
        body = rng.randbytes(rng.choice([0, 100, 20000, 65536, 100000, 150000]))
        answer = f"{pid} {len(body)} {hashlib.sha256(body).hexdigest()}".encode()
        return Plan(kind, "POST", f"/c/post?id={pid}&f={fault}", "chaos", answer, body=body,
                    fault=fault, post_id=pid)
    if kind == "slow":
        n = 1_500_000
        p = Plan(kind, "GET", f"/bytes?n={n}", "backend", pattern(n))
        p.slow = True
        return p
    if kind == "vanish":
        if rng.random() < 0.5:
            p = Plan(kind, "GET", "/bytes?n=3000000", "backend", None)
            p.vanish = "response"
        else:
            p = Plan(kind, "POST", "/echo", "backend", None, body=rng.randbytes(300000))
            p.vanish = "upload"
        return p
    raise ValueError(kind)


def note_post(tally, plan, outcome):
    if plan.post_id is None:
        return
    digest = hashlib.sha256(plan.body).hexdigest()
    tally.post(plan.origin if plan.kind == "post" else "counter", plan.post_id, outcome,
               len(plan.body), digest)
