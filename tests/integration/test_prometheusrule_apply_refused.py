"""What `kubectl apply` of k8s/prometheusrule.yaml does for a role that may update PrometheusRules but not create
them, over a cluster of one counters' object (gpudash-counters before 14978afd): real kubectl against the Kubernetes API
test server. docs/artifacts.md says, and `counter recording rules` is worded for it, that kubectl goes on past each
object it may not create and updates the rest, so the counters moved to the new objects are recorded by no live object;
and that the file's order cannot save that role (the new objects put first: the same end)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from generator.artifacts import build
from generator.project import load_project
from tests.support.kube_server import KubeCluster, KubeTestServer


@pytest.mark.parametrize("order", ["as built", "new objects first"])
def test_a_role_that_may_not_create_leaves_the_moved_counters_recorded_nowhere(reference, tmp_path, order):
    if shutil.which("kubectl") is None or shutil.which("openssl") is None:
        pytest.skip("kubectl and openssl are needed for real kubectl over TLS")
    objects = list(build(load_project(), grafana=False).prometheus_rule_objects)
    counters = [o for o in objects if o["metadata"]["name"].startswith("gpudash-counters")]
    assert [o["metadata"]["name"] for o in counters] == ["gpudash-counters", "gpudash-counters-2", "gpudash-counters-3"]
    first = {r["record"] for r in counters[0]["spec"]["groups"][0]["rules"]}
    every = {r["record"] for o in counters for r in o["spec"]["groups"][0]["rules"]}
    group = counters[0]["spec"]["groups"][0]
    old = {**counters[0], "spec": {"groups": [{**group, "rules": [r for o in counters
                                                                  for r in o["spec"]["groups"][0]["rules"]]}]}}
    cluster = KubeCluster(reference)
    cluster.prometheus_rules = [o for o in objects if o not in counters] + [old]  # as applied before 14978afd
    cluster.not_creatable = {"prometheusrules"}
    if order == "new objects first":
        objects = counters[1:] + [o for o in objects if o not in counters[1:]]
    (tmp_path / "prometheusrule.yaml").write_text(yaml.safe_dump_all(objects))
    with KubeTestServer(cluster, tls=True, reference=reference) as kube:
        result = subprocess.run(["kubectl", "--kubeconfig", str(kube.kubeconfig(tmp_path / "kubeconfig")), "apply",
                                 "--server-side", "-f", str(tmp_path / "prometheusrule.yaml")],
                                capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result
    assert result.stderr.count("Forbidden") == 2 and "gpudash-counters-2" in result.stderr, result.stderr
    assert "prometheusrule.monitoring.coreos.com/gpudash-counters serverside-applied" in result.stdout, result.stdout
    live = {r["metadata"]["name"]: r for r in cluster.prometheus_rules}
    recorded = {r["record"] for o in live.values() for g in o["spec"]["groups"] for r in g["rules"]
                if r.get("record", "").startswith("gpudash:DCGM")}
    assert "gpudash-counters-2" not in live and recorded == first and every - first, (sorted(live), recorded)
