"""Who may touch the admin port (issue 29, item 6). The read-only paths (/metrics, /healthz,
/readyz, /status, the dashboard at / and /dashboard, /stats.json) answer whoever reaches the
admin address: probes and scrapes. The state-changing one, /cache/purge, is taken only over the
[admin] control_socket (a unix socket whose mode and owner the file sets), from a bearer of the
token in [admin] token_file (compared in constant time; required on TCP from every peer once
configured; read again on HUP), or, with neither configured, from a loopback peer unless
allow_loopback_control = false. A refusal is 403 with the reason in the body, counted in
portico_admin_requests_refused_total{reason} and logged. A token file every user may read, or a
control socket mode that lets every user connect, stops the start with a FILE:LINE:COL error
naming it."""
import http.client
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import unittest
import urllib.parse

import harness
from harness import wait_until
from proxy_harness import PORTICO, Proxy, toml_string

PURGE = "/cache/purge?url=" + urllib.parse.quote("http://example.com/a", safe="")
READ_ONLY = ("/metrics", "/healthz", "/readyz", "/status", "/", "/dashboard", "/stats.json")
TOKEN = "3f9c1d27a8e64b05b1c2d3e4f5a6b7c8"
REFUSED = "portico_admin_requests_refused_total"


def request(port, path, method="GET", headers=None):
    """One request on a new TCP connection to 127.0.0.1:port: (status, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=10)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(self.unix_path)
        self.sock = s


def unix_request(path, target, method="GET", headers=None):
    """One request over the unix socket at path: (status, body)."""
    conn = UnixConnection(path)
    try:
        conn.request(method, target, headers=headers or {})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def write_token(path, token, mode=0o600):
    with open(path, "w") as f:
        f.write(token + "\n")
    os.chmod(path, mode)


def bearer(token):
    return {"Authorization": "Bearer " + token}


class GuardTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="portico-admin-guard-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.token_file = os.path.join(self.tmp, "admin.token")

    def start(self, **admin_options):
        proxy = Proxy([harness.dead_endpoint(self)], workers=1, admin_options=admin_options)
        self.addCleanup(proxy.stop)
        return proxy

    def purge(self, proxy, headers=None, method="POST"):
        return request(proxy.admin_port, PURGE, method, headers)

    def assert_refused(self, answer, why):
        status, body = answer
        self.assertEqual(status, 403, body)
        self.assertIn(why, body.decode())


class ReadOnlyPaths(GuardTest):
    """The strictest setting (a token, no loopback exception) leaves the views open."""

    def setUp(self):
        super().setUp()
        write_token(self.token_file, TOKEN)
        self.proxy = self.start(token_file=toml_string(self.token_file),
                                allow_loopback_control="false")

    def test_each_read_only_path_answers_without_credentials(self):
        for path in READ_ONLY:
            for method in ("GET", "HEAD"):
                status, _ = request(self.proxy.admin_port, path, method)
                self.assertEqual(status, 200, f"{method} {path}")

    def test_a_state_changing_method_on_a_read_only_path_answers_as_before(self):
        for method, path in (("POST", "/metrics"), ("DELETE", "/status"), ("PUT", "/healthz"),
                             ("POST", "/")):
            status, body = request(self.proxy.admin_port, path, method)
            self.assertEqual((status, body), (405, b"GET or HEAD\n"), f"{method} {path}")
        self.assertEqual(self.proxy.metric(REFUSED, reason="missing_token"), 0)

    def test_the_purge_path_is_refused_without_the_token(self):
        self.assert_refused(self.purge(self.proxy), "Authorization: Bearer")
        self.assertEqual(request(self.proxy.admin_port, "/cache/purge")[0], 403)


class Loopback(GuardTest):
    def test_with_neither_token_nor_socket_a_loopback_peer_may_purge(self):
        proxy = self.start()
        self.assertEqual(self.purge(proxy), (200, b'{"purged":0}\n'))

    def test_without_the_loopback_exception_a_purge_is_refused_counted_and_logged(self):
        proxy = self.start(allow_loopback_control="false")
        self.assert_refused(self.purge(proxy), "control_socket")
        self.assert_refused(self.purge(proxy, bearer(TOKEN)), "token_file")
        self.assertEqual(proxy.metric(REFUSED, reason="untrusted_peer"), 2)
        self.assertEqual(proxy.metric(REFUSED, reason="wrong_token"), 0)
        wait_until(lambda: "refused POST /cache/purge from 127.0.0.1" in proxy.read_log(),
                   what="the refusal in the error log")


class Token(GuardTest):
    def setUp(self):
        super().setUp()
        write_token(self.token_file, TOKEN)
        self.proxy = self.start(token_file=toml_string(self.token_file))

    def test_the_right_token_is_accepted(self):
        self.assertEqual(self.purge(self.proxy, bearer(TOKEN)), (200, b'{"purged":0}\n'))
        # The scheme is case-insensitive (RFC 9110 11.1).
        status, _ = self.purge(self.proxy, {"Authorization": "bearer " + TOKEN})
        self.assertEqual(status, 200)
        self.assertEqual(self.proxy.metric(REFUSED, reason="wrong_token"), 0)

    def test_without_a_token_even_loopback_is_refused(self):
        self.assert_refused(self.purge(self.proxy), "Authorization: Bearer")
        self.assertEqual(self.proxy.metric(REFUSED, reason="missing_token"), 1)

    def test_a_wrong_token_is_refused(self):
        same_length = TOKEN[:-1] + ("0" if TOKEN[-1] != "0" else "1")
        for wrong in ("nope", same_length, TOKEN + "x", TOKEN[:-1], "x" + TOKEN[1:]):
            self.assertEqual(len(same_length), len(TOKEN))
            self.assert_refused(self.purge(self.proxy, bearer(wrong)), "does not match")
        self.assertEqual(self.proxy.metric(REFUSED, reason="wrong_token"), 5)

    def test_the_token_without_the_bearer_scheme_is_refused(self):
        for value in (TOKEN, "Basic " + TOKEN, "Bearer", "Bearer ", "Token " + TOKEN,
                      "Bearer" + TOKEN):
            self.assert_refused(self.purge(self.proxy, {"Authorization": value}),
                                "Authorization: Bearer")
        self.assertEqual(self.proxy.metric(REFUSED, reason="missing_token"), 6)
        self.assertEqual(self.proxy.metric(REFUSED, reason="wrong_token"), 0)

    def reload(self, reloads):
        os.kill(self.proxy.pid, signal.SIGHUP)
        wait_until(lambda: f'"reloads":{reloads}' in self.proxy.admin("/status") or
                   "has errors" in self.proxy.read_log(),
                   what=f"reload {reloads}")

    def test_a_reload_reads_the_token_file_again(self):
        new = "a-new-token-of-the-second-generation"
        write_token(self.token_file, new)
        self.reload(1)
        self.assertIn('"reloads":1', self.proxy.admin("/status"))
        self.assert_refused(self.purge(self.proxy, bearer(TOKEN)), "does not match")
        self.assertEqual(self.purge(self.proxy, bearer(new))[0], 200)

    def test_a_reload_finding_the_token_file_open_to_every_user_keeps_the_old_token(self):
        write_token(self.token_file, "leaked-token-readable-by-everybody", mode=0o644)
        self.reload(1)
        log = self.proxy.read_log()
        self.assertIn("has errors", log)
        self.assertIn(self.token_file, log)
        self.assertIn("readable by every user", log)
        self.assertEqual(self.purge(self.proxy, bearer(TOKEN))[0], 200)
        self.assertEqual(self.purge(self.proxy, bearer("leaked-token-readable-by-everybody"))[0],
                         403)


class ControlSocket(GuardTest):
    def setUp(self):
        super().setUp()
        self.socket_path = os.path.join(self.tmp, "control.sock")
        # As root the owner really changes; otherwise a group of this user's own.
        if os.geteuid() == 0:
            self.uid, self.gid = 65534, 65534
        else:
            groups = [g for g in os.getgroups() if g != os.getegid()] or [os.getegid()]
            self.uid, self.gid = os.geteuid(), groups[0]

    def start_with_socket(self, **more):
        return self.start(control_socket=toml_string(self.socket_path),
                          control_socket_mode='"0660"',
                          control_socket_owner=f'"{self.uid}:{self.gid}"', **more)

    def test_the_socket_has_the_configured_mode_and_owner(self):
        self.start_with_socket()
        st = os.stat(self.socket_path)
        self.assertTrue(stat.S_ISSOCK(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o660)
        self.assertEqual((st.st_uid, st.st_gid), (self.uid, self.gid))

    def test_a_purge_over_the_socket_needs_no_token_and_tcp_is_refused(self):
        proxy = self.start_with_socket()
        self.assertEqual(unix_request(self.socket_path, PURGE, "POST"), (200, b'{"purged":0}\n'))
        self.assertEqual(unix_request(self.socket_path, "/healthz"), (200, b"ok\n"))
        # With a control socket, loopback TCP is no longer enough.
        self.assert_refused(self.purge(proxy), "control_socket")
        self.assertEqual(proxy.metric(REFUSED, reason="untrusted_peer"), 1)

    def test_with_a_token_as_well_either_way_works(self):
        write_token(self.token_file, TOKEN)
        proxy = self.start_with_socket(token_file=toml_string(self.token_file))
        self.assertEqual(unix_request(self.socket_path, PURGE, "POST")[0], 200)
        self.assertEqual(self.purge(proxy, bearer(TOKEN))[0], 200)
        self.assert_refused(self.purge(proxy), "Authorization: Bearer")

    def test_the_socket_file_goes_with_the_process(self):
        proxy = self.start_with_socket()
        self.assertTrue(os.path.exists(self.socket_path))
        proxy.stop()
        self.assertFalse(os.path.exists(self.socket_path))


class StartRefusals(GuardTest):
    """What would leave the admin port open to others is refused before anything is bound."""

    def start_fails(self, *admin_lines):
        config = os.path.join(self.tmp, "portico.toml")
        lines = ["[[listener]]", f'address = "127.0.0.1:{harness.free_port()}"', "",
                 "[admin]", f'address = "127.0.0.1:{harness.free_port()}"', *admin_lines, "",
                 "[[cluster]]", 'name = "app"', f'endpoints = ["{harness.dead_endpoint(self)}"]',
                 "", "[[route]]", 'cluster = "app"']
        with open(config, "w") as f:
            f.write("\n".join(lines) + "\n")
        r = subprocess.run([PORTICO, "-c", config], capture_output=True, text=True, timeout=20)
        self.assertNotEqual(r.returncode, 0, r.stderr)
        return config, r.stderr

    def test_a_token_file_every_user_may_read_is_refused(self):
        write_token(self.token_file, TOKEN, mode=0o644)
        config, err = self.start_fails(f"token_file = {toml_string(self.token_file)}")
        self.assertIn(f"{config}:6:14: [admin]: token_file '{self.token_file}' is readable by "
                      "every user", err)

    def test_an_empty_token_file_is_refused(self):
        write_token(self.token_file, "", mode=0o600)
        config, err = self.start_fails(f"token_file = {toml_string(self.token_file)}")
        self.assertIn(f"{config}:6:14: [admin]: token_file '{self.token_file}' holds no token",
                      err)

    def test_a_control_socket_every_user_may_connect_to_is_refused(self):
        path = os.path.join(self.tmp, "control.sock")
        config, err = self.start_fails(f"control_socket = {toml_string(path)}",
                                       'control_socket_mode = "0666"')
        self.assertIn(f"{config}:7:23: [admin]: control_socket_mode 0666 lets every user "
                      "connect", err)
        self.assertFalse(os.path.exists(path))


if __name__ == "__main__":
    unittest.main()
