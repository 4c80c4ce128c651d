"""A route's `forward_auth`: an internal route to an auth service (a small one started here) is
asked first. A 2xx lets the request through with the auth's X-User on it (the client's own
dropped); a 401, 403 or 302 goes back to the client as the auth service gave it; an auth that
hangs, resets, answers 418, or cannot be reached is the error status; an auth that answers 200
with a huge body lets the request through at once; the auth sees the method, the URI and the
chosen fields, never the body, which the upstream gets whole; with `cache`, a 2xx is
remembered for the same question (never a denial); the internal route is not the clients'."""
import http.client
import http.server
import socketserver
import threading
import time
import unittest

import harness
from cache_origin import CacheOrigin
from proxy_harness import Proxy, toml_string


class _Auth(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        auth = self.server.owner
        with auth.lock:
            auth.seen.append((self.command, self.path,
                              {k.lower(): v for k, v in self.headers.items()}))
        token = self.headers.get("Authorization", "")
        if token == "Bearer good" or token == "Bearer slow":
            if token == "Bearer slow":
                time.sleep(0.3)
            self.answer(200, {"X-User": "alice"})
        elif token == "Bearer huge":
            self.send_response(200)
            self.send_header("X-User", "bigbody")
            self.send_header("Content-Length", str(50 << 20))
            self.end_headers()
            try:
                for _ in range(50 << 4):
                    self.wfile.write(b"x" * 65536)
            except OSError:
                pass  # the proxy stopped reading: it had what it needed
        elif token == "Bearer redirect":
            self.answer(302, {"Location": "https://login.example/"})
        elif token == "Bearer forbidden":
            self.answer(403, {}, b"not you\n")
        elif token == "Bearer teapot":
            self.answer(418, {})
        elif token == "Bearer hang":
            auth.release.wait(30)
            self.close_connection = True
        elif token == "Bearer reset":
            self.close_connection = True  # no answer at all
        else:
            self.answer(401, {"WWW-Authenticate": 'Bearer realm="portico"'}, b"log in first\n")

    do_POST = do_PUT = do_DELETE = do_GET

    def answer(self, status, fields, body=b""):
        self.send_response(status)
        for k, v in fields.items():
            self.send_header(k, v)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class AuthService:
    def __init__(self):
        self.seen = []
        self.lock = threading.Lock()
        self.release = threading.Event()
        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Auth)
        self.server.daemon_threads = True
        self.server.owner = self
        self.endpoint = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def routes(auth_endpoint):
    return f"""
[[cluster]]
name = "auth"
endpoints = [{toml_string(auth_endpoint)}]

[[route]]
path_exact = "/_auth"
internal = true
cluster = "auth"

[[route]]
path_prefix = "/app/"
cluster = "app"
forward_auth = {{ name = "sso", path = "/_auth", copy = ["x-user"], timeout = 1 }}

[[route]]
path_prefix = "/cached/"
cluster = "app"
forward_auth = {{ name = "sso-cached", path = "/_auth", copy = ["x-user"], cache = 30 }}
"""


class ForwardAuth(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.origin = CacheOrigin()
        cls.auth = AuthService()
        cls.proxy = Proxy([cls.origin.endpoint], workers=2, routes_first=routes(cls.auth.endpoint))

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.auth.stop()
        cls.origin.stop()

    def request(self, path, token=None, method="GET", body=None, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.proxy.port, timeout=30)
        try:
            fields = dict(headers or {})
            if token:
                fields["Authorization"] = f"Bearer {token}"
            conn.request(method, path, body=body, headers=fields)
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    def counted(self, result):
        return self.proxy.metric("portico_forward_auth_requests_total", auth="sso",
                                 result=result)

    def test_a_2xx_lets_the_request_through_with_the_auths_fields(self):
        status, _, body = self.request("/app/ok?echo=x-user", "good",
                                       headers={"X-User": "mallory"})
        self.assertEqual(status, 200)
        self.assertTrue(body.endswith(b"alice"), body[-40:])  # never the client's own

    def test_denials_go_back_as_the_auth_service_gave_them(self):
        status, fields, body = self.request("/app/x")
        self.assertEqual((status, body), (401, b"log in first\n"))
        self.assertEqual(fields["www-authenticate"], 'Bearer realm="portico"')
        status, fields, _ = self.request("/app/x", "redirect")
        self.assertEqual((status, fields["location"]), (302, "https://login.example/"))
        self.assertEqual(self.request("/app/x", "forbidden")[:3:2], (403, b"not you\n"))
        self.assertEqual(len(self.origin.requests_for("/app/x")), 0)

    def test_an_auth_that_fails_is_the_error_status_in_time(self):
        before = self.counted("error")
        for token in ("teapot", "reset", "hang"):
            start = time.monotonic()
            status = self.request("/app/x", token)[0]
            self.assertEqual(status, 503, token)
            self.assertLess(time.monotonic() - start, 5, token)  # timeout = 1
        self.assertEqual(self.counted("error"), before + 3)
        self.assertEqual(len(self.origin.requests_for("/app/x")), 0)

    def test_a_huge_2xx_body_is_not_waited_for(self):
        start = time.monotonic()
        status, _, body = self.request("/app/big?echo=x-user", "huge")
        self.assertEqual(status, 200)
        self.assertTrue(body.endswith(b"bigbody"))
        self.assertLess(time.monotonic() - start, 5)

    def test_the_auth_sees_method_uri_and_chosen_fields_never_the_body(self):
        payload = b"y" * (2 << 20)  # held back while a slow auth answers
        status, _, _ = self.request("/app/post?q=1", "slow", method="POST", body=payload,
                                    headers={"Cookie": "sid=1", "X-Other": "no"})
        self.assertEqual(status, 200)
        with self.auth.lock:
            method, path, fields = self.auth.seen[-1]
        self.assertEqual((method, path), ("POST", "/_auth"))
        self.assertEqual(fields.get("x-forwarded-method"), "POST")
        self.assertEqual(fields.get("x-forwarded-uri"), "/app/post?q=1")
        self.assertEqual(fields.get("cookie"), "sid=1")
        self.assertEqual(fields.get("x-forwarded-for"), "127.0.0.1")  # the client's, not "-"
        self.assertNotIn("x-other", fields)
        self.assertNotIn("content-length", fields)
        self.assertEqual(len(self.origin.requests_for("/app/post?q=1")), 1)

    def test_with_cache_a_2xx_is_remembered_for_the_same_question_only(self):
        def asks(path):
            with self.auth.lock:
                return sum(1 for _, _, f in self.auth.seen if f.get("x-forwarded-uri") == path)

        for _ in range(6):
            status, _, body = self.request("/cached/a?echo=x-user", "good",
                                           headers={"X-User": "mallory"})
            self.assertEqual(status, 200)
            self.assertTrue(body.endswith(b"alice"), body)  # the remembered field, not the client's
        self.assertLessEqual(asks("/cached/a?echo=x-user"), 2)  # once per worker at most
        self.assertGreaterEqual(self.proxy.metric("portico_forward_auth_requests_total",
                                                  auth="sso-cached", result="cached"), 4)
        self.assertEqual(self.request("/cached/b?echo=x-user", "good")[0], 200)
        self.assertEqual(asks("/cached/b?echo=x-user"), 1)  # another URI: another question
        for _ in range(3):  # a denial is never remembered
            self.assertEqual(self.request("/cached/c", "nobody")[0], 401)
        self.assertEqual(asks("/cached/c"), 3)

    def test_the_internal_route_is_not_the_clients(self):
        self.assertEqual(self.request("/_auth", "good")[0], 404)


if __name__ == "__main__":
    unittest.main()
