"""Lint judges the OTel pipeline by the components its metrics pipeline runs, not by every one the configuration
defines: the collector passes a scrape through the processors its pipeline lists, in that order, and exports through
the exporters it lists (opentelemetry-collector otelcol/config.go, service.pipelines); a processor or exporter defined
and named by no pipeline does nothing.

A build's collector configuration edited by hand so that its pipeline no longer names the blank filter, the processor
making the pods' totals, unused shares and flags past a level (metricstransform/gpudash-pods), the one making a GPU's
reading once and the nodes' totals (metricstransform/gpudash), or the awsemf exporter: the agent model (which runs the
pipeline's list, tests/support/cloudwatch_otel) shows what is then published; lint must say it.
"""

from __future__ import annotations

import pytest

from generator.artifacts import build
from generator.lint import run
from generator.lint.feed_rules import RULES
from generator.output import encode
from generator.project import load_project
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels
from tests.support.lint_input import lint_input, otel_edited

AGENT = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
PIPELINE = "metrics/gpudash"
NODE = "ip-10-0-1-1"
BLANK = 9223372036854775794  # DCGM's "not supported"
# GPU 0 held by ml/train reading 60 °C and 200 W; GPU 1, held by no pod, reads DCGM's blank temperature
PAYLOAD = ("# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
           f'DCGM_FI_DEV_GPU_TEMP{{gpu="0",UUID="GPU-0",Hostname="{NODE}",pod="train",namespace="ml"}} 60\n'
           f'DCGM_FI_DEV_GPU_TEMP{{gpu="1",UUID="GPU-1",Hostname="{NODE}"}} {BLANK}\n'
           "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
           f'DCGM_FI_DEV_POWER_USAGE{{gpu="0",UUID="GPU-0",Hostname="{NODE}",pod="train",namespace="ml"}} 200\n'
           f'DCGM_FI_DEV_POWER_USAGE{{gpu="1",UUID="GPU-1",Hostname="{NODE}"}} 50\n')


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wiring")
    (folder / "gpudash.yaml").write_text("")
    return load_project(folder / "gpudash.yaml")


def _unhooked(project, kind: str, name: str):
    """The build with `name` left out of the pipeline's `kind` (processors, exporters); defined as before."""
    return otel_edited(build(project, grafana=False),
                       lambda otel: otel["service"]["pipelines"][PIPELINE][kind].remove(name) if name else None)


def _points(artifacts, metric: str, dims: set[str]) -> list[tuple[str, float]]:
    """(gpu or pod, if the set names one, and value) of each point of `metric` in the set `dims` the agent model publishes at the second of two
    scrapes of PAYLOAD (none where the pipeline exports nothing)."""
    if "awsemf/gpudash" not in artifacts.agents[0].otel["service"]["pipelines"][PIPELINE]["exporters"]:
        return []
    config, job = agent_config(encode(artifacts)[AGENT])
    agent = Agent(config, job)
    points = [p for k in range(2) for p in agent.scrape(Scrape(k * 30.0, PAYLOAD, target_labels(job, NODE)))
              if p.metric == metric and set(p.dims()) == dims and p.timestamp == 30.0]
    return sorted((p.dims().get("gpu") or p.dims().get("pod", ""), p.value) for p in points)


def _findings(project, artifacts, *rules: str) -> list[str]:
    return [f"{f.rule} {f.where}: {f.message}" for f in run([r for r in RULES if r.id in rules],
                                                             lint_input(project, artifacts))]


GPU_SET = {"ClusterName", "node", "gpu"}
POD_TOTAL_SET = {"ClusterName", "namespace", "pod", "pod_total"}
ONCE_SET = {"ClusterName", "readings"}  # a GPU's reading once, for the fleet's values past their LIMIT
def test_as_built(project):
    artifacts = _unhooked(project, "processors", "")
    assert _points(artifacts, "DCGM_FI_DEV_GPU_TEMP", GPU_SET) == [("0", 60.0)]  # the blank dropped
    assert _points(artifacts, "DCGM_FI_DEV_POWER_USAGE", POD_TOTAL_SET) == [("train", 200.0)]
    assert _points(artifacts, "DCGM_FI_DEV_POWER_USAGE", ONCE_SET) == [("", 50.0), ("", 200.0)]
    assert _findings(project, artifacts, "AG001", "AG005") == []


