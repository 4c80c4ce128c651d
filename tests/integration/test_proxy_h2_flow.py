"""HTTP/2 flow control through the proxy: a client that stops reading one stream does not
stall the connection's other streams, and the proxy holds back that stream's upstream rather
than buffering its whole body. Request DATA the proxy held back from the connection window
(its upstream could not take it yet) is given back when the stream ends early."""
import socket
import time
import unittest

import h2.config
import h2.connection
import h2.events
import h2.settings

import harness
from proxy_harness import Proxy

SIZE = 64 * 1024 * 1024
MIB = 1 << 20


class Blackhole:
    """A TCP listener whose backlog is full and never accepted from: a connect to it waits,
    its SYNs dropped, so a request queued for it holds its body back."""

    def __init__(self):
        self.port = harness.free_port()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", self.port))
        self.listener.listen(0)
        self.fillers = []
        for _ in range(3):
            c = socket.socket()
            c.setblocking(False)
            try:
                c.connect(("127.0.0.1", self.port))
            except BlockingIOError:
                pass
            self.fillers.append(c)

    def close(self):
        for c in self.fillers:
            c.close()
        self.listener.close()


class SlowReader(unittest.TestCase):
    def test_stalled_stream_does_not_block_others(self):
        self.stall({})

    def test_stalled_stream_does_not_block_others_on_a_shared_h2c_upstream(self):
        # Here the slow and the fast streams share one upstream connection too: the slow one
        # must be held back by its own stream window upstream, not by the connection's.
        self.stall({"protocol": '"h2c"'})

    def stall(self, cluster_options):
        backend = harness.Backend(workers=2, unix=True)
        self.addCleanup(backend.stop)
        proxy = Proxy([f"unix:{backend.sock_path}"], workers=1, cluster_options=cluster_options)
        self.addCleanup(proxy.stop)
        base_rss = proxy.rss_kib()

        sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        self.addCleanup(sock.close)
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        conn.initiate_connection()
        sock.sendall(conn.data_to_send())

        def request(path):
            sid = conn.get_next_available_stream_id()
            conn.send_headers(sid, [(":method", "GET"), (":scheme", "http"),
                                    (":authority", "x"), (":path", path)], end_stream=True)
            sock.sendall(conn.data_to_send())
            return sid

        slow = request(f"/bytes?n={SIZE}")
        slow_bytes = 0
        # The slow stream's window (64 KiB by default) fills and is never acknowledged; the
        # connection window is acknowledged so that other streams may flow.
        fast_done = {}
        for round_ in range(20):
            fast = request("/hello")
            ended = False
            while not ended:
                data = sock.recv(65536)
                self.assertTrue(data, "connection closed")
                for ev in conn.receive_data(data):
                    if isinstance(ev, h2.events.DataReceived):
                        if ev.stream_id == slow:
                            slow_bytes += len(ev.data)
                            # Give back connection credit only: the stream stays stalled.
                            conn.increment_flow_control_window(ev.flow_controlled_length)
                        else:
                            fast_done[ev.stream_id] = fast_done.get(ev.stream_id, b"") + ev.data
                            conn.acknowledge_received_data(ev.flow_controlled_length,
                                                           ev.stream_id)
                    elif isinstance(ev, h2.events.StreamEnded) and ev.stream_id == fast:
                        ended = True
                    elif isinstance(ev, h2.events.StreamReset):
                        self.fail(f"stream {ev.stream_id} reset")
                sock.sendall(conn.data_to_send())
        self.assertEqual(len(fast_done), 20)
        self.assertTrue(all(v == b"hello world\n" for v in fast_done.values()))
        self.assertLessEqual(slow_bytes, 65535)
        # The stalled 64 MiB body is not sitting in the proxy.
        self.assertLess(proxy.rss_kib() - base_rss, 16 * 1024)


class HeldUploads(unittest.TestCase):
    def test_streams_reset_while_their_body_is_held_give_the_window_back(self):
        hole = Blackhole()
        self.addCleanup(hole.close)
        proxy = Proxy([f"127.0.0.1:{hole.port}"], workers=1,
                      cluster_options={"connect_timeout": 60})
        self.addCleanup(proxy.stop)
        sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        self.addCleanup(sock.close)
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        conn.initiate_connection()
        sock.sendall(conn.data_to_send())

        def read_until(done, what, timeout=10):
            deadline = time.monotonic() + timeout
            while not done():
                self.assertLess(time.monotonic(), deadline, f"waiting for {what}")
                sock.settimeout(max(0.01, deadline - time.monotonic()))
                try:
                    data = sock.recv(65536)
                except socket.timeout:
                    continue
                self.assertTrue(data, f"connection closed waiting for {what}")
                conn.receive_data(data)
                sock.sendall(conn.data_to_send())

        # Twenty streams of a mebibyte each (a stream's whole window), held back by the proxy
        # while the upstream connects and then reset by the client: 20 MiB against a 16 MiB
        # connection window, so the proxy must give back what the reset streams held.
        for i in range(20):
            read_until(lambda: conn.outbound_flow_control_window >= MIB,
                       f"the connection window for stream {2 * i + 1} (now "
                       f"{conn.outbound_flow_control_window} bytes)")
            sid = conn.get_next_available_stream_id()
            conn.send_headers(sid, [(":method", "POST"), (":scheme", "http"),
                                    (":authority", "x"), (":path", "/upload")])
            sent = 0
            while sent < MIB:
                n = min(conn.local_flow_control_window(sid), conn.max_outbound_frame_size,
                        MIB - sent)
                self.assertGreater(n, 0)
                conn.send_data(sid, b"u" * n)
                sent += n
            conn.reset_stream(sid, 8)  # CANCEL
            sock.sendall(conn.data_to_send())


if __name__ == "__main__":
    unittest.main()
