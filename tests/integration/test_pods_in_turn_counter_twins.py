"""The Prometheus twins of the CloudWatch counter alarms of tests/unit/test_cloudwatch_pods_in_turn_counters.py, by
promtool on the same fleet: one 200 W GPU (energy +200,000 mJ a second) shared by three pods of namespace eps, which
the exporter names in turn (one per 30 s scrape; the others' series stale between), or, with KUBERNETES_VIRTUAL_GPUS,
copies once per pod at every scrape. The rules read each pod's GPU whole and steadily (200,000 mJ/s, where CloudWatch
reads 180,000 / 240,000 rotating over the pods at 300 s) and the namespace's GPU once (200,000 mJ/s, 60,000,000 mJ
a period, where CloudWatch adds each pod's copy: three times it): what the CloudWatch descriptions say differs."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from generator.render.alarms import period_value
from tests.support.projects import defined_project
from tests.support.prometheus_server import binary

ENERGY, STEP, SCRAPES = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 30, 60
PODS = ("ts-a", "ts-b", "ts-c")
RATE = 200 * 1000  # mJ/s
ALARMS = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
          f"    yield Alarm('ns-energy', 'T', Condition(Query({ENERGY!r}, 'sum', ('namespace',)), '>', 1), "
          "description='d', runbook='r')\n"
          f"    yield Alarm('ns-energy-inc', 'T', Condition(Query({ENERGY!r}, 'sum', ('namespace',), as_increase=True), "
          "'>', 1), description='d', runbook='r')\n"
          f"    yield Alarm('pod-energy', 'T', Condition(Query({ENERGY!r}, 'sum', ('pod',)), '>', 1), "
          "description='d', runbook='r')\n")
TRUTH = {"ns-energy": {'{namespace="eps"}': RATE}, "ns-energy-inc": {'{namespace="eps"}': RATE * 300},
         "pod-energy": {f'{{namespace="eps", pod="{pod}"}}': RATE for pod in PODS}}


def _series(virtual: bool) -> list[dict]:
    """As Prometheus stores the scrapes: a pod's series absent (then stale) at the scrapes naming another pod."""
    result = []
    for i, pod in enumerate(PODS):
        values: list[str] = []
        for k in range(SCRAPES):
            if virtual or k % len(PODS) == i:
                values.append(str(10**9 + RATE * STEP * k))
            else:
                values.append("stale" if values and values[-1] not in ("_", "stale") else "_")
        extra = f',pod_uid="uid-{pod}",vgpu="{i}"' if virtual else ""
        result.append({"series": f'{ENERGY}{{gpu="0",UUID="GPU-n-0",device="nvidia0",modelName="NVIDIA A10G",'
                                 f'Hostname="n",node="n",namespace="eps",pod="{pod}",container="main",'
                                 f'job="gpu-metrics",instance="10.0.0.1:9400"{extra}}}',
                       "values": " ".join(values)})
    return result


@pytest.mark.parametrize("virtual", [False, True], ids=["named in turn", "KUBERNETES_VIRTUAL_GPUS"])
def test_the_rules_read_each_pods_gpu_whole_and_the_namespaces_gpu_once(tmp_path, virtual):
    settings = "agent:\n  pipeline: otel\n" + ("exporter:\n  virtual_gpus: true\n" if virtual else "")
    project = defined_project(tmp_path, settings, alarms=ALARMS)
    tests = [{"expr": period_value(alarm, project.catalog, project.settings), "eval_time": f"{minute}m",
              "exp_samples": [{"labels": labels, "value": value} for labels, value in TRUTH[alarm.id].items()]}
             for alarm in project.alarms for minute in (15, 20, 25, 29)]
    assert len(tests) == 12
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(
        {"tests": [{"interval": f"{STEP}s", "input_series": _series(virtual), "promql_expr_test": tests}]},
        width=10**6))
    run = subprocess.run([binary("promtool"), "test", "rules", str(tmp_path / "test.yaml")], capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
