#!/usr/bin/python3
"""Opens COUNT idle h2c connections to HOST:PORT and holds them: the client of the idle workload.

Each connection sends the client preface and an empty SETTINGS frame, answers the server's
SETTINGS with an ACK and waits for the server's ACK of its own: "SETTINGS exchanged". With
--get PATH it then sends one GET (its :authority and user-agent indexed in the server's HPACK
table, as a browser's are) and waits for the response to end. Then it sends nothing more of its
own (it answers SETTINGS and PINGs) and only watches for the server closing it (EOF or GOAWAY).

Talks to bench/run over stdin/stdout, one line each way:
  -> "ESTABLISHED <ok> FAILED <n> SECONDS <s>"   once every connection is set up or failed
  <- "CHECK"     -> "OPEN <n> CLOSED <n>"           how many are still open now
  <- "EXIT" (or EOF on stdin)                       closes everything and exits 0
The whole run is bounded by --timeout; connection setup by --setup-timeout.
"""
import argparse
import asyncio
import resource
import ssl
import struct
import sys
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, SETTINGS, GOAWAY, PING = 0x0, 0x1, 0x4, 0x7, 0x6
ACK = END_STREAM = 0x1
END_HEADERS = 0x4


def request_block(authority, path):
    """GET http://authority/path, HPACK: :authority and user-agent as literals with
    incremental indexing (static names 1 and 58), the rest from the static table."""
    def literal(prefix, value):
        return bytes([prefix, len(value)]) + value
    block = b"\x82\x86" + (b"\x84" if path == "/" else literal(0x44, path.encode()))
    return block + literal(0x41, authority.encode()) + literal(0x7a, b"idle-h2/1")


def frame(ftype, flags=0, payload=b"", stream=0):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(
        ">I", stream) + payload


class IdleH2(asyncio.Protocol):
    """One h2c connection: SETTINGS both ways, then idle."""

    def __init__(self, done, request=None):
        self.done = done  # future: True once SETTINGS are exchanged (and the GET answered)
        self.request = request  # a HEADERS block to send once, or None
        self.buf = bytearray()
        self.transport = None
        self.got_settings = self.got_ack = False
        self.sent = self.answered = False
        self.closed = False

    def connection_made(self, transport):
        self.transport = transport
        transport.write(PREFACE + frame(SETTINGS))

    def data_received(self, data):
        self.buf += data
        while len(self.buf) >= 9:
            length = int.from_bytes(self.buf[0:3], "big")
            if len(self.buf) < 9 + length:
                break
            ftype, flags = self.buf[3], self.buf[4]
            payload = bytes(self.buf[9:9 + length])
            del self.buf[:9 + length]
            if ftype == SETTINGS and not flags & ACK:
                self.got_settings = True
                self.transport.write(frame(SETTINGS, ACK))
            elif ftype == SETTINGS:
                self.got_ack = True
            elif ftype == PING and not flags & ACK:
                self.transport.write(frame(PING, ACK, payload))
            elif ftype == GOAWAY:
                self._close()
                return
            elif ftype in (HEADERS, DATA) and flags & END_STREAM:
                self.answered = True
            if self.got_settings and self.got_ack and not self.done.done():
                if self.request and not self.sent:
                    self.sent = True
                    self.transport.write(frame(HEADERS, END_STREAM | END_HEADERS,
                                               self.request, stream=1))
                elif not self.request or self.answered:
                    self.done.set_result(True)

    def _close(self):
        self.closed = True
        if not self.done.done():
            self.done.set_result(False)
        if self.transport:
            self.transport.close()

    def connection_lost(self, exc):
        self.closed = True
        if not self.done.done():
            self.done.set_result(False)


async def open_one(loop, host, port, sem, conns, timeout, request, tls):
    async with sem:
        done = loop.create_future()
        try:
            _, proto = await asyncio.wait_for(
                loop.create_connection(lambda: IdleH2(done, request), host, port, ssl=tls,
                                       server_hostname="localhost" if tls else None), timeout)
            conns.append(proto)
            return await asyncio.wait_for(done, timeout)
        except (OSError, asyncio.TimeoutError):
            return False


async def read_line(loop):
    return (await loop.run_in_executor(None, sys.stdin.readline)).strip()


async def main(args):
    loop = asyncio.get_running_loop()
    sem = asyncio.Semaphore(args.concurrency)
    conns = []
    request = request_block(f"{args.host}:{args.port}", args.get) if args.get else None
    tls = None
    if args.tls:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        tls.check_hostname = False
        tls.verify_mode = ssl.CERT_NONE
        tls.set_alpn_protocols(["h2"])
    start = time.monotonic()
    results = await asyncio.wait_for(
        asyncio.gather(*(open_one(loop, args.host, args.port, sem, conns, args.conn_timeout,
                                  request, tls) for _ in range(args.count))), args.setup_timeout)
    ok = sum(1 for r in results if r)
    print(f"ESTABLISHED {ok} FAILED {args.count - ok} SECONDS {time.monotonic() - start:.3f}",
          flush=True)
    while True:
        cmd = await read_line(loop)
        if cmd == "CHECK":
            open_now = sum(1 for c in conns if not c.closed)
            print(f"OPEN {open_now} CLOSED {len(conns) - open_now}", flush=True)
        else:  # EXIT or EOF
            break
    for c in conns:
        if c.transport:
            c.transport.abort()


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("count", type=int)
    p.add_argument("--concurrency", type=int, default=256,
                   help="connections being set up at once (keeps listen backlogs from overflowing)")
    p.add_argument("--conn-timeout", type=float, default=10.0)
    p.add_argument("--get", metavar="PATH", help="one GET on each connection before it idles")
    p.add_argument("--tls", action="store_true", help="h2 over TLS (ALPN h2) instead of h2c")
    p.add_argument("--setup-timeout", type=float, default=120.0)
    a = p.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = a.count + 256
    if soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (max(want, soft), max(want, hard)))
        except (ValueError, OSError) as e:
            sys.exit(f"idle_h2: cannot raise RLIMIT_NOFILE to {want}: {e}")
    try:
        asyncio.run(main(a))
    except asyncio.TimeoutError:
        sys.exit(f"idle_h2: setting up {a.count} connections took over {a.setup_timeout}s")