def test_the_blank_filter_left_out_of_the_pipeline_fails_ag005(project):
    artifacts = _unhooked(project, "processors", "filter/gpudash")
    assert _points(artifacts, "DCGM_FI_DEV_GPU_TEMP", GPU_SET) == [("0", 60.0), ("1", float(BLANK))]
    assert any(f.startswith("AG005") and "filter/gpudash is defined but no metrics pipeline" in f
               for f in _findings(project, artifacts, "AG005"))


def test_the_pods_totals_processor_left_out_of_the_pipeline_fails_ag001(project):
    artifacts = _unhooked(project, "processors", "metricstransform/gpudash-pods")
    assert _points(artifacts, "DCGM_FI_DEV_POWER_USAGE", POD_TOTAL_SET) == []
    assert any("DCGM_FI_DEV_POWER_USAGE" in f and "pod_total" in f for f in _findings(project, artifacts, "AG001"))


def test_the_merge_processor_left_out_of_the_pipeline_fails_ag001(project):
    artifacts = _unhooked(project, "processors", "metricstransform/gpudash")
    assert _points(artifacts, "DCGM_FI_DEV_POWER_USAGE", ONCE_SET) == []
    assert any("DCGM_FI_DEV_POWER_USAGE" in f and "readings" in f for f in _findings(project, artifacts, "AG001"))


def test_the_exporter_left_out_of_the_pipeline_fails_ag001(project):
    artifacts = _unhooked(project, "exporters", "awsemf/gpudash")
    assert _points(artifacts, "DCGM_FI_DEV_GPU_TEMP", GPU_SET) == []
    assert any("'GPU temperature'" in f and "does not publish" in f for f in _findings(project, artifacts, "AG001"))
    assert any("the agent publishes nothing" in f for f in _findings(project, artifacts, "AG005"))


def _filtered(project, added: str):
    """The build with one more condition `added` in the blank filter (a person's edit)."""
    return otel_edited(build(project, grafana=False),
                       lambda otel: otel["processors"]["filter/gpudash"]["metrics"]["datapoint"].append(added))


@pytest.mark.parametrize("added, gone", [
    ('IsMatch(metric.name, "^DCGM_FI_DEV_GPU_TEMP$")', [("0", 60.0)]),  # every reading of a field the widgets read
    ('IsMatch(metric.name, "^DCGM_FI_DEV_GPU_TEMP$") and value_double < 70.0', [("0", 60.0)]),  # a "cold" GPU
    ("true", [("0", 60.0)])])
def test_a_condition_added_to_the_blank_filter_fails_ag005(project, added, gone):
    """A condition gpudash does not write drops readings the widgets and alarms read: GPU 0's 60 °C is no longer
    published (the agent model); lint said nothing of it (AG001 reads the declarations, AG005 only what is missing)."""
    artifacts = _filtered(project, added)
    assert [p for p in _points(artifacts, "DCGM_FI_DEV_GPU_TEMP", GPU_SET) if p in gone] == []
    assert [f for f in _findings(project, artifacts, "AG005")] == [
        f"AG005 {AGENT} gpudash-otel.yaml filter/gpudash: the filter holds `{added}`, which gpudash does not write: a "
        "datapoint it matches is dropped before it is published, so the widgets and alarms reading its field would "
        "miss those readings (gpudash's own conditions drop only what is no reading): remove it, or run `gpudash "
        "generate` and apply its agent configuration"]


# GPU 0 (ml/train) at 90 °C and 30 % busy, GPU 1 (no pod) at 60 °C
READINGS = ("# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
            f'DCGM_FI_DEV_GPU_TEMP{{gpu="0",UUID="GPU-0",Hostname="{NODE}",pod="train",namespace="ml"}} 90\n'
            f'DCGM_FI_DEV_GPU_TEMP{{gpu="1",UUID="GPU-1",Hostname="{NODE}"}} 60\n'
            "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
            f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="GPU-0",Hostname="{NODE}",pod="train",namespace="ml"}} 30\n')


