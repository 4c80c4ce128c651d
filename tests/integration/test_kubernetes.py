"""deploy/kubernetes/sidecar.yaml as a reviewer would read it: Portico a native sidecar (an
init container with restartPolicy: Always), preStop before SIGTERM, a termination grace period
that covers preStop and Portico's grace_period, resources and a locked-down securityContext on
every container, probes on /readyz and /healthz, both admin ports annotated for Prometheus, a
ConfigMap whose portico.toml Portico accepts, and whose admin port answers only read-only paths
until a token is configured as the comments say. Debian packages no Kubernetes schema validator
(kubeconform, kubeval): the checks are structural, with python3-yaml."""
import http.client
import os
import subprocess
import tempfile
import tomllib
import unittest

import yaml

import harness
from proxy_harness import start_example

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PORTICO = os.path.join(harness.BUILD_DIR, "proxy", "portico")


class Kubernetes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(ROOT, "deploy", "kubernetes", "sidecar.yaml")) as f:
            cls.docs = [d for d in yaml.safe_load_all(f) if d]
        cls.by_kind = {}
        for d in cls.docs:
            for key in ("apiVersion", "kind", "metadata"):
                assert key in d, f"{key} missing in {d}"
            cls.by_kind.setdefault(d["kind"], []).append(d)
        cls.pod = cls.by_kind["Deployment"][0]["spec"]["template"]["spec"]
        cls.config = cls.by_kind["ConfigMap"][0]["data"]["portico.toml"]

    def containers(self):
        return self.pod.get("initContainers", []) + self.pod["containers"]

    def test_the_configuration_is_valid(self):
        with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
            f.write(self.config)
        self.addCleanup(os.unlink, f.name)
        r = subprocess.run([PORTICO, "-t", "-c", f.name], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_portico_is_a_native_sidecar(self):
        portico = [c for c in self.pod["initContainers"] if c["name"] == "portico"]
        self.assertEqual(len(portico), 1)
        self.assertEqual(portico[0]["restartPolicy"], "Always")

    def test_shutdown_order_fits_the_grace_period(self):
        grace = tomllib.loads(self.config)["server"]["grace_period"]
        for c in self.containers():
            with self.subTest(container=c["name"]):
                cmd = c["lifecycle"]["preStop"]["exec"]["command"]
                self.assertEqual(cmd[0], "/bin/sleep")
                self.assertGreater(self.pod["terminationGracePeriodSeconds"],
                                   grace + int(cmd[1]))

    def test_every_container_is_locked_down_and_bounded(self):
        self.assertTrue(self.pod["securityContext"]["runAsNonRoot"])
        self.assertNotEqual(self.pod["securityContext"]["runAsUser"], 0)
        for c in self.containers():
            with self.subTest(container=c["name"]):
                sc = c["securityContext"]
                self.assertFalse(sc["allowPrivilegeEscalation"])
                self.assertTrue(sc["readOnlyRootFilesystem"])
                self.assertEqual(sc["capabilities"]["drop"], ["ALL"])
                self.assertIn("memory", c["resources"]["limits"])
                self.assertIn("cpu", c["resources"]["requests"])
                self.assertIn("livenessProbe", c)
                self.assertIn("readinessProbe", c)

    def test_probes_and_metrics(self):
        portico = self.pod["initContainers"][0]
        self.assertEqual(portico["readinessProbe"]["httpGet"]["path"], "/readyz")
        self.assertEqual(portico["livenessProbe"]["httpGet"]["path"], "/healthz")
        ports = {p["name"]: p["containerPort"] for c in self.containers() for p in c["ports"]}
        scraped = set()
        for svc in self.by_kind["Service"]:
            ann = svc["metadata"].get("annotations", {})
            if ann.get("prometheus.io/scrape") == "true":
                self.assertEqual(ann["prometheus.io/path"], "/metrics")
                scraped.add(int(ann["prometheus.io/port"]))
        self.assertEqual(scraped, {ports["admin"], ports["backend-admin"]})
        admin = tomllib.loads(self.config)["admin"]["address"]
        self.assertEqual(admin, f"0.0.0.0:{ports['admin']}")  # reachable by the probes

    def test_the_admin_port_serves_only_its_read_only_paths(self):
        # The probes and Prometheus reach it on the pod's address; a purge is refused from
        # every peer, the pod's containers included, until the token of the comments is set.
        ports = start_example(self, self.config)
        for path in ("/healthz", "/readyz", "/metrics"):
            self.assertEqual(harness.http_get(ports[9901], path)[0], 200, path)
        conn = http.client.HTTPConnection("127.0.0.1", ports[9901], timeout=10)
        self.addCleanup(conn.close)
        conn.request("POST", "/cache/purge?url=http%3A%2F%2Fa%2Fb")
        self.assertEqual(conn.getresponse().status, 403)
        with open(os.path.join(ROOT, "deploy", "kubernetes", "sidecar.yaml")) as f:
            text = f.read()
        for way in ("token_file =", "defaultMode: 0440", "Authorization: Bearer"):
            self.assertIn(way, text)


if __name__ == "__main__":
    unittest.main()
