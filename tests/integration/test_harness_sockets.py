"""The harness's count of a port's TCP sockets holds while other sockets come and go: the
suites judge backlogs and accepted connections by it (test_proxy_connection_limits failed in CI
when a read of /proc/net/tcp counted 53 accepted connections of 52)."""
import socket
import struct
import subprocess
import sys
import threading
import time
import unittest

import harness


def churn(stop):
    """Connections opened and reset, 50 at a time, until stop is set: each adds and removes
    rows of the socket table (reset, so that none lingers in TIME_WAIT)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(100)
        port = listener.getsockname()[1]
        while not stop.is_set():
            pairs = []
            for _ in range(50):
                client = socket.create_connection(("127.0.0.1", port))
                pairs += [client, listener.accept()[0]]
            for s in pairs:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                s.close()


class SocketCounts(unittest.TestCase):
    def test_counts_hold_while_the_table_churns(self):
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen(100)
            port = listener.getsockname()[1]
            clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(80)]
            servers = [listener.accept()[0] for _ in range(40)]  # 40 accepted, 40 queued
            stop = threading.Event()
            threads = [threading.Thread(target=churn, args=(stop,)) for _ in range(2)]
            for t in threads:
                t.start()
            counts = []
            try:
                deadline = time.monotonic() + 3  # a bounded number of reads, not a wait
                while time.monotonic() < deadline or len(counts) < 20:
                    rows = harness.tcp_sockets(local_port=port)
                    counts.append((sum(1 for state, _, _ in rows if state == "01"),
                                   sum(rx for state, _, rx in rows if state == "0A")))
            finally:
                stop.set()
                for t in threads:
                    t.join()
                for s in clients + servers:
                    s.close()
        wrong = [c for c in counts if c != (80, 40)]
        self.assertEqual(wrong, [], f"{len(wrong)} of {len(counts)} reads wrong")


class FreePorts(unittest.TestCase):
    """CI failed when a backend's admin port, picked by binding port 0 and closing, was taken
    before the backend bound it: the kernel hands the same ephemeral range to every connect()
    of the tests running beside it."""

    def test_a_picked_port_is_not_one_the_kernel_hands_out(self):
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = map(int, f.read().split())
        ports = [harness.free_port() for _ in range(50)]
        self.assertEqual([p for p in ports if low <= p <= high], [])

    def test_processes_picking_at_once_never_share_a_port(self):
        code = ("import sys; sys.path.insert(0, %r); import harness\n"
                "print(' '.join(str(harness.free_port()) for _ in range(200)), flush=True)\n"
                "sys.stdin.read()" % harness.__file__.rsplit("/", 1)[0])
        procs = [subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True) for _ in range(4)]
        try:  # each holds its ports until its stdin closes, as a test holds them while it runs
            picks = [p.stdout.readline().split() for p in procs]
        finally:
            for p in procs:
                p.stdin.close()
                p.wait()
        every = [port for ports in picks for port in ports]
        self.assertEqual(len(every), 800)
        self.assertEqual(len(set(every)), 800)


if __name__ == "__main__":
    unittest.main()
