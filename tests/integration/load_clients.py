"""Load generators run in the background while a test changes the proxy under them (a reload,
an upgrade), with their outcome parsed: h2load's request counts and status classes, wrk's
socket errors and non-2xx responses. A failed request is anything but a 2xx answer."""
import re
import subprocess

import harness


class Load:
    def __init__(self, cmd, parse):
        harness.need(cmd[0])
        self.cmd, self.parse = cmd, parse
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, start_new_session=True)

    def running(self):
        return self.proc.poll() is None

    def result(self, timeout=120):
        out, _ = self.proc.communicate(timeout=timeout)
        return self.parse(out)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def parse_h2load(out):
    done = re.search(r"requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded, "
                     r"(\d+) failed, (\d+) errored, (\d+) timeout", out)
    codes = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out)
    if not done or not codes:
        raise AssertionError(f"unexpected h2load output:\n{out}")
    total, ok2xx = int(done.group(1)), int(codes.group(1))
    return {"total": total, "done": int(done.group(2)), "ok": ok2xx,
            "failed": total - ok2xx, "out": out}


def parse_wrk(out):
    total = re.search(r"(\d+) requests in", out)
    if not total:
        raise AssertionError(f"unexpected wrk output:\n{out}")
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)",
                       out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    failed = (sum(int(g) for g in errors.groups()) if errors else 0) + \
        (int(non2xx.group(1)) if non2xx else 0)
    return {"total": int(total.group(1)), "failed": failed, "out": out}


def h2load(url, n, c=10, m=10, *flags):
    return Load(["h2load", "-n", str(n), "-c", str(c), "-m", str(m), *flags, url], parse_h2load)


def wrk(url, seconds, c=20, threads=2):
    return Load(["wrk", "-t", str(threads), "-c", str(c), "-d", f"{seconds}s", url], parse_wrk)
