"""What the report says about the machine and the programs: date, kernel, CPU, versions."""
import os
import platform
import ssl
import time

from .servers import first_line


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def mem_total_gib():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / (1024 * 1024)
    except OSError:
        pass
    return 0.0


def load_average():
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def describe():
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "kernel": platform.release(),
        "cpu": f"{cpu_model()} x {os.cpu_count()} CPUs",
        "memory": f"{mem_total_gib():.1f} GiB",
    }


def client_versions():
    return {
        "wrk": first_line(["wrk", "-v"]).split(" Copyright")[0],
        "h2load": first_line(["h2load", "--version"]),
        "openssl (certificates)": first_line(["openssl", "version"]),
        "python (idle and TLS clients)": f"{platform.python_version()}, {ssl.OPENSSL_VERSION}",
    }
