"""A DNS server for tests, on a loopback UDP port it picks: each name answers with the IPv4
addresses it is given now (set()), with a short TTL, so that a test can scale a "headless
Service" up and down under a running proxy. AAAA questions get no records (NOERROR), unknown
names NXDOMAIN. Runs in a thread of the test process; stop() ends it."""
import socket
import struct
import threading

import harness


class FakeDns:
    def __init__(self, ttl=1):
        self.ttl = ttl
        self.records = {}
        self.lock = threading.Lock()
        self.port = harness.free_port()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", self.port))
        self.sock.settimeout(0.2)
        self.queries = 0
        self.stopping = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def set(self, name, addresses):
        with self.lock:
            self.records[name.lower().rstrip(".")] = list(addresses)

    def stop(self):
        self.stopping = True
        self.thread.join(timeout=5)
        self.sock.close()

    def _serve(self):
        while not self.stopping:
            try:
                data, peer = self.sock.recvfrom(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            reply = self._answer(data)
            if reply:
                self.sock.sendto(reply, peer)

    def _answer(self, q):
        if len(q) < 12:
            return None
        qid, _, qdcount = struct.unpack(">HHH", q[:6])
        if qdcount != 1:
            return None
        labels, i = [], 12
        while i < len(q) and q[i]:
            labels.append(q[i + 1:i + 1 + q[i]].decode("ascii", "replace"))
            i += 1 + q[i]
        end = i + 5  # the root label, then QTYPE and QCLASS
        if end > len(q):
            return None
        qtype = struct.unpack(">H", q[i + 1:i + 3])[0]
        name = ".".join(labels).lower()
        with self.lock:
            self.queries += 1
            known = name in self.records
            addresses = self.records.get(name, []) if qtype == 1 else []
        rcode = 0 if known else 3
        head = struct.pack(">HHHHHH", qid, 0x8180 | rcode, 1, len(addresses), 0, 0)
        answers = b"".join(struct.pack(">HHHIH", 0xC00C, 1, 1, self.ttl, 4) +
                           socket.inet_aton(a) for a in addresses)
        return head + q[12:end] + answers
