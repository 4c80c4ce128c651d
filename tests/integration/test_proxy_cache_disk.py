"""A route's cache on disk (`cache.disk`): responses stored there are served again after a
restart with no request to the origin (the index read back from the files), by sendfile from
the file on HTTP/1.1 and from its mapping on HTTP/2, ranges too; a file half written (a
crash's temporary, a file cut short) is never served; a purge deletes the files, so a purged
response does not come back with the next restart; the directory stays within disk_size; the
two workers share the directory, so a response stored by one is a hit on the other; a reload
keeps it; a stored response that sets a cookie is dropped, not served, once the route passes
them."""
import os
import shutil
import signal
import subprocess
import tempfile
import unittest
import urllib.parse

import harness
from cache_origin import CacheOrigin
from proxy_harness import Proxy, toml_string
from test_proxy_cache import q, request


def routes(directory, size, more=""):
    return f"""
[[route]]
path_prefix = "/"
cluster = "app"
cache = {{ disk = {toml_string(directory)}, disk_size = {size}, memory = 1048576{more} }}
"""


HOST = "cache.example"


def files_in(directory):
    return sorted(os.path.join(d, f) for d, _, names in os.walk(directory) for f in names)


class CacheOnDisk(unittest.TestCase):
    def setUp(self):
        harness.need("curl")
        self.origin = CacheOrigin()
        self.dir = tempfile.mkdtemp(prefix="portico-cache-disk-")
        self.proxy = None

    def tearDown(self):
        if self.proxy:
            self.proxy.stop()
        self.origin.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def start(self, size=64 << 20, read_back=0, more=""):
        """Portico with two workers on the directory; waits until the directory's responses
        (read_back of them) are in the index again."""
        self.proxy = Proxy([self.origin.endpoint], workers=2,
                           routes_first=routes(self.dir, size, more), catch_all=False)
        harness.wait_until(
            lambda: "read back" in self.proxy.read_log(),
            what="the cache directory read back")
        self.assertEqual(self.proxy.metric("portico_cache_disk_objects"), read_back)

    def restart(self, read_back):
        self.proxy.stop()
        self.proxy = None
        self.start(read_back=read_back)

    def get(self, path, headers=None):
        # The key has the host, the same after a restart on another port.
        return request(self.proxy.port, path, {"Host": HOST, **(headers or {})})

    def served(self, path):
        return len(self.origin.requests_for(path))

    def test_responses_are_served_again_after_a_restart(self):
        small = q("/small", cc="max-age=600", etag='"s1"')
        large = q("/large", cc="max-age=600", len=300000)
        self.start()
        bodies = {}
        for path in (small, large):
            status, fields, bodies[path] = self.get(path)
            self.assertIn("stored", fields["cache-status"])
        self.assertEqual(self.proxy.metric("portico_cache_disk_objects"), 2)
        self.assertGreaterEqual(self.proxy.metric("portico_cache_disk_bytes"), 300000)
        self.restart(read_back=2)
        # Whichever worker each request reaches, the directory is theirs together.
        for _ in range(4):
            for path in (small, large):
                status, fields, body = self.get(path)
                self.assertEqual((status, body), (200, bodies[path]), path)
                self.assertEqual(fields["cache-status"], "Portico; hit")
                self.assertIn("age", fields)
        before = self.proxy.metric("portico_sendfile_bytes_total")
        # A copy in memory may answer now; the memory store of 1 MiB holds 300 KB thrice at
        # most, so sendfile is asked of the one read from disk or from its memory file alike.
        self.assertEqual(self.get(large)[2], bodies[large])
        self.assertEqual(self.proxy.metric("portico_sendfile_bytes_total"), before + 300000)
        status, _, part = self.get(large, {"Range": "bytes=100000-199999"})
        self.assertEqual((status, part), (206, bodies[large][100000:200000]))
        status, _, _ = self.get(small, {"If-None-Match": '"s1"'})
        self.assertEqual(status, 304)
        out = subprocess.run(["curl", "-sS", "--http2-prior-knowledge", "-H", "Host: " + HOST,
                              self.proxy.url + large], capture_output=True, timeout=30)
        self.assertEqual(out.stdout, bodies[large])
        self.assertEqual((self.served(small), self.served(large)), (1, 1))

    def test_a_stored_cookie_is_not_served_once_the_route_passes_them(self):
        path = q("/cookie", cc="max-age=600", cookie="sid")
        self.start(more=', set_cookie = "store"')
        _, fields, _ = self.get(path)
        self.assertIn("stored", fields["cache-status"])
        self.proxy.stop()
        self.start(read_back=1)  # set_cookie = "pass", the default
        status, fields, _ = self.get(path)
        self.assertEqual(status, 200)
        self.assertNotIn("hit", fields["cache-status"])
        self.assertEqual(self.served(path), 2)
        self.assertEqual(files_in(self.dir), [])  # gone from the directory too

    def test_a_half_written_file_is_never_served(self):
        whole, cut = q("/whole", cc="max-age=600"), q("/cut", cc="max-age=600", len=5000)
        self.start()
        self.get(whole)
        _, _, body = self.get(cut)
        self.proxy.stop()
        self.proxy = None
        names = {path: None for path in (whole, cut)}
        for f in files_in(self.dir):
            with open(f, "rb") as fh:
                data = fh.read()
            for path in names:
                if path.encode() in data:  # the key names it
                    names[path] = f
        self.assertTrue(all(names.values()), names)
        # The disk lost a file's tail; a crash left a temporary of a write under way.
        os.truncate(names[cut], os.path.getsize(names[cut]) - 100)
        with open(os.path.join(self.dir, "tmp.1.0"), "wb") as fh:
            fh.write(b"PORTCF01 half of a response")
        self.start(read_back=1)
        self.assertFalse(os.path.exists(names[cut]))
        self.assertFalse(os.path.exists(os.path.join(self.dir, "tmp.1.0")))
        status, fields, again = self.get(cut)
        self.assertEqual(status, 200)
        self.assertIn("fwd=uri-miss", fields["cache-status"])
        self.assertNotEqual(again, body)  # a new response from the origin, whole
        self.assertEqual(len(again), 5000)
        self.assertEqual(self.served(cut), 2)
        self.assertEqual(self.get(whole)[1]["cache-status"], "Portico; hit")
        self.assertEqual(self.served(whole), 1)

    def test_a_purged_response_does_not_come_back_after_a_restart(self):
        kept, purged = q("/kept", cc="max-age=600"), q("/purged", cc="max-age=600")
        self.start()
        for path in (kept, purged):
            self.get(path)
        url = urllib.parse.quote(f"http://{HOST}{purged}")
        status, _, body = request(self.proxy.admin_port, "/cache/purge?url=" + url,
                                  method="POST")
        self.assertEqual((status, body), (200, b'{"purged":1}\n'))
        self.assertEqual(self.proxy.metric("portico_cache_disk_objects"), 1)
        self.restart(read_back=1)
        self.assertIn("fwd=uri-miss", self.get(purged)[1]["cache-status"])
        self.assertEqual(self.get(kept)[1]["cache-status"], "Portico; hit")
        self.assertEqual((self.served(kept), self.served(purged)), (1, 2))

    def test_a_reload_keeps_the_directory(self):
        path = q("/reloaded", cc="max-age=600")
        self.start()
        _, _, body = self.get(path)
        os.kill(self.proxy.pid, signal.SIGHUP)  # the memory stores go with the old routers
        harness.wait_until(lambda: "every worker serves generation 2" in self.proxy.read_log(),
                           what="the reload applied")
        self.assertEqual(self.proxy.metric("portico_cache_disk_objects"), 1)
        for _ in range(4):
            status, fields, again = self.get(path)
            self.assertEqual((status, again, fields["cache-status"]), (200, body, "Portico; hit"))
        self.assertEqual(self.served(path), 1)

    def test_the_directory_stays_within_disk_size(self):
        size = 1 << 20
        self.start(size=size)
        for i in range(40):
            self.assertEqual(self.get(q(f"/fill/{i}", cc="max-age=600", len=100000))[0], 200)
        on_disk = sum(os.path.getsize(f) for f in files_in(self.dir))
        self.assertLessEqual(on_disk, size)
        self.assertLessEqual(self.proxy.metric("portico_cache_disk_bytes"), size)
        self.assertEqual(self.proxy.metric("portico_cache_disk_objects"),
                         len(files_in(self.dir)))
        self.assertGreaterEqual(len(files_in(self.dir)), 5)
        # The newest is there, and a hit.
        self.assertEqual(self.get(q("/fill/39", cc="max-age=600", len=100000))[1]
                         ["cache-status"], "Portico; hit")


if __name__ == "__main__":
    unittest.main()