def _made(artifacts) -> dict[str, list[float]]:
    """The values the agent model publishes at the second scrape of READINGS, of the sets the processors make: the
    temperature alarm's flags past 80 °C per GPU, the idle alarm's unused share per pod GPU, a pod's count of GPUs
    reading a temperature, the node's total of temperatures."""
    config, job = agent_config(encode(artifacts)[AGENT])
    agent = Agent(config, job)
    made: dict[str, list[float]] = {}
    for point in (p for k in range(2) for p in agent.scrape(Scrape(k * 30.0, READINGS, target_labels(job, NODE)))
                  if p.timestamp == 30.0):
        dims = point.dims()
        kind = ("flag past 80" if "above 80" in dims else "unused share" if "share" in dims else
                "pod's GPUs" if "pod_gpus" in dims else "node total" if dims.get("node_mean") == "sum" else None)
        if kind:
            made.setdefault(f"{point.metric} {kind}", []).append(point.value)
    return {key: sorted(values) for key, values in made.items()}


def _processor_edited(project, name: str, edit):
    return otel_edited(build(project, grafana=False), lambda otel: edit(otel["processors"][name]))


def _statements(processor: dict, edit) -> None:
    statements = processor["metric_statements"][0]["statements"]
    statements[:] = edit(statements)


def _aggregations(processor: dict, before: str, after: str) -> None:
    for transform in processor["transforms"]:
        for operation in transform.get("operations", []):
            if operation.get("aggregation_type") == before:
                operation["aggregation_type"] = after


AS_BUILT = {"DCGM_FI_DEV_GPU_TEMP flag past 80": [0.0, 1.0], "DCGM_FI_DEV_GPU_UTIL unused share": [70.0],
            "DCGM_FI_DEV_GPU_TEMP pod's GPUs": [1.0], "DCGM_FI_DEV_GPU_TEMP node total": [150.0],
            "DCGM_FI_DEV_GPU_UTIL node total": [30.0]}
EDITS = {  # processor: (a person's edit, what the agent then publishes that differs from AS_BUILT)
    "transform/gpudash-levels": (lambda p: _statements(p, lambda s: []),
                                 {"DCGM_FI_DEV_GPU_TEMP flag past 80": [60.0, 90.0]}),
    "transform/gpudash-unused": (lambda p: _statements(p, lambda s: s[:1]),
                                 {"DCGM_FI_DEV_GPU_UTIL unused share": [30.0]}),
    "metricstransform/gpudash": (lambda p: _aggregations(p, "sum", "max"),
                                 {"DCGM_FI_DEV_GPU_TEMP node total": [90.0]}),
}


def test_as_built_the_processors_make_the_values_the_alarms_read(project):
    artifacts = build(project, grafana=False)
    assert _made(artifacts) == AS_BUILT
    assert _findings(project, artifacts, "AG005") == []


@pytest.mark.parametrize("name", sorted(EDITS))
def test_a_processor_edited_by_hand_fails_ag005(project, name):
    """A processor that makes the values the alarms read (flags past a level, unused shares, a node's totals), edited by
    hand: the agent publishes other values under the same names; lint said nothing of it."""
    edit, published = EDITS[name]
    artifacts = _processor_edited(project, name, edit)
    assert _made(artifacts) == {**AS_BUILT, **published}
    assert _findings(project, artifacts, "AG005") == [
        f"AG005 {AGENT} gpudash-otel.yaml {name}: {name} is not as gpudash writes it for the fields and dimension sets "
        "this agent publishes: the values it makes (pods' totals, a GPU's reading once, merged counters, unused "
        "shares, flags past a level) would be others under the same names; write it as `gpudash generate` does"]


def test_a_processor_gpudash_does_not_write_fails_ag005(project):
    """A processor of a person's own in the pipeline, here one scaling every temperature, is named."""
    def mine(otel):
        otel["processors"]["transform/mine"] = {"metric_statements": [{"context": "datapoint", "statements": [
            'set(value_double, value_double * 2) where metric.name == "DCGM_FI_DEV_GPU_TEMP"']}]}
        otel["service"]["pipelines"][PIPELINE]["processors"].insert(0, "transform/mine")
    artifacts = otel_edited(build(project, grafana=False), mine)
    assert _findings(project, artifacts, "AG005") == [
        f"AG005 {AGENT} gpudash-otel.yaml transform/mine: transform/mine is not a processor gpudash writes: it changes "
        f"what the pipeline publishes under the names the widgets and alarms read; remove it from {PIPELINE}'s "
        "processors"]


