"""deploy/install-deps.sh installs the test peers without making them services of the machine:
run again on an installed machine it succeeds, touches no policy-rc.d it did not create, and
afterwards no nginx, h2o, haproxy, memcached or prometheus runs as a daemon (re-parented to
init, as a service is); the tests start their own on ports they pick.

A peer another test stops can also be seen re-parented to init for a moment: h2o's key-holding
child (neverbleed) outlives its killed parent by a few milliseconds. A service stays; so the
check waits for the list to empty and fails only on what is still there after 5 s."""
import os
import subprocess
import time
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PEERS = {"nginx", "h2o", "haproxy", "memcached", "prometheus"}


def daemons():
    """Peer processes whose parent is PID 1: started by init or a service manager."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except (FileNotFoundError, ProcessLookupError):
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        if ppid == 1 and comm in PEERS:
            found.append((int(pid), comm))
    return found


def lasting_daemons(within=5.0):
    """daemons(), once those that go away within `within` seconds are gone: [] as soon as no
    peer is left re-parented to init, else what still is at the end."""
    deadline = time.monotonic() + within
    found = daemons()
    while found and time.monotonic() < deadline:
        time.sleep(0.05)  # polling a condition (a process list), not waiting for an event
        found = [d for d in daemons() if d in found]
    return found


def read_if_there(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return f.read()


class InstallDeps(unittest.TestCase):
    def test_leaves_no_peer_running_as_a_service(self):
        policy = "/usr/sbin/policy-rc.d"
        before = read_if_there(policy)
        r = subprocess.run(["sh", os.path.join(ROOT, "deploy", "install-deps.sh")],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr)
        after = read_if_there(policy)
        self.assertEqual(after, before, "policy-rc.d changed or left behind")
        self.assertEqual(lasting_daemons(), [])


if __name__ == "__main__":
    unittest.main()
