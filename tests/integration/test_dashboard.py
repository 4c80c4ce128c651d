"""The admin dashboard (issue 15) in a real browser: headless Chromium driven by Selenium
(Debian's chromium, chromium-driver and python3-selenium) loads portico's page while traffic
flows through the proxy, waits until the latency heatmap has drawn, and checks that the page's
numbers are /metrics' counters, that it logged no error and fetched nothing outside the admin
origin, that it fits a phone's width, and that it says so when the proxy drains and when it is
gone. portico-backend's --admin page is checked the same way. Screenshots are saved under
BUILD_DIR/test-artifacts/."""
import json
import os
import shutil
import signal
import tempfile
import threading
import unittest
import urllib.error
import urllib.request

import harness
from proxy_harness import Proxy

ARTIFACTS = os.path.join(harness.BUILD_DIR, "test-artifacts")


def browser(test, *extra_args):
    """Headless Chromium as the probe machine runs it (no background networking: this
    machine's network is closed), with the console and network logs kept; extra_args are more
    command-line switches."""
    harness.need("chromium", "chromedriver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    profile = tempfile.mkdtemp(prefix="portico-chromium-")
    test.addCleanup(shutil.rmtree, profile, True)
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium")
    # QUIC only where a test forces it onto an origin of its own (HTTP/3 tests).
    quic = any(a.startswith("--origin-to-force-quic-on=") for a in extra_args)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--enable-quic" if quic else "--disable-quic", "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1280,1000",
                f"--user-data-dir={profile}", *extra_args):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
    test.addCleanup(driver.quit)
    return driver


def requested_urls(driver):
    """Every network request the browser made (http, https, ws, wss; not chrome:// pages of
    its own, nor data: URLs, which fetch nothing)."""
    urls = []
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg["method"] == "Network.requestWillBeSent":
            url = msg["params"]["request"]["url"]
            if url.split(":", 1)[0] in ("http", "https", "ws", "wss"):
                urls.append(url)
    return urls


def severe_console(driver):
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def metric_total(text, name, **labels):
    """The sum of every sample of name whose labels include `labels`."""
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        head, value = line.rsplit(" ", 1)
        if all(f'{k}="{v}"' in head for k, v in labels.items()):
            total += float(value)
    return total


class Traffic:
    """Requests through the proxy in a loop, some answered 404 and 503, until stopped."""

    def __init__(self, port):
        self.port, self.stop_flag, self.sent = port, threading.Event(), 0
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        paths = ["/hello"] * 8 + ["/status/404", "/status/503", "/delay?ms=20"]
        while not self.stop_flag.is_set():
            for p in paths:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{self.port}{p}", timeout=10).read()
                except urllib.error.HTTPError as e:
                    e.read()
                self.sent += 1

    def stop(self):
        self.stop_flag.set()
        self.thread.join(30)


def group_totals(driver):
    """{group: total} of the groups table, read in one script: the page redraws it every
    second, and an element found by one call may be gone by the next (stale)."""
    return {k: float(v) for k, v in driver.execute_script(
        "const o = {}; for (const r of document.querySelectorAll('#groups tbody tr'))"
        " o[r.dataset.group] = r.dataset.total; return o;").items()}


def wait_drawn(driver, columns=3):
    """Until the heatmap has drawn at least `columns` seconds of requests."""
    harness.wait_until(
        lambda: int(driver.find_element("id", "heatmap").get_attribute("data-columns") or 0)
        >= columns, timeout=30, what="the heatmap drawn")