REPLAYS = ("# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER counter\n"
           f'DCGM_FI_DEV_PCIE_REPLAY_COUNTER{{gpu="0",UUID="GPU-0",Hostname="{NODE}"}} 5000\n')


def _exporter_edited(project, key: str, value):
    def written(otel):
        otel["exporters"]["awsemf/gpudash"][key] = value
    return otel_edited(build(project, grafana=False), written)


def _replays(artifacts) -> list[tuple[float, float]]:
    """(time, value) of GPU 0's PCIe replays per GPU the agent model publishes over two scrapes of a GPU whose counter
    stands at 5,000 replays since the exporter started: no replay in that time."""
    config, job = agent_config(encode(artifacts)[AGENT])
    agent = Agent(config, job)
    return [(p.timestamp, p.value) for k in range(2) for p in agent.scrape(Scrape(k * 30.0, REPLAYS,
                                                                                  target_labels(job, NODE)))
            if p.metric == "DCGM_FI_DEV_PCIE_REPLAY_COUNTER" and set(p.dims()) == GPU_SET]


def test_awsemf_keeping_a_counters_first_reading_fails_ag001(project):
    """retain_initial_value_of_delta_metric set by hand: the first reading of each counter series is published as an
    increase of its whole total (5,000 replays at the agent's start, where none happened); lint said nothing."""
    assert _replays(build(project, grafana=False)) == [(30.0, 0.0)]
    artifacts = _exporter_edited(project, "retain_initial_value_of_delta_metric", True)
    assert _replays(artifacts) == [(0.0, 5000.0), (30.0, 0.0)]
    assert [f for f in _findings(project, artifacts, "AG001") if "retain_initial" in f] == [
        f"AG001 {AGENT} gpudash-otel.yaml awsemf/gpudash: retain_initial_value_of_delta_metric is True, not False: the "
        "first reading of each counter series (at every agent start, new pod or exporter restart) is published as an "
        "increase of its whole running total, which the counter widgets and alarms read as such"]


def test_an_awsemf_setting_gpudash_does_not_write_fails_ag001(project):
    """output_destination: stdout writes the EMF records to the agent's log, none to CloudWatch; lint said nothing."""
    artifacts = _exporter_edited(project, "output_destination", "stdout")
    assert [f for f in _findings(project, artifacts, "AG001") if "output_destination" in f] == [
        f"AG001 {AGENT} gpudash-otel.yaml awsemf/gpudash: output_destination is not a setting gpudash writes: it changes "
        "what awsemf publishes (output_destination other than cloudwatch publishes nothing there); remove it"]


def test_the_gpus_unread_made_out_of_order_fails_ag005(project):
    """transform/gpudash-gpus moved before metricstransform/gpudash, which makes the GPUs' points it sets: a healthy
    node of two GPUs (90 and 60 °C) reads 90 + 150 GPUs unread (its largest temperature and the sum of both) where it
    reads 0, and the GPU stopped reporting alarm would fire for every node."""
    def moved(otel):
        order = otel["service"]["pipelines"][PIPELINE]["processors"]
        order.remove("transform/gpudash-gpus")
        order.insert(order.index("metricstransform/gpudash"), "transform/gpudash-gpus")

    def unread(artifacts) -> list[float]:
        config, job = agent_config(encode(artifacts)[AGENT])
        agent = Agent(config, job)
        return [p.value for k in range(2) for p in agent.scrape(Scrape(k * 30.0, READINGS, target_labels(job, NODE)))
                if p.metric == "gpudash_gpus_unread" and p.timestamp == 30.0]

    built = build(project, grafana=False)
    assert unread(built) == [0.0] and _findings(project, built, "AG005") == []
    edited = otel_edited(built, moved)
    assert unread(edited) == [240.0]
    assert [f for f in _findings(project, edited, "AG005") if "gpus" in f] == [
        f"AG005 {AGENT} gpudash-otel.yaml {PIPELINE}: metricstransform/gpudash, transform/gpudash-gpus and "
        "metricstransform/gpudash-gpus run in another order than this: each node's GPUs unread would be made of its "
        "GPUs' readings, not of their indexes and count, and the GPU stopped reporting alarm would fire for every node"]
