"""A fleet-scope rule gpudash reads per MIG instance where GPUs may be split (GPU utilization, which a MIG instance
does not report: its `-mig` alarm reads DCGM_FI_PROF_GR_ENGINE_ACTIVE over the MIG-only set [ClusterName, node, gpu,
GPU_I_PROFILE]), in a Region whose clusters differ in exporter.mig.

A cluster saying exporter.mig: none publishes nothing in a MIG-only set (its whole GPUs carry no GPU_I_PROFILE), and
lint reads the Region's `-mig` alarm as reading none of it (cloudwatch_query.mig_only_set). Its agent must declare no
such set either: on agent.pipeline: classic it did, and lint then gave the build generate had just written an AG001
warning per plain cluster ('published with dimensions [ClusterName, GPU_I_PROFILE, gpu, node] but no CloudWatch
widget or alarm queries it')."""

from __future__ import annotations

import json

import yaml

from generator.artifacts import build
from generator.lint.runner import lint
from generator.output import encode
from tests.support.projects import defined_project

ALARM = '''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("gpu-util-low", "GPU idle", Condition(Query("DCGM_FI_DEV_GPU_UTIL", "avg", ("node", "gpu")), "<", 5),
                scope="fleet")
'''
NO_DASHBOARDS = "def dashboards(ctx):\n    return []\n"
SETTINGS = """agent:
  pipeline: classic
clusters:
  - {name: split, region: us-east-1}
  - {name: plain, region: us-east-1, exporter: {mig: none}}
"""


def _declared_sets(agent_file: bytes) -> set[tuple[str, ...]]:
    """The dimension sets a classic agent's ConfigMap declares for DCGM_FI_PROF_GR_ENGINE_ACTIVE."""
    found = set()
    for document in yaml.safe_load_all(agent_file):
        for key, text in ((document or {}).get("data") or {}).items():
            if not key.endswith(".json"):
                continue
            prometheus = json.loads(text)["logs"]["metrics_collected"]["prometheus"]
            for declaration in prometheus["emf_processor"]["metric_declaration"]:
                if "^DCGM_FI_PROF_GR_ENGINE_ACTIVE$" in declaration["metric_selectors"]:
                    found.update(tuple(sorted(dims)) for dims in declaration["dimensions"])
    return found


def test_a_plain_clusters_agent_is_asked_for_no_mig_set_and_lint_warns_of_none(tmp_path):
    project = defined_project(tmp_path, SETTINGS, alarms=ALARM, dashboards=NO_DASHBOARDS)
    artifacts = build(project, grafana=False)
    files = encode(artifacts)
    requests = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]]
    assert any("GPU_I_PROFILE" in json.dumps(r) for r in requests)  # the Region's alarm per MIG instance is made
    findings = [f for f in lint(project, artifacts) if f.severity != "note"]
    assert not findings, [(f.rule, f.where, f.message) for f in findings]
    plain = _declared_sets(files["k8s/cwagent-prometheus-config-plain.yaml"])
    split = _declared_sets(files["k8s/cwagent-prometheus-config-split.yaml"])
    assert not any("GPU_I_PROFILE" in dims for dims in plain), plain
    assert any("GPU_I_PROFILE" in dims for dims in split), split
