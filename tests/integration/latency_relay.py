"""A TCP relay that delays every byte and every close by a fixed time in each direction: the
network between a proxy and an upstream on another host, on loopback.

On loopback an upstream's close reaches the proxy within microseconds, so a proxy that reuses
an idle connection at the moment the upstream closes it loses the keep-alive race only by bad
luck. Across a real network the close takes a one-way delay to arrive, and a request sent in the
last round trip before it is lost: this relay makes that window as wide as the delay says.

It also records what the proxy sent upstream: each connection's bytes towards the upstream are
appended whole to the log file when the connection ends, so a test can count how often a
request left the proxy (a replayed POST shows twice).

Usage: latency_relay.py --listen PORT --upstream HOST:PORT --delay SECONDS --log FILE
Prints "ready" when it listens; runs until killed (SIGTERM flushes open connections' bytes)."""
import argparse
import asyncio
import signal
import sys


class Direction:
    """One direction of one relayed connection: bytes and the close, each delivered `delay`
    after it was read, in order."""

    def __init__(self, reader, writer, delay, record=None):
        self.reader, self.writer, self.delay = reader, writer, delay
        self.record = record
        self.queue = asyncio.Queue()

    async def read(self):
        loop = asyncio.get_running_loop()
        try:
            while True:
                data = await self.reader.read(65536)
                if self.record is not None:
                    self.record += data
                await self.queue.put((loop.time() + self.delay, data))
                if not data:
                    return
        except OSError:
            await self.queue.put((loop.time() + self.delay, b""))

    async def deliver(self):
        loop = asyncio.get_running_loop()
        while True:
            due, data = await self.queue.get()
            await asyncio.sleep(max(0.0, due - loop.time()))
            try:
                if not data:
                    if self.writer.can_write_eof():
                        self.writer.write_eof()
                    return
                self.writer.write(data)
                await self.writer.drain()
            except OSError:
                return  # the far side is gone: what it did not take is lost, as on a network


class Relay:
    def __init__(self, upstream, delay, log_path):
        self.host, self.port = upstream.rsplit(":", 1)
        self.delay, self.log_path = delay, log_path
        self.records = {}  # open connections' bytes towards the upstream, by id

    def flush(self, record):
        with open(self.log_path, "ab") as f:
            f.write(bytes(record) + b"\n")

    async def handle(self, down_reader, down_writer):
        try:
            up_reader, up_writer = await asyncio.open_connection(self.host, int(self.port))
        except OSError:
            down_writer.transport.abort()
            return
        record = bytearray()
        self.records[id(record)] = record
        up = Direction(down_reader, up_writer, self.delay, record)
        down = Direction(up_reader, down_writer, self.delay)
        try:
            await asyncio.gather(up.read(), up.deliver(), down.read(), down.deliver())
        finally:
            for w in (up_writer, down_writer):
                w.close()
            if self.records.pop(id(record), None) is not None:
                self.flush(record)

    async def main(self, listen_port):
        server = await asyncio.start_server(self.handle, "127.0.0.1", listen_port)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        print("ready", flush=True)
        async with server:
            await stop.wait()
        for record in self.records.values():
            self.flush(record)
        self.records.clear()  # written once: the cancelled handlers must not write them again


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--listen", type=int, required=True)
    p.add_argument("--upstream", required=True)
    p.add_argument("--delay", type=float, required=True)
    p.add_argument("--log", required=True)
    args = p.parse_args()
    open(args.log, "wb").close()
    asyncio.run(Relay(args.upstream, args.delay, args.log).main(args.listen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
