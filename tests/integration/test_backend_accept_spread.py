"""portico-backend's workers share one listening socket; the connections waiting on it spread
over them rather than going to whichever worker ran first. A proxy opening its h2c connections
in a burst (four at once per proxy worker) must not have them all served by one backend process.

Each test stops the workers (SIGSTOP), queues the connections in the socket's backlog, lets the
workers go on together (SIGCONT), then sends one request per connection and reads each worker's
share from the master's per-slot request counts."""
import os
import re
import signal
import socket
import subprocess
import unittest

import harness
from harness import read_http1_response
from test_backend_metrics import AdminBackend

WORKERS = 4
BURSTS = 3
MAX_BURSTS = 12  # while a worker has yet to take part (one the scheduler starves)


def slot_counts(text):
    return {int(m.group(1)): int(m.group(2)) for m in re.finditer(
        r'^portico_backend_slot_requests_total\{slot="(\d+)"\} (\d+)$', text, re.M)}


def queued_connections(backend, n, stay_stopped=None):
    """n connections to the unix socket, made while every worker is stopped: all n wait in the
    backlog when the workers go on (all but stay_stopped, a pid already stopped)."""
    pids = [p for p in backend.worker_pids() if p != stay_stopped]
    for pid in pids:
        harness.stop_process(pid)
    conns = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(10)
            s.connect(backend.sock_path)  # completes into the backlog: no worker has to run
            conns.append(s)
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    return conns


def accepted_sockets(path):
    """The workers' ends of connections to the unix socket at path that are still open."""
    out = subprocess.run(["ss", "-Hx", "state", "connected", "src", path], check=True,
                         capture_output=True, text=True).stdout
    return len(out.splitlines())


def one_request_each(conns):
    for s in conns:
        s.sendall(b"GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
    for s in conns:
        resp = read_http1_response(s.makefile("rb"))
        assert resp.status == 200, resp
        s.close()


class AcceptSpread(unittest.TestCase):
    def setUp(self):
        self.backend = AdminBackend(unix=True, workers=WORKERS)
        self.addCleanup(self.backend.stop)

    def test_a_burst_of_connections_spreads_over_the_workers(self):
        self.assertEqual(len(self.backend.worker_pids()), WORKERS)
        before = {slot: 0 for slot in range(WORKERS)}
        burst = 0
        while burst < BURSTS or (min(before.values()) == 0 and burst < MAX_BURSTS):
            burst += 1
            one_request_each(queued_connections(self.backend, 2 * WORKERS))
            counts = slot_counts(self.backend.scrape())
            share = {slot: counts.get(slot, 0) - before[slot] for slot in before}
            self.assertEqual(sum(share.values()), 2 * WORKERS, (burst, share))
            # Two each when every worker wakes within the yield (50 ms); a worker the scheduler
            # leaves asleep longer gives its share to the others (4, 1, 2, 1 was seen with both
            # cores busy), never the whole burst: with no sharing the first awake takes all 8.
            self.assertLessEqual(max(share.values()), 5, (burst, share))
            before = {slot: counts.get(slot, 0) for slot in before}
            # The next burst starts with every worker holding none, as this one did.
            harness.wait_until(lambda: accepted_sockets(self.backend.sock_path) == 0,
                               what="the workers to close the burst's connections")
        # Over the bursts every worker takes part. Within one, a worker may miss its 50 ms: CI
        # saw {2, 3, 3, 0} under the ASan suite on 2 cores, four workers and two tests at once,
        # and {9, 0, 9, 6} over three bursts with the machine busier still: more bursts then,
        # up to MAX_BURSTS (with no sharing the first worker awake takes every connection).
        self.assertGreaterEqual(min(before.values()), 1, (burst, before))
        self.assertLessEqual(max(before.values()), burst * 2 * WORKERS // 2, (burst, before))

    def test_a_stopped_worker_does_not_hold_up_the_others(self):
        # One worker stays stopped: the others must not wait on it for a share it never takes.
        pids = self.backend.worker_pids()
        harness.stop_process(pids[0])
        try:
            conns = queued_connections(self.backend, 2 * WORKERS, stay_stopped=pids[0])
            one_request_each(conns)
        finally:
            os.kill(pids[0], signal.SIGCONT)
        counts = slot_counts(self.backend.scrape())
        self.assertEqual(sum(counts.values()), 2 * WORKERS, counts)



if __name__ == "__main__":
    unittest.main()
