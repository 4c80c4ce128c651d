"""The profile-guided build (deploy/pgo-build.sh): its training run and its CMake switch.

The whole build (two compilations and the training) takes about ten minutes here, too long
for the suite; what can break without a compiler noticing is tested instead: the training run
must drive every workload to a 2xx and stop portico cleanly (its profile is written at exit),
and must fail loudly where it cannot; CMake must refuse a mode it does not know.
"""
import os
import subprocess
import tempfile
import unittest

import harness

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TRAIN = os.path.join(ROOT, "deploy", "pgo-train.py")
WORKLOADS = 11


class TrainingRun(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need("h2load", "openssl")

    def test_every_workload_is_driven_to_2xx_and_portico_stops_cleanly(self):
        ports = ",".join(str(harness.free_port()) for _ in range(3))
        out = subprocess.run([TRAIN, "--build-dir", harness.BUILD_DIR, "--requests", "600",
                              "--ports", ports], capture_output=True, text=True, timeout=240)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        lines = [l for l in out.stdout.splitlines() if " requests, " in l]
        self.assertEqual(len(lines), WORKLOADS, out.stdout)
        for what in ("HTTP/1.1 over TLS", "h2 over TLS", "h2c to an h2c origin",
                     "h2c POST of 4 KiB", "64 KiB file"):
            self.assertIn(what, out.stdout)
        self.assertIn("portico stopped, its profile written", out.stdout)

    def test_a_build_without_binaries_fails_with_the_reason(self):
        with tempfile.TemporaryDirectory() as empty:
            out = subprocess.run([TRAIN, "--build-dir", empty], capture_output=True, text=True,
                                 timeout=30)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("proxy/portico is not built", out.stderr)


class CMakeSwitch(unittest.TestCase):
    def test_an_unknown_mode_is_refused(self):
        harness.need("cmake")
        with tempfile.TemporaryDirectory() as build:
            out = subprocess.run(["cmake", "-S", ROOT, "-B", build, "-DPORTICO_TESTS=OFF",
                                  "-DPORTICO_PGO=sometimes"], capture_output=True, text=True,
                                 timeout=120)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn('PORTICO_PGO is "sometimes": it must be empty, generate or use', out.stderr)


if __name__ == "__main__":
    unittest.main()
