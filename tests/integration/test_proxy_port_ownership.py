"""Who may listen on a listener's address (issue 22, defects 1 and 2). SO_REUSEPORT gives each
worker thread its own accept socket, and it would as gladly let any process of the same user
join the group and take a share of the connections. Only portico's own sockets (and those an
upgrade hands over) share a port: a second instance on the address, or any other listener
there, is a start-up error, as nginx's "Address already in use" is. And a start that fails
leaves alone the pid file of the instance that runs: `portico -s` and logrotate's postrotate
go on reaching it."""
import os
import shutil
import socket
import subprocess
import tempfile
import unittest

import harness
from harness import wait_until
from proxy_harness import PORTICO, Proxy, toml_string


class PortOwnership(unittest.TestCase):
    def setUp(self):
        self.backend = harness.Backend(workers=1, unix=True)
        self.addCleanup(self.backend.stop)
        self.tmp = tempfile.mkdtemp(prefix="portico-ports-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.pid_file = os.path.join(self.tmp, "portico.pid")
        self.proxy = Proxy([f"unix:{self.backend.sock_path}"], workers=2,
                           server_options={"pid_file": toml_string(self.pid_file)})
        self.addCleanup(self.proxy.stop)

    def start(self, port, admin_port):
        """A second portico with the running one's pid file, on port; its exit code and
        output (None as the code if it is still running after 20 s: it serves)."""
        config = os.path.join(self.tmp, f"second-{port}.toml")
        with open(config, "w") as f:
            f.write(f'[server]\nworkers = 2\npid_file = {toml_string(self.pid_file)}\n\n'
                    f'[[listener]]\naddress = "127.0.0.1:{port}"\n\n'
                    f'[admin]\naddress = "127.0.0.1:{admin_port}"\n\n'
                    f'[[cluster]]\nname = "app"\n'
                    f'endpoints = ["unix:{self.backend.sock_path}"]\n\n'
                    f'[[route]]\npath_prefix = "/"\ncluster = "app"\n')
        p = subprocess.Popen([PORTICO, "-c", config], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            out, _ = p.communicate(timeout=20)
            return p.returncode, out
        except subprocess.TimeoutExpired:
            p.kill()
            return None, p.communicate()[0]

    def assert_pid_file_names_the_first(self):
        with open(self.pid_file) as f:
            self.assertEqual(int(f.read()), self.proxy.pid)
        r = subprocess.run([PORTICO, "-s", "reopen", "--pid-file", self.pid_file],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        wait_until(lambda: "reopened 1 access log(s)" in self.proxy.read_log() or
                   "reopened 0 access log(s)" in self.proxy.read_log(),
                   what="the running instance reached through its pid file")

    def test_a_second_instance_on_the_same_port_does_not_start(self):
        code, out = self.start(self.proxy.port, harness.free_port())
        self.assertIsNotNone(code, f"a second instance serves on the port: {out}")
        self.assertEqual(code, 1, out)
        self.assertIn(f"127.0.0.1:{self.proxy.port}: Address already in use", out)
        self.assert_pid_file_names_the_first()
        for _ in range(12):  # the first instance serves every request still
            status, body = harness.http_get(self.proxy.port, "/hello")
            self.assertEqual(status, 200)
        wait_until(lambda: self.proxy.metric("portico_requests_total", code="200") == 12,
                   what="12 requests counted by the first instance")

    def test_a_start_failing_on_the_admin_port_leaves_the_pid_file(self):
        code, out = self.start(harness.free_port(), self.proxy.admin_port)
        self.assertEqual(code, 1, out)
        self.assertIn("admin: bind", out)
        self.assert_pid_file_names_the_first()

    def start_beside_a_listener(self, host):
        """Starts a second portico on the port of a foreign SO_REUSEPORT listener on host."""
        with socket.socket() as other:
            other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            other.bind((host, 0))
            other.listen()
            port = other.getsockname()[1]
            return port, *self.start(port, harness.free_port())

    def test_a_foreign_listener_sharing_the_port_is_a_start_error(self):
        port, code, out = self.start_beside_a_listener("127.0.0.1")
        self.assertEqual(code, 1, out)
        self.assertIn(f"127.0.0.1:{port}: Address already in use", out)

    def test_a_wildcard_listener_covers_the_address(self):
        _, code, out = self.start_beside_a_listener("0.0.0.0")
        self.assertEqual(code, 1, out)
        self.assertIn("Address already in use", out)

if __name__ == "__main__":
    unittest.main()
