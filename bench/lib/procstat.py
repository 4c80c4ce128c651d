"""CPU time and memory of one server: the process a bench started and all its descendants.

The CPU figure of a run is the difference of two snapshots taken right before and right after
the load generator runs. A snapshot sums, over every live process of the tree, its own
utime+stime (all its threads) plus cutime+cstime (children it has already reaped), so a worker
that exits or is respawned during the window is still counted once: its time moves from its own
line to its parent's cutime when the master reaps it.
"""
import os

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def children(pid):
    """Direct children of pid, over all its threads."""
    kids = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return kids
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids.extend(int(x) for x in f.read().split())
        except FileNotFoundError:
            pass
    return kids


def tree(root):
    """root and all its live descendants, parents first."""
    pids, queue = [], [root]
    while queue:
        pid = queue.pop(0)
        if pid in pids:
            continue
        pids.append(pid)
        queue.extend(children(pid))
    return pids


def _stat_fields(pid):
    with open(f"/proc/{pid}/stat") as f:
        raw = f.read()
    # comm (field 2) may hold spaces and parentheses: fields after the last ')' are plain.
    return raw[raw.rindex(")") + 2:].split()


def cpu_seconds(pids):
    """utime+stime+cutime+cstime of each pid, summed, in seconds."""
    ticks = 0
    for pid in pids:
        try:
            f = _stat_fields(pid)
        except (FileNotFoundError, ProcessLookupError):
            continue
        # After the comm, index 0 is field 3 (state); utime..cstime are fields 14..17.
        ticks += sum(int(x) for x in f[11:15])
    return ticks / CLOCK_TICKS


def tree_cpu_seconds(root):
    return cpu_seconds(tree(root))


def _status_kib(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def peak_rss_kib(pids):
    """Sum over the processes of each one's own peak resident set (VmHWM).

    Pages shared between a master and its forked workers count once per process, so this is
    an upper bound of what the server held at its peak; the same rule applies to every server.
    """
    return sum(_status_kib(pid, "VmHWM") for pid in pids)


def rss_kib(pids):
    """Sum of the processes' current resident sets (VmRSS)."""
    return sum(_status_kib(pid, "VmRSS") for pid in pids)


def tree_peak_rss_kib(root):
    return peak_rss_kib(tree(root))


def tree_rss_kib(root):
    return rss_kib(tree(root))


def machine_busy_seconds():
    """CPU time all CPUs spent busy (user, nice, system, irq, softirq, steal), in seconds.

    Over a load window, this minus the server's and the client's own CPU time is what other
    processes on the machine (or the hypervisor, as steal) took: the noise of that window.
    """
    with open("/proc/stat") as f:
        fields = f.readline().split()  # the aggregate "cpu" line
    user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in fields[1:9])
    return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS
