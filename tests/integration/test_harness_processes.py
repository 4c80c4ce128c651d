"""The harness's stop of a process holds when it returns: tests SIGSTOP a peer (memcached, a
backend's workers) to make it silent, and count on it reading nothing more. kill(2) returns
before the target's threads have stopped (here most times, with memcached); a test that went
on at once let memcached answer the request meant to wait (test_backend_memcached failed in CI
waiting for that request to sit unread)."""
import os
import signal
import subprocess
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


if __name__ == "__main__":
    unittest.main()
