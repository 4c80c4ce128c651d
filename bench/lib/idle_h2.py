#!/usr/bin/python3
"""Opens COUNT idle h2c connections to HOST:PORT and holds them: the client of the idle workload.

Each connection sends the client preface and an empty SETTINGS frame, answers the server's
SETTINGS with an ACK and waits for the server's ACK of its own: "SETTINGS exchanged". Then it
sends nothing more (no stream is opened) and only watches for the server closing it (EOF or
GOAWAY).

Talks to bench/run over stdin/stdout, one line each way:
  -> "ESTABLISHED <ok> FAILED <n> SECONDS <s>"   once every connection is set up or failed
  <- "CHECK"     -> "OPEN <n> CLOSED <n>"           how many are still open now
  <- "EXIT" (or EOF on stdin)                       closes everything and exits 0
The whole run is bounded by --timeout; connection setup by --setup-timeout.
"""
import argparse
import asyncio
import resource
import struct
import sys
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SETTINGS, GOAWAY, PING = 0x4, 0x7, 0x6
ACK = 0x1


def frame(ftype, flags=0, payload=b"", stream=0):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(
        ">I", stream) + payload


class IdleH2(asyncio.Protocol):
    """One h2c connection: SETTINGS both ways, then idle."""

    def __init__(self, done):
        self.done = done  # future: True once SETTINGS are exchanged
        self.buf = bytearray()
        self.transport = None
        self.got_settings = self.got_ack = False
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
            if self.got_settings and self.got_ack and not self.done.done():
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


async def open_one(loop, host, port, sem, conns, timeout):
    async with sem:
        done = loop.create_future()
        try:
            _, proto = await asyncio.wait_for(
                loop.create_connection(lambda: IdleH2(done), host, port), timeout)
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
    start = time.monotonic()
    results = await asyncio.wait_for(
        asyncio.gather(*(open_one(loop, args.host, args.port, sem, conns, args.conn_timeout)
                         for _ in range(args.count))), args.setup_timeout)
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
