"""What portico says when a newcomer gets something wrong (issue 22, defect 8): -t ends with
its verdict, as nginx -t does; a file that cannot be read says why; a certificate and a key of
different pairs is an error at the key's FILE:LINE:COL; an unquoted address says to quote it;
-T prints numbers as they were written and the connection limit a start would compute; and
every relative path, [log] file and pid_file too, is relative to the configuration file."""
import os
import shutil
import signal
import subprocess
import tempfile
import unittest

import harness
from proxy_harness import PORTICO, make_certificate, toml_string

TAIL = """
[[cluster]]
name = "app"
endpoints = ["127.0.0.1:1"]

[[route]]
cluster = "app"
"""


class Messages(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="portico-messages-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def check(self, text, *flags, cwd=None):
        path = os.path.join(self.tmp, "p.toml")
        with open(path, "w") as f:
            f.write(text)
        return path, subprocess.run([PORTICO, *(flags or ("-t",)), "-c", path], cwd=cwd,
                                    capture_output=True, text=True, timeout=30)

    def test_a_failed_test_says_so_last(self):
        path, r = self.check('[[listener]]\naddress = "127.0.0.1:1"\n' + TAIL.replace(
            'cluster = "app"\n', 'cluster = "nope"\n'))
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.splitlines()[-1], f"portico: configuration {path} test failed")
        self.assertEqual(r.stdout, "")

    def test_an_unquoted_address_is_told_to_be_quoted(self):
        path, r = self.check("[[listener]]\naddress = 127.0.0.1:20080   # the port\n" + TAIL)
        self.assertEqual(r.returncode, 1)
        self.assertIn(f'{path}:2:', r.stderr)
        self.assertIn('(a text value is a quoted string: address = "127.0.0.1:20080")', r.stderr)

    def test_files_that_cannot_be_used(self):
        cert, key = make_certificate(self.tmp, "a.test")
        other_cert, other_key = make_certificate(self.tmp, "b.test")
        os.chmod(key, 0o600)
        os.chmod(other_key, 0o600)
        path, r = self.check(
            '[[listener]]\naddress = "127.0.0.1:1"\n'
            f'tls = {{ certificate = {toml_string(cert)}, private_key = {toml_string(other_key)} }}'
            '\n\n[[listener]]\naddress = "127.0.0.1:2"\n'
            f'tls = {{ certificate = "absent.pem", private_key = {toml_string(key)} }}\n' + TAIL)
        self.assertEqual(r.returncode, 1)
        lines = r.stderr.splitlines()
        mismatch = next(l for l in lines if "is not the key" in l)
        self.assertRegex(mismatch, rf"^{path}:3:\d+: private key '{other_key}' is not the key of "
                                   rf"certificate '{cert}'")
        self.assertNotIn("error:0", r.stderr)  # no raw OpenSSL error codes
        absent = os.path.join(self.tmp, "absent.pem")
        self.assertIn(f"{path}:7:", next(l for l in lines if "absent.pem" in l))
        self.assertIn(f"certificate '{absent}' cannot be read: No such file or directory",
                      r.stderr)

    def test_dump_numbers_as_written_and_the_computed_limit(self):
        _, r = self.check('[[listener]]\naddress = "127.0.0.1:1"\n' + TAIL, "-T")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("0.00025,", r.stdout)
        self.assertNotIn("0000000001", r.stdout)
        self.assertIn("max_buffer_memory = 1073741824\n", r.stdout)
        server = r.stdout.split("[server]", 1)[1].split("\n[", 1)[0]
        limit = int(server.split("max_connections = ", 1)[1].split("\n", 1)[0])
        self.assertGreater(limit, 0, server)

    def test_relative_paths_are_the_config_files_directory(self):
        # [log] file and pid_file were relative to the working directory, access_log and TLS
        # files to the configuration file's.
        elsewhere = tempfile.mkdtemp(prefix="portico-cwd-")
        self.addCleanup(shutil.rmtree, elsewhere, ignore_errors=True)
        port, admin = harness.free_port(), harness.free_port()
        path = os.path.join(self.tmp, "p.toml")
        with open(path, "w") as f:
            f.write(f'[server]\nworkers = 1\npid_file = "portico.pid"\n\n[log]\nfile = "error.log"'
                    f'\n\n[[listener]]\naddress = "127.0.0.1:{port}"\naccess_log = "access.log"\n'
                    f'\n[admin]\naddress = "127.0.0.1:{admin}"\n' + TAIL)
        p = harness.Process([PORTICO, "-c", path], os.path.join(elsewhere, "out.log"),
                            cwd=elsewhere)
        try:
            harness.wait_until(lambda: p.proc.poll() is not None or any(
                os.path.exists(os.path.join(d, "portico.pid")) for d in (self.tmp, elsewhere)),
                what="the pid file")
            self.assertEqual(sorted(f for f in os.listdir(self.tmp) if f != "p.toml"),
                             ["access.log", "error.log", "portico.pid"], p.read_log())
        finally:
            self.assertEqual(p.stop(signal.SIGTERM), 0)


if __name__ == "__main__":
    unittest.main()
