"""SIGTERM: portico stops accepting, tells clients (GOAWAY on HTTP/2, Connection: close on
HTTP/1.1), lets in-flight requests finish within the grace period, and exits 0."""
import signal
import socket
import subprocess
import threading
import unittest

import h2.config
import h2.connection
import h2.errors
import h2.events

import harness
from proxy_harness import Proxy


def h2_events_until_eof(sock, conn):
    """Reads an h2 connection until the server closes it: every event, in arrival order.
    Frame by frame: python3-h2 closes its side on a GOAWAY (and drops its queued output, a
    PING's ACK among it), though the streams up to the GOAWAY's last_stream_id go on (RFC 9113
    6.8); its state is put back after each GOAWAY so that they are seen to finish."""
    events, pending = [], b""
    while True:
        try:
            data = sock.recv(65536)
        except ConnectionResetError:
            data = b""
        if not data:
            return events
        pending += data
        out = b""
        while len(pending) >= 9:
            end = 9 + int.from_bytes(pending[:3], "big")
            if len(pending) < end:
                break
            frame, pending = pending[:end], pending[end:]
            state = conn.state_machine.state
            out += conn.data_to_send()
            for ev in conn.receive_data(frame):
                events.append(ev)
                if isinstance(ev, h2.events.ConnectionTerminated):
                    conn.state_machine.state = state
                elif isinstance(ev, h2.events.DataReceived) and ev.flow_controlled_length:
                    conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
        out += conn.data_to_send()
        try:
            sock.sendall(out)
        except (BrokenPipeError, ConnectionResetError):
            pass  # closing: what is left to read still counts


class ProxyShutdown(unittest.TestCase):
    def test_in_flight_requests_complete(self):
        backend = harness.Backend(workers=2)
        self.addCleanup(backend.stop)
        proxy = Proxy([f"127.0.0.1:{backend.port}"], server_options={"grace_period": 10})
        self.addCleanup(proxy.stop)
        results = []

        def h1():
            with socket.create_connection(("127.0.0.1", proxy.port)) as s:
                s.sendall(b"GET /delay?ms=700 HTTP/1.1\r\nHost: x\r\n\r\n")
                data = b""
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                results.append(("h1", data))

        def h2():
            out = subprocess.run(["curl", "-sS", "--http2-prior-knowledge", "-w", " %{http_code}",
                                  f"{proxy.url}/delay?ms=700"], capture_output=True, timeout=30)
            results.append(("h2", out.stdout))

        threads = [threading.Thread(target=f) for f in (h1, h1, h2, h2)]
        for t in threads:
            t.start()
        # Wait until the backend has the four requests (its workers hold them in their timers).
        def established_to_backend():
            # Both ends of each loopback connection are listed; count the proxy's side.
            return sum(1 for state, _, _ in harness.tcp_sockets(remote_port=backend.port)
                       if state == "01")

        harness.wait_until(lambda: established_to_backend() >= 4,
                           what="requests in flight at the backend")
        proxy.process.proc.send_signal(signal.SIGTERM)
        for t in threads:
            t.join(timeout=20)
        code = proxy.process.proc.wait(timeout=20)
        self.assertEqual(code, 0, proxy.read_log())
        self.assertEqual(len(results), 4)
        for kind, data in results:
            if kind == "h1":
                self.assertIn(b"200 OK", data)
                self.assertIn(b"connection: close", data.lower())
                self.assertTrue(data.endswith(b"hello world\n"), data)
            else:
                self.assertTrue(data.endswith(b"hello world\n 200"), data)
        self.assertFalse(harness.port_open("127.0.0.1", proxy.port))

    def test_h2_client_is_told_with_goaway_while_its_request_finishes(self):
        backend = harness.Backend(workers=1, unix=True)
        self.addCleanup(backend.stop)
        proxy = Proxy([f"unix:{backend.sock_path}"], server_options={"grace_period": 10})
        self.addCleanup(proxy.stop)
        sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=20)
        self.addCleanup(sock.close)
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        conn.initiate_connection()
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, [(":method", "GET"), (":scheme", "http"), (":authority", "x"),
                                (":path", "/delay?ms=700")], end_stream=True)
        sock.sendall(conn.data_to_send())
        harness.wait_until(lambda: '"busy":1' in proxy.admin("/status"),
                           what="the request at the backend")
        proxy.process.proc.send_signal(signal.SIGTERM)
        events = h2_events_until_eof(sock, conn)
        ended = [i for i, ev in enumerate(events)
                 if isinstance(ev, h2.events.StreamEnded) and ev.stream_id == sid]
        self.assertEqual(len(ended), 1, events)
        goaways = [ev for ev in events[:ended[0]]
                   if isinstance(ev, h2.events.ConnectionTerminated)]
        self.assertTrue(goaways, f"no GOAWAY before the in-flight stream ended: {events}")
        for ev in goaways:
            self.assertEqual(ev.error_code, h2.errors.ErrorCodes.NO_ERROR, ev)
            self.assertGreaterEqual(ev.last_stream_id, sid, ev)
        # ...and the stream it spared was served whole, not reset.
        status = [dict(ev.headers)[b":status"] for ev in events
                  if isinstance(ev, h2.events.ResponseReceived) and ev.stream_id == sid]
        body = b"".join(ev.data for ev in events
                        if isinstance(ev, h2.events.DataReceived) and ev.stream_id == sid)
        resets = [ev for ev in events if isinstance(ev, h2.events.StreamReset)]
        self.assertEqual((status, body, resets), ([b"200"], b"hello world\n", []))
        self.assertEqual(proxy.process.proc.wait(timeout=20), 0, proxy.read_log())

    def test_new_connections_are_refused_during_the_drain(self):
        # Issue 22, defect 6: during a graceful stop a new connection was accepted by the
        # kernel and left waiting (then reset at exit); refused at once, it goes to the next
        # instance behind a balancer, as nginx's do.
        backend = harness.Backend(workers=1, unix=True)
        self.addCleanup(backend.stop)
        proxy = Proxy([f"unix:{backend.sock_path}"], server_options={"grace_period": 20})
        self.addCleanup(proxy.stop)
        slow = socket.create_connection(("127.0.0.1", proxy.port))
        self.addCleanup(slow.close)
        slow.sendall(b"GET /delay?ms=4000 HTTP/1.1\r\nHost: x\r\n\r\n")
        harness.wait_until(lambda: '"busy":1' in proxy.admin("/status"),
                           what="the slow request at the backend")
        proxy.process.proc.send_signal(signal.SIGQUIT)
        harness.wait_until(lambda: "graceful stop" in proxy.read_log(), what="the drain")

        def refused():
            # A connect racing the listener's close is reset rather than refused: either
            # way the kernel did not leave it waiting, which is what the drain must ensure.
            try:
                with socket.create_connection(("127.0.0.1", proxy.port), timeout=1):
                    return False
            except (ConnectionRefusedError, ConnectionResetError):
                return True
        harness.wait_until(refused, timeout=2, what="connects refused while draining")
        self.assertIsNone(proxy.process.proc.poll())  # still draining the slow request
        data = b""
        slow.settimeout(20)
        while not data.endswith(b"hello world\n"):
            chunk = slow.recv(65536)
            if not chunk:
                break
            data += chunk
        self.assertIn(b"200 OK", data)
        self.assertEqual(proxy.process.proc.wait(timeout=20), 0)


if __name__ == "__main__":
    unittest.main()
