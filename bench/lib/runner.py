"""One bench run: rounds x workloads x servers, each measurement on a freshly started server.

Order: for each round, for each workload, each server in turn (A B C A B C ...), so that the
servers compared in one table were measured minutes apart, not one after the other's whole
series. Each measurement: start the server, wait until it is ready, check one response, warm
up (not measured), snapshot the server's CPU time, run the client, snapshot again, read the peak
RSS, stop the server.
"""
import os
import sys
import tempfile
import time
from dataclasses import dataclass

from . import loadgen, procstat
from .servers import BenchError


@dataclass
class Cpus:
    server: int | None  # CPU the server (all its processes) is pinned to
    client: int | None  # CPU the load generator is pinned to


@dataclass
class Measurement:
    round: int
    server: str
    workload: str
    client: loadgen.ClientResult
    server_cpu_s: float
    peak_rss_kib: int
    respawned: int  # workers that changed PID during the window (a crash, or a retirement)
    machine_busy_s: float = 0.0  # every CPU's busy time over the window, all processes

    @property
    def other_cpu_pct(self):
        """CPU % that neither the server nor the client used in the window: the noise."""
        if not self.client.wall_s:
            return None
        other = self.machine_busy_s - self.server_cpu_s - self.client.client_cpu_s
        return max(0.0, 100 * other / self.client.wall_s)

    @property
    def cpu_us_per_request(self):
        return self.server_cpu_s * 1e6 / self.client.requests if self.client.requests else None

    @property
    def server_cpu_pct(self):
        return 100 * self.server_cpu_s / self.client.wall_s if self.client.wall_s else None

    @property
    def client_cpu_pct(self):
        return 100 * self.client.client_cpu_s / self.client.wall_s if self.client.wall_s else None


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def measure_one(spec, workload, load, warmup_s, cpus, tmp_root, tag, h2_latency=True):
    workdir = tempfile.mkdtemp(prefix=f"{spec.name}-", dir=tmp_root)
    server = spec.start(workdir, cpus.server)
    try:
        server.wait_ready(timeout=30)
        if workload.protocol == "h1":
            server.check(workload.path, workload.expect_body)
        url = server.url(workload.protocol, workload.path)
        client = loadgen.CLIENTS[workload.client]
        kwargs = {"latency": h2_latency} if workload.client == "h2load" else {}
        if warmup_s > 0:
            warm = loadgen.Load(load.connections, load.streams, warmup_s, None, load.timeout_s)
            client(url, warm, cpus.client, workdir, f"{tag}-warmup", **kwargs)
        pids_before = procstat.tree(server.pid)
        cpu_before = procstat.cpu_seconds(pids_before)
        busy_before = procstat.machine_busy_seconds()
        result = client(url, load, cpus.client, workdir, tag, **kwargs)
        busy_after = procstat.machine_busy_seconds()
        pids_after = procstat.tree(server.pid)
        cpu_after = procstat.cpu_seconds(pids_after)
        peak = procstat.tree_peak_rss_kib(server.pid)
        if server.proc.poll() is not None:
            raise BenchError(f"{spec.name} exited during the run ({server.proc.returncode}):\n"
                             f"{server.log_tail()}")
        respawned = len(set(pids_before) - set(pids_after))
        if respawned:
            log(f"  {spec.name}: {respawned} process(es) gone during the run; "
                f"log tail:\n{server.log_tail()}")
        return Measurement(0, spec.name, workload.key, result, cpu_after - cpu_before, peak,
                           respawned, busy_after - busy_before)
    finally:
        server.stop()


def run(suite, load_for, rounds, warmup_s, cpus, tmp_root, h2_latency=True):
    """All measurements of the run, in the order they were taken.

    load_for(workload) gives the Load of a workload (timed for wrk, timed or counted for h2load).
    """
    measurements = []
    with suite.shared(tmp_root, cpus):
        for rnd in range(1, rounds + 1):
            for workload in suite.workloads:
                for spec in suite.servers:
                    if not spec.supports(workload):
                        continue
                    tag = f"r{rnd}-{workload.key}-{spec.name}"
                    log(f"round {rnd}/{rounds}: {workload.key} on {spec.name}")
                    m = measure_one(spec, workload, load_for(workload), warmup_s, cpus, tmp_root,
                                    tag, h2_latency)
                    m.round = rnd
                    c = m.client
                    log(f"  {c.rps:,.0f} req/s, {m.cpu_us_per_request or 0:.1f} us CPU/req, "
                        f"{c.requests} requests, {c.errors} errors, "
                        f"server CPU {m.server_cpu_pct or 0:.0f}%, "
                        f"client CPU {m.client_cpu_pct or 0:.0f}%, "
                        f"others {m.other_cpu_pct or 0:.0f}%")
                    measurements.append(m)
    return measurements


def pick_cpus(server_cpu, client_cpu):
    """Pins server and client to different CPUs when the machine has them."""
    available = os.sched_getaffinity(0)
    if server_cpu != client_cpu and {server_cpu, client_cpu} <= available:
        return Cpus(server_cpu, client_cpu)
    return Cpus(None, None)
