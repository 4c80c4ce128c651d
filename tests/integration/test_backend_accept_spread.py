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
import unittest

import harness
from harness import read_http1_response
from test_backend_metrics import AdminBackend

WORKERS = 4


def slot_counts(text):
    return {int(m.group(1)): int(m.group(2)) for m in re.finditer(
        r'^portico_backend_slot_requests_total\{slot="(\d+)"\} (\d+)$', text, re.M)}


def queued_connections(backend, n, stay_stopped=None):
    """n connections to the unix socket, made while every worker is stopped: all n wait in the
    backlog when the workers go on (all but stay_stopped, a pid already stopped)."""
    pids = [p for p in backend.worker_pids() if p != stay_stopped]
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
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
        one_request_each(queued_connections(self.backend, 2 * WORKERS))
        counts = slot_counts(self.backend.scrape())
        self.assertEqual(sum(counts.values()), 2 * WORKERS, counts)
        self.assertEqual(len(counts), WORKERS, counts)
        # Two each when every worker wakes within the yield; a worker the scheduler leaves
        # asleep too long gives one of its share to another, never the whole burst.
        self.assertLessEqual(max(counts.values()), 3, counts)
        self.assertGreaterEqual(min(counts.values()), 1, counts)

    def test_a_stopped_worker_does_not_hold_up_the_others(self):
        # One worker stays stopped: the others must not wait on it for a share it never takes.
        pids = self.backend.worker_pids()
        os.kill(pids[0], signal.SIGSTOP)
        try:
            conns = queued_connections(self.backend, 2 * WORKERS, stay_stopped=pids[0])
            one_request_each(conns)
        finally:
            os.kill(pids[0], signal.SIGCONT)
        counts = slot_counts(self.backend.scrape())
        self.assertEqual(sum(counts.values()), 2 * WORKERS, counts)



if __name__ == "__main__":
    unittest.main()
