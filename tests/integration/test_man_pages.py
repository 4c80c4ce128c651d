"""The man pages the build makes (deploy/man): each renders without a groff warning, and none
can fall behind the program. portico.toml(5) names every key the configuration loader accepts
(read from the loader's own lists of known keys: the `only_keys` calls of proxy/config and the
filters' settings readers), and every key it heads an entry with is one the loader knows;
portico(8) and portico-backend(8) name every option their program's --help lists."""
import glob
import os
import re
import subprocess
import unittest

import harness

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
MAN = os.path.join(harness.BUILD_DIR, "deploy", "man")


def loader_keys():
    """Every key name the loader accepts, from its sources."""
    sources = glob.glob(os.path.join(ROOT, "proxy", "config", "*.cc")) + glob.glob(
        os.path.join(ROOT, "proxy", "filters", "*.cc"))
    keys = set()
    calls = 0
    for path in sources:
        with open(path) as f:
            text = f.read()
        for m in re.finditer(r"only_keys\(\s*[^,]+,\s*\{([^}]*)\}", text):
            keys |= set(re.findall(r'"([a-z0-9_]+)"', m.group(1)))
            calls += 1
        # A filter's own [[route]] key: `const config::RouteSettingsReader settings_NAME{"key",`
        keys |= set(re.findall(r'RouteSettingsReader settings_\w+\{\s*"([a-z0-9_]+)"', text))
    return keys, calls


def page_source(name):
    with open(os.path.join(MAN, name + ".scd")) as f:
        return f.read()


def plain(scd):
    return scd.replace("\\_", "_").replace("\\*", "*")


class ManPages(unittest.TestCase):
    def test_pages_render_without_warnings(self):
        harness.need("man")
        for page in ("portico.8", "portico-backend.8", "portico.toml.5"):
            path = os.path.join(MAN, page)
            self.assertTrue(os.path.isfile(path + ".gz"), page)
            r = subprocess.run(["man", "--warnings", "-E", "UTF-8", "-l", path],
                               capture_output=True, text=True, timeout=60,
                               env={**os.environ, "MANWIDTH": "80", "MAN_KEEP_STDERR": "1"})
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stderr.strip(), "", page)
            self.assertGreater(len(r.stdout.splitlines()), 100, page)

    def test_configuration_page_names_every_loader_key(self):
        keys, calls = loader_keys()
        self.assertGreater(calls, 20)  # the sources still read as this test expects
        self.assertIn("compress", keys)  # a filter's own key
        self.assertIn("grace_period", keys)
        text = plain(page_source("portico.toml.5"))
        # Each entry's heading: *[server] workers*, *tls.min_version*, *[[route]] host*, ...
        keys_section = text.split("\n# KEYS\n", 1)[1].split("\n# ", 1)[0]
        headings = re.findall(r"^\*([^*\n]+)\*$", keys_section, re.M)
        self.assertGreater(len(headings), 100)
        named = set()
        for h in headings:
            named |= set(re.findall(r"(?<![\w.-])([a-z][a-z0-9_]*)\b(?!\()", h))
        section_words = {"server", "listener", "admin", "metrics", "cluster", "route", "log"}
        bold = set(re.findall(r"\*([^*\n]+)\*", text))
        documented = set()
        for b in bold:
            documented |= set(re.findall(r"[a-z][a-z0-9_]*", b))
        missing = sorted(keys - documented)
        self.assertEqual(missing, [], "keys the loader accepts that portico.toml(5) never names")
        unknown = sorted(n for n in named - keys - section_words
                         if n not in {"weights"})  # "endpoints weights": a form, not a key
        self.assertEqual(unknown, [], "entries of portico.toml(5) the loader does not know")

    def test_program_pages_name_every_option(self):
        for program, page in (("proxy/portico", "portico.8"),
                              ("backend/portico-backend", "portico-backend.8")):
            r = subprocess.run([os.path.join(harness.BUILD_DIR, program), "--help"],
                               capture_output=True, text=True, timeout=10)
            options = set(re.findall(r"--[a-z][a-z0-9-]+", r.stdout + r.stderr))
            self.assertGreater(len(options), 3, program)
            text = plain(page_source(page))
            missing = sorted(o for o in options if o not in text)
            self.assertEqual(missing, [], f"{page} lacks options {program} --help lists")


if __name__ == "__main__":
    unittest.main()
