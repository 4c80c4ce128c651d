"""deploy/install-deps.sh installs the test peers without making them services of the machine:
run again on an installed machine it succeeds, touches no policy-rc.d it did not create, and
afterwards no nginx, h2o, haproxy, memcached or prometheus runs as a daemon (re-parented to
init, as a service is); the tests start their own on ports they pick."""
import os
import subprocess
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


class InstallDeps(unittest.TestCase):
    def test_leaves_no_peer_running_as_a_service(self):
        policy = "/usr/sbin/policy-rc.d"
        before = open(policy).read() if os.path.exists(policy) else None
        r = subprocess.run(["sh", os.path.join(ROOT, "deploy", "install-deps.sh")],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr)
        after = open(policy).read() if os.path.exists(policy) else None
        self.assertEqual(after, before, "policy-rc.d changed or left behind")
        self.assertEqual(daemons(), [])


if __name__ == "__main__":
    unittest.main()
