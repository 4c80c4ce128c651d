"""The harness's count of a port's TCP sockets holds while other sockets come and go: the
suites judge backlogs and accepted connections by it (test_proxy_connection_limits failed in CI
when a read of /proc/net/tcp counted 53 accepted connections of 52)."""
import socket
import struct
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


if __name__ == "__main__":
    unittest.main()