class ProxyDashboard(unittest.TestCase):
    def setUp(self):
        self.backend = harness.Backend(workers=1)
        self.addCleanup(self.backend.stop)
        self.proxy = Proxy([f"127.0.0.1:{self.backend.port}"], workers=2)
        self.addCleanup(self.proxy.stop)
        self.origin = f"http://127.0.0.1:{self.proxy.admin_port}"
        os.makedirs(ARTIFACTS, exist_ok=True)

    def test_the_page_draws_live_and_its_numbers_are_the_metrics(self):
        driver = browser(self)
        traffic = Traffic(self.proxy.port)
        self.addCleanup(traffic.stop)
        driver.get(self.origin + "/")
        wait_drawn(driver)
        # Every phase of the cluster draws too.
        from selenium.webdriver.support.ui import Select
        Select(driver.find_element("id", "group")).select_by_value("cluster app")
        phases = [o.get_attribute("value") for o in
                  Select(driver.find_element("id", "phase")).options]
        self.assertEqual(phases, ["total", "queue", "connect", "first_byte"])
        Select(driver.find_element("id", "phase")).select_by_value("first_byte")
        harness.wait_until(lambda: driver.find_element("id", "heatmap").get_attribute(
            "data-phase") == "first_byte", what="the first-byte heatmap")
        wait_drawn(driver, 1)
        driver.save_screenshot(os.path.join(ARTIFACTS, "dashboard.png"))
        traffic.stop()
        metrics = self.proxy.admin("/metrics")
        want = metric_total(metrics, "portico_requests_total")
        self.assertGreater(want, 20)
        # The page's totals come from the last second's sample: they reach the counters.
        harness.wait_until(lambda: float(driver.find_element("id", "t-total")
                                         .get_attribute("data-value") or 0) == want,
                           timeout=10, what="the page's total at /metrics'")
        rows = group_totals(driver)
        self.assertEqual(rows["route */"], want)
        self.assertEqual(rows["cluster app"], want)
        errors_5xx = metric_total(metrics, "portico_requests_total", code="503")
        self.assertGreater(errors_5xx, 0)
        # Read in one script: the page redraws its gauges every second, and an element found
        # here may be replaced before its text is asked for (StaleElementReferenceException).
        gauges = driver.execute_script(
            "const o = {}; for (const e of document.querySelectorAll('[data-gauge]'))"
            " o[e.dataset.gauge] = e.textContent; return o;")
        self.assertIn("client_connections_h1", gauges)
        self.assertEqual(severe_console(driver), [])
        urls = requested_urls(driver)
        self.assertTrue(urls)
        self.assertEqual([u for u in urls if not u.startswith(self.origin + "/")], [])

    def test_a_phone_sees_the_page_without_sideways_scrolling(self):
        driver = browser(self)
        driver.set_window_size(390, 844)
        traffic = Traffic(self.proxy.port)
        self.addCleanup(traffic.stop)
        driver.get(self.origin + "/dashboard")
        wait_drawn(driver)
        width = driver.execute_script(
            "return [document.documentElement.scrollWidth, window.innerWidth]")
        self.assertLessEqual(width[0], width[1])
        driver.save_screenshot(os.path.join(ARTIFACTS, "dashboard-phone.png"))

    def test_draining_then_gone_is_said_on_the_page(self):
        driver = browser(self)
        driver.get(self.origin + "/")
        harness.wait_until(lambda: driver.find_element("id", "state").text == "live",
                           what="the page live")
        # A request in flight keeps the proxy draining (not exited) for a while.
        slow = threading.Thread(target=lambda: urllib.request.urlopen(
            f"http://127.0.0.1:{self.proxy.port}/delay?ms=3000", timeout=20).read())
        slow.start()
        harness.wait_until(lambda: json.loads(self.proxy.admin("/status"))
                           ["client_connections"] >= 1, what="the slow request in flight")
        self.proxy.process.proc.send_signal(signal.SIGTERM)
        harness.wait_until(lambda: driver.find_element("id", "state").text == "draining",
                           timeout=10, what="the page saying draining")
        self.assertIn("Draining", driver.find_element("id", "banner").text)
        slow.join(30)
        self.proxy.process.proc.wait(timeout=30)
        harness.wait_until(lambda: driver.find_element("id", "state").text == "down",
                           timeout=10, what="the page saying unreachable")
        self.assertIn("Unreachable", driver.find_element("id", "banner").text)


class BackendDashboard(unittest.TestCase):
    def test_the_backend_page_shows_its_apps_and_workers(self):
        admin_port = harness.free_port()
        backend = harness.Backend("--admin", f"127.0.0.1:{admin_port}", workers=2)
        self.addCleanup(backend.stop)
        harness.wait_until(lambda: harness.port_open("127.0.0.1", admin_port),
                           what="the backend's admin")
        os.makedirs(ARTIFACTS, exist_ok=True)
        driver = browser(self)
        traffic = Traffic(backend.port)
        self.addCleanup(traffic.stop)
        origin = f"http://127.0.0.1:{admin_port}"
        driver.get(origin + "/")
        wait_drawn(driver)
        self.assertEqual(driver.find_element("id", "title").text, "portico-backend")
        traffic.stop()
        metrics = harness.http_get(admin_port, "/metrics")[1].decode()
        want = metric_total(metrics, "portico_backend_requests_total")
        harness.wait_until(lambda: float(driver.find_element("id", "t-total")
                                         .get_attribute("data-value") or 0) == want,
                           timeout=10, what="the page's total at /metrics'")
        rows = group_totals(driver)
        self.assertEqual(rows["app hello"],
                         metric_total(metrics, "portico_backend_requests_total", app="hello"))
        self.assertEqual(rows["app status"],
                         metric_total(metrics, "portico_backend_requests_total", app="status"))
        tables = driver.find_element("id", "tables").text
        self.assertIn("workers", tables)
        self.assertIn("worker restarts", tables)
        driver.save_screenshot(os.path.join(ARTIFACTS, "dashboard-backend.png"))
        self.assertEqual(severe_console(driver), [])
        self.assertEqual([u for u in requested_urls(driver) if not u.startswith(origin + "/")],
                         [])


if __name__ == "__main__":
    unittest.main()
