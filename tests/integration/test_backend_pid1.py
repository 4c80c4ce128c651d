"""portico-backend as PID 1 of its own PID namespace (a container's entry point, the Kubernetes
example): it serves with the workers it was asked for, rather than taking "my parent is PID 1"
for "the master is gone" and forking workers in a loop; and it reaps what a PID 1 inherits
(orphans that exit), so no zombie piles up."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import unittest

import harness
from harness import Process, free_port, http_get, need, port_open, process_children, wait_until


def children_named(pid, name):
    """Children of pid (host PIDs) whose command is name, with their states."""
    out = []
    for child in process_children(pid):
        try:
            with open(f"/proc/{child}/stat") as f:
                stat = f.read()
        except FileNotFoundError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        state = stat[stat.rindex(")") + 2]
        if comm == name:
            out.append((child, state))
    return out


class Pid1Test(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need("unshare", "nsenter")
        cls.tmp = tempfile.mkdtemp(prefix="portico-pid1-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)
        cls.port = free_port()
        cls.server = Process(
            ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child=SIGTERM",
             harness.BACKEND, "--listen", f"127.0.0.1:{cls.port}", "--workers", "2"],
            os.path.join(cls.tmp, "backend.log"))
        try:
            wait_until(lambda: cls.server.proc.poll() is not None or
                       port_open("127.0.0.1", cls.port), what="portico-backend as PID 1")
            if cls.server.proc.poll() is not None:
                raise AssertionError(f"unshare exited: {cls.server.read_log()}")
            # unshare's one child is the master: PID 1 inside, an ordinary PID out here.
            wait_until(lambda: len(process_children(cls.server.pid)) == 1, what="the master")
            cls.master = process_children(cls.server.pid)[0]
        except BaseException:
            cls.server.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        # unshare --fork ignores TERM while it waits for its child: the master is told.
        os.kill(cls.master, signal.SIGTERM)
        try:
            cls.code = cls.server.proc.wait(timeout=20)
        finally:
            cls.server.stop()
        if cls.code != 0:
            raise AssertionError(f"a PID-1 master stopped by TERM exited {cls.code}: "
                                 f"{cls.server.read_log()[-2000:]}")

    def test_serves_with_the_workers_it_was_asked_for(self):
        for _ in range(20):
            status, body = http_get(self.port, "/hello", timeout=5)
            self.assertEqual((status, body), (200, b"hello world\n"))
        wait_until(lambda: len(process_children(self.master)) == 2, what="two workers")
        started = re.findall(r"worker \d+ started", self.server.read_log())
        # The fork loop started thousands in a few seconds; a healthy master, exactly two.
        self.assertEqual(len(started), 2, self.server.read_log()[-2000:])

    def test_an_orphan_that_exits_is_reaped(self):
        # A process started in the namespace whose parent exits at once is re-parented to the
        # namespace's PID 1, the master; when it exits, only the master can reap it.
        subprocess.run(["nsenter", "-t", str(self.master), "-p", "-m", "--",
                        "sh", "-c", "sleep 1 & exit 0"], check=True, timeout=10)
        wait_until(lambda: children_named(self.master, "sleep") != [], timeout=5,
                   what="the orphan re-parented to the master")
        wait_until(lambda: children_named(self.master, "sleep") == [], timeout=10,
                   what=f"the orphan reaped (left: {children_named(self.master, 'sleep')})")
        # And the workers are still the two it had.
        self.assertEqual(len(process_children(self.master)), 2)


if __name__ == "__main__":
    unittest.main()
