"""A counter alarm's failing-scrape reach (promql._staying) where the DCGM series carry a `cluster` label their
target's `up` does not: the bundled single-cluster settings (no prometheus_label), the label attached by the scrape
job's metric relabelling (a ServiceMonitor's metricRelabelings), which Prometheus never applies to `up`.

test_counter_gpu_gone_target_up's GPU 0 (0.18 PCIe replays/s) whose exporter fails every scrape from scrape 19 (`up`
0, its series stale): its period reaches back by the scrapes that failed, 54 replays at minutes 10-13 (as with no
`cluster` label anywhere, or on both). Since c0486ea9 `up` is matched `on (cluster, instance, job, node)`: with the
label on the DCGM series alone nothing matches, the target reads as up, and the period reads 54, 33, 22, 11 (the GPU
taken as gone). Read 54 at every minute at 8c3fac51 (`on (instance, job, node)`). Now an `up` without the cluster
label is matched on the target's labels alone."""

from __future__ import annotations

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from generator.render.alarms import period_value
from tests.integration import test_cloudwatch_rollout_twins as twins
from tests.integration.test_counter_gpu_gone_target_up import _case, _in_cluster, _stopped
from tests.integration.test_counter_missed_scrape_patterns import _reading
from tests.support import exporter_overlap as overlap
from tests.support.promtool_rules import promtool_test, targets_up


@pytest.fixture(scope="module")
def bundled(tmp_path_factory):
    folder = tmp_path_factory.mktemp("failing-target-unlabelled-up")
    (folder / "gpudash.yaml").write_text("")
    project = load_project(folder / "gpudash.yaml")
    (folder / "rules.yaml").write_bytes(encode(build(project))["prometheus/rules.yaml"])
    return folder, project


@pytest.mark.parametrize("up_labelled", [True, False], ids=["up labelled too", "up unlabelled"])
def test_a_failing_target_s_gpu_reaches_back_whatever_labels_up_lacks(bundled, up_labelled):
    folder, project = bundled
    period = period_value({a.id: a for a in project.alarms}["pcie-replays"], project.catalog, project.settings)
    series = twins._series(overlap.END, overlap.END, readings={twins.REPLAYS: _reading(0.18, frozenset(), None)})
    failing = _stopped(series, 19, "stale")
    up = targets_up(failing, gone=False)
    story = _in_cluster(failing, "gpu-cluster") + (_in_cluster(up, "gpu-cluster") if up_labelled else up)
    cases = [{**_case(minute, None, period), "exp_samples": [{"labels": f'{{gpu="0", node="{overlap.NODE}"}}',
                                                              "value": 54}]} for minute in (10, 11, 12, 13)]
    promtool_test(folder, f"failing_target_up_labelled_{up_labelled}.yaml",
                  [{"interval": f"{twins.STEP}s", "input_series": story, "promql_expr_test": cases}])
