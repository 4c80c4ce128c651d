"""The harness's stop of a process holds when it returns: tests SIGSTOP a peer (memcached, a
backend's workers) to make it silent, and count on it reading nothing more. kill(2) returns
before the target's threads have stopped (here most times, with memcached); a test that went
on at once let memcached answer the request meant to wait (test_backend_memcached failed in CI
waiting for that request to sit unread). And a server a test leaves running (a setUpClass that
failed after starting it never reaches its tearDownClass) dies with the test's process."""
import os
import signal
import subprocess
import tempfile
import textwrap
import unittest

import harness


def thread_states(pid):
    states = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/stat") as f:
            states.append(f.read().rsplit(")", 1)[1].split()[0])
    return states


class StopProcess(unittest.TestCase):
    def test_every_thread_is_stopped_when_it_returns(self):
        harness.need("memcached")
        port = harness.free_port()
        mc = subprocess.Popen(["memcached", "-U", "0", "-l", "127.0.0.1", "-p", str(port),
                               "-t", "4", "-u", "root"])
        self.addCleanup(mc.wait)
        self.addCleanup(mc.kill)
        harness.wait_until(lambda: harness.port_open("127.0.0.1", port), what="memcached")
        running = []
        for _ in range(200):
            harness.stop_process(mc.pid)
            states = thread_states(mc.pid)
            if any(s != "T" for s in states):
                running.append(states)
            harness.continue_process(mc.pid)
        self.assertEqual(running, [], f"{len(running)} of 200 stops returned too soon")



LEAVES_A_SERVER = textwrap.dedent("""
    import sys, unittest
    import harness

    class Fails(unittest.TestCase):
        @classmethod
        def setUpClass(cls):
            cls.server = harness.Process(["sleep", "600"], sys.argv[1])
            print(cls.server.pid, flush=True)
            raise RuntimeError("the set-up fails after starting a server")

        def test_never_runs(self):
            pass

    unittest.main(argv=["leaves_a_server"])
""")


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


class LeftoverServers(unittest.TestCase):
    def test_a_server_a_failed_set_up_left_running_dies_with_the_test(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = subprocess.run([harness.PYTHON, "-c", LEAVES_A_SERVER,
                                  os.path.join(tmp, "server.log")],
                                 cwd=os.path.dirname(os.path.abspath(__file__)),
                                 capture_output=True, text=True, timeout=60)
        pid = int(out.stdout.split()[0])
        self.addCleanup(lambda: alive(pid) and os.kill(pid, signal.SIGKILL))
        self.assertNotEqual(out.returncode, 0, out.stderr)  # the class failed
        self.assertFalse(alive(pid), "the server outlived the test that started it")


if __name__ == "__main__":
    unittest.main()
