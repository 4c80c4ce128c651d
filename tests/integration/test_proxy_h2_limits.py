"""HTTP/2 requests meet the limits HTTP/1.1 requests meet (issue 10, item 6): a body over
max_body_bytes is 413 (announced by content-length, before anything reaches the upstream) or,
streamed past the limit, 413 while the response has not begun; a :path over the URI limit is
414; portico-backend's --max-body holds for h2c too."""
import unittest

import h2.events

import harness
from proxy_harness import Proxy
from test_proxy_headers import H2Client, base_headers

LIMIT = 100_000


def post(port, path, body, content_length=True):
    """A POST on a fresh connection, the body sent as the windows allow, until the stream has
    ended or was reset: (status, response body, reset code or None)."""
    c = H2Client(port)
    try:
        h = base_headers(port, path)
        h[0] = (":method", "POST")
        if content_length:
            h.append(("content-length", str(len(body))))
        sid = c.conn.get_next_available_stream_id()
        c.conn.send_headers(sid, h)
        status, got, reset, sent, done = None, b"", None, 0, False
        while not done:
            while sent < len(body) and c.conn.local_flow_control_window(sid) > 0:
                n = min(16384, len(body) - sent, c.conn.local_flow_control_window(sid))
                c.conn.send_data(sid, body[sent:sent + n], end_stream=sent + n == len(body))
                sent += n
            c.flush()
            data = c.sock.recv(65536)
            if not data:
                break
            for ev in c.conn.receive_data(data):
                if isinstance(ev, h2.events.ResponseReceived):
                    status = int(dict(ev.headers)[b":status"])
                elif isinstance(ev, h2.events.DataReceived):
                    got += ev.data
                    c.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.StreamEnded) and ev.stream_id == sid:
                    done = True
                elif isinstance(ev, h2.events.StreamReset) and ev.stream_id == sid:
                    reset, done = ev.error_code, True
            if done and sent < len(body):
                break  # answered before the whole body went: the rest is not needed
        return status, got, reset
    finally:
        c.close()


def answered_by_app(backend, app):
    """How many requests portico-backend's app has answered (every status class), from the
    master's /metrics."""
    text = harness.http_get(backend.admin_port, "/metrics")[1].decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("portico_backend_requests_total{") and
               f'app="{app}"' in line)


class H2Limits(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        admin_port = harness.free_port()
        cls.backend = harness.Backend("--admin", f"127.0.0.1:{admin_port}", workers=1)
        cls.backend.admin_port = admin_port
        try:
            harness.wait_until(lambda: harness.port_open("127.0.0.1", admin_port),
                               what="portico-backend's admin")
            cls.proxy = Proxy([f"127.0.0.1:{cls.backend.port}"], workers=1,
                              server_options={"max_body_bytes": LIMIT})
        except BaseException:
            cls.backend.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.backend.stop()

    def test_content_length_over_the_limit_is_413(self):
        # /headers, which no other test here asks for, answers as soon as a request head
        # reaches it: its count says whether anything of the refused request got through.
        before = answered_by_app(self.backend, "headers")
        status, body, reset = post(self.proxy.port, "/headers", b"x" * (LIMIT + 1))
        self.assertEqual(status, 413, (status, len(body), reset))
        # A request within the limit, sent after it, reaches the app and is counted; once it
        # is, the refused one is not.
        status, body, reset = post(self.proxy.port, "/headers", b"x" * 10)
        self.assertEqual((status, reset), (200, None), body)
        harness.wait_until(lambda: answered_by_app(self.backend, "headers") >= before + 1,
                           what="the request within the limit counted")
        self.assertEqual(answered_by_app(self.backend, "headers"), before + 1)

    def test_streamed_body_over_the_limit_is_413(self):
        status, body, reset = post(self.proxy.port, "/delay?ms=3000", b"x" * (LIMIT + 20000),
                                   content_length=False)
        self.assertEqual(status, 413, (status, len(body), reset))

    def test_body_at_the_limit_passes(self):
        status, body, reset = post(self.proxy.port, "/echo", b"y" * LIMIT)
        self.assertEqual((status, len(body), reset), (200, LIMIT, None))

    def test_long_path_is_414(self):
        c = H2Client(self.proxy.port)
        self.addCleanup(c.close)
        sid = c.request(base_headers(self.proxy.port, "/" + "a" * 9000))
        self.assertEqual(c.collect([sid])[sid][0], 414)

    def test_backend_max_body_holds_for_h2c(self):
        backend = harness.Backend("--max-body", "1000", workers=1)
        self.addCleanup(backend.stop)
        self.assertEqual(post(backend.port, "/echo", b"z" * 1001)[0], 413)
        # echo answers at once, so the streamed body meets the limit mid-response: a reset.
        status, body, reset = post(backend.port, "/echo", b"z" * 2000, content_length=False)
        self.assertTrue(status == 413 or reset is not None, (status, len(body), reset))
        self.assertLess(len(body), 2000)
        self.assertEqual(post(backend.port, "/echo", b"z" * 1000)[0], 200)


if __name__ == "__main__":
    unittest.main()
