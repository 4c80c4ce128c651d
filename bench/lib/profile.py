"""bench/run --profile: where a server's CPU goes during a measured client run.

Two perf sessions attach to the server's processes for the window the client runs:
- `perf record -e cpu-clock` samples them, kernel and user, HZ times a second of CPU. The
  samples are grouped by the object they fell in (the kernel, the server's own binary,
  nghttp2, OpenSSL, libc and the allocators, the event loop library, the rest). A group's share
  of the samples times the window's CPU µs per request is its µs per request.
- `perf stat` counts the system calls they enter (the raw_syscalls tracepoint, and one per
  call named in SYSCALLS) and their context switches.

Both cost the servers something (a sample a millisecond; a tracepoint hit per system call),
the same for every server: a --profile run's CPU µs per request is a few percent above a plain
run's. Its tables answer where, not how much.
"""
import os
import select
import signal
import subprocess

from .servers import BenchError

HZ = 999
# The calls a proxy spends its time in; the rest are counted in the total only.
SYSCALLS = ("read", "write", "readv", "writev", "recvfrom", "sendto", "recvmsg", "sendmsg",
            "sendfile64", "splice", "epoll_wait", "epoll_pwait", "epoll_ctl", "accept4",
            "close")
READS = ("read", "readv", "recvfrom", "recvmsg")
WRITES = ("write", "writev", "sendto", "sendmsg", "sendfile64", "splice")
EPOLL = ("epoll_wait", "epoll_pwait", "epoll_ctl")
# (key of the group in Measurement.extra, column title), in the tables' order.
GROUPS = (("prof_kernel", "kernel"), ("prof_own", "own code"), ("prof_nghttp2", "nghttp2"),
          ("prof_tls", "OpenSSL"), ("prof_libc", "libc, allocator"),
          ("prof_loop", "event loop"), ("prof_other", "other"))


def group_of(dso):
    """The group a perf sample's object belongs to: a key of GROUPS."""
    if dso.startswith("[kernel"):
        return "prof_kernel"
    name = os.path.basename(dso)
    if name.startswith("libnghttp2."):
        return "prof_nghttp2"
    if name.startswith(("libssl.", "libcrypto.")):
        return "prof_tls"
    if name.startswith(("libc.", "libc-", "libstdc++.", "libm.", "libjemalloc.",
                        "libtcmalloc")):
        return "prof_libc"
    if name.startswith(("libev.", "libuv.", "libevent")):
        return "prof_loop"
    if name.startswith(("lib", "ld-linux", "[")):
        return "prof_other"  # other libraries, [vdso] (the clock), [unknown]
    return "prof_own"


def parse_report(text):
    """{group key: samples} from `perf report --stdio -n --sort dso`."""
    groups = {}
    for line in text.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[0].endswith("%") and parts[1].isdigit():
            key = group_of(parts[2].strip())
            groups[key] = groups.get(key, 0) + int(parts[1])
    return groups


def parse_stat(text):
    """{event name: count} from `perf stat -x,` output (uncounted events left out)."""
    counts = {}
    for line in text.splitlines():
        parts = line.split(",")
        if len(parts) > 2 and parts[0].strip().isdigit():
            name = parts[2].strip().removeprefix("syscalls:sys_enter_")
            counts[name] = int(parts[0])
    return counts


def figures(groups, counts, requests, cpu_us_per_request):
    """The Measurement.extra keys of one profiled window."""
    total = sum(groups.values())
    if not total or not requests or cpu_us_per_request is None:
        raise BenchError(f"--profile: perf took {total} samples over {requests} requests")
    out = {"prof_samples": total}
    for key, _ in GROUPS:
        out[key] = cpu_us_per_request * groups.get(key, 0) / total

    def per_request(names):
        return sum(counts.get(n, 0) for n in names) / requests

    out["prof_syscalls"] = counts.get("raw_syscalls:sys_enter", 0) / requests
    out["prof_reads"] = per_request(READS)
    out["prof_writes"] = per_request(WRITES)
    out["prof_epoll"] = per_request(EPOLL)
    out["prof_switches"] = counts.get("context-switches", 0) / requests
    return out


def _stat_events():
    return ",".join(["raw_syscalls:sys_enter", "context-switches"] +
                    [f"syscalls:sys_enter_{n}" for n in SYSCALLS])


def check():
    """Raises BenchError unless perf can sample and count system calls on this machine."""
    try:
        proc = subprocess.run(["perf", "stat", "-x,", "-e", _stat_events(), "true"],
                              capture_output=True, text=True, timeout=30)
    except FileNotFoundError as e:
        raise BenchError("--profile needs perf (Debian's linux-perf)") from e
    counts = parse_stat(proc.stderr)
    if proc.returncode != 0 or not counts.get("raw_syscalls:sys_enter"):
        raise BenchError("--profile: perf cannot count system calls here (tracepoints, "
                         "perf_event_paranoid?):\n" + proc.stderr.strip()[-600:])


class Profile:
    """A context manager around one client run: perf attached to pids (the server's tree as it
    stands), counting from entry to exit. Each perf starts with its events off (-D -1) and
    turns them on and off when told through its control FIFO, answering on another: the
    window is exact however long perf takes to attach."""

    def __init__(self, pids, workdir, tag):
        self.pids = ",".join(str(p) for p in pids)
        self.data = os.path.join(workdir, f"{tag}.perf.data")
        self.stat = os.path.join(workdir, f"{tag}.perf-stat.csv")
        self.workdir, self.tag = workdir, tag
        self.procs = []  # (Popen, control fd, ack fd)

    def _start(self, name, argv):
        ctl = os.path.join(self.workdir, f"{self.tag}.{name}.ctl")
        ack = os.path.join(self.workdir, f"{self.tag}.{name}.ack")
        os.mkfifo(ctl)
        os.mkfifo(ack)
        # O_RDWR: a FIFO opened so does not wait for the other end.
        fds = os.open(ctl, os.O_RDWR), os.open(ack, os.O_RDWR)
        proc = subprocess.Popen(argv + ["-D", "-1", "--control", f"fifo:{ctl},{ack}", "-p",
                                        self.pids], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        self.procs.append((proc, *fds))

    def _tell(self, command):
        for proc, ctl, ack in self.procs:
            os.write(ctl, command.encode() + b"\n")
            ready, _, _ = select.select([ack], [], [], 30)
            if not ready:
                raise BenchError(f"perf did not answer {command!r} within 30 s: "
                                 f"{'exited' if proc.poll() is not None else 'running'}")
            os.read(ack, 64)

    def __enter__(self):
        try:
            self._start("record", ["perf", "record", "-q", "-e", "cpu-clock", "-F", str(HZ),
                                   "-o", self.data])
            self._start("stat", ["perf", "stat", "-x,", "-e", _stat_events(), "-o", self.stat])
            self._tell("enable")
        except BaseException:
            self._stop()
            raise
        return self

    def _stop(self):
        for proc, ctl, ack in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc, ctl, ack in self.procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            os.close(ctl)
            os.close(ack)
        self.procs = []

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                self._tell("disable")
        finally:
            self._stop()
        return False

    def figures(self, requests, cpu_us_per_request):
        report = subprocess.run(["perf", "report", "-i", self.data, "--stdio", "-n",
                                 "--sort", "dso"], capture_output=True, text=True, timeout=300)
        with open(self.stat) as f:
            counts = parse_stat(f.read())
        return figures(parse_report(report.stdout), counts, requests, cpu_us_per_request)
