"""A GPU's counters read its true increase on CloudWatch and in Prometheus, however many pods share it.

Two stories of what the exporter writes for a GPU k pods share by time-slicing or MPS. `copies`: run with
KUBERNETES_VIRTUAL_GPUS (settings `exporter.virtual_gpus: true`), it writes the GPU's series once per pod that holds
it, k copies of one reading of its PCIe replay and row-remap counters. `named` (the default exporter): it writes
the GPU once, under one of its pods, and which one changes from scrape to scrape (dcgm-exporter #340; here the
next holder at every scrape). Either way a GPU no pod holds is one series without pod labels. One node's
exporter serves twelve GPUs for half an hour of 30 s scrapes, its scrape failing at
one scrape in ten (every series marked stale): GPUs that one to four pods share at 50 and at 60 replays per
5 minutes (the PCIe rule fires over 50); a GPU whose pod leaves while the next one arrives, and one idle
until a pod takes it; a counter restarting from 0 on a GPU two pods share; a GPU cut in three MIG
instances (each repeating the GPU's device counters), one held by two pods, one idle; a blank reading on a
GPU two pods share. One remapped row appears on the GPU three pods share.

CloudWatch: the payloads go through the model of the agent's OTel pipeline (the generated collector
configuration: the filter, metricstransform's merge, awsemf's deltas) into the generated alarms: every
physical GPU's SUM of deltas per 5 minutes is its true increase, counted once however many pods and MIG
instances repeat it, and the alarm names exactly the GPUs whose increase passes 50. Prometheus: the same readings, stored as the generated scrape job stores them
(a pod that leaves, and a failed scrape, leave staleness markers), through `promtool test rules` on the
generated rules: the same GPUs, the window that holds the blank too (the rule leaves the blank out, as the OTel
pipeline drops it, and both read the true increase).
"""

from __future__ import annotations

import json
import re

import pytest

from generator.cloudwatch_query import CLASSIC_COUNTER_ALARM, CLASSIC_COUNTER_ALARM_ONE_SERIES
from generator.render.alarms import SHORT
from tests.integration.test_mig_twins import built_with
from tests.support import cloudwatch_eval
from tests.support.alarm_requests import alarm_request
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels
from tests.support.promtool_rules import parsed_rules

STEP, STEPS = 30, 60  # half an hour of 30 s scrapes, k = 0 .. 59, and k = -1 before
FAILED = {k for k in range(STEPS) if k % 10 == 3}  # the exporter does not answer: every series marked stale
NODE = "gpu-node-1"
REPLAYS, ROWS = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
FIELDS = (REPLAYS, ROWS)
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
ALWAYS = (-1, STEPS)


def _pods(*names: str, during: tuple[int, int] = ALWAYS) -> tuple[tuple[str, str, int, int], ...]:
    """Pods (namespace ml) holding a GPU instance from scrape `during[0]` up to, not including, `during[1]`."""
    return tuple(("ml", name, *during) for name in names)


# gpu index -> (replays per scrape, {GPU_I_ID or None: holders}, the scrape the counter restarts from 0 at)
GPUS = {
    0: (6, {None: _pods("a0")}, None),
    1: (5, {None: _pods("b0", "b1")}, None),
    2: (6, {None: _pods("c0", "c1", "c2")}, None),
    3: (5, {None: _pods("d0", "d1", "d2", "d3")}, None),
    4: (5, {None: _pods("e0")}, None),
    5: (6, {None: _pods("f0", "f1")}, None),
    6: (6, {None: _pods("g0", "g1", "g2", "g3")}, None),
    7: (5, {None: _pods("h0", during=(-1, 24)) + _pods("h1", during=(18, STEPS))}, None),  # h1 arrives, h0 leaves
    8: (6, {None: _pods("i0", during=(25, STEPS))}, None),  # idle until scrape 25
    9: (6, {None: _pods("j0", "j1")}, 36),  # the counter restarts from 0 just before scrape 36
    10: (6, {"1": _pods("m1"), "2": _pods("m2", "m3"), "3": ()}, None),  # MIG: three instances
    11: (5, {None: _pods("n0", "n1", "n2", during=(10, 50))}, None),  # idle, then three pods, then idle
}
RESET_AT = GPUS[9][2]
ROW_GPU, ROW_AT = 2, 41  # one uncorrectable row remapped on GPU 2 (three pods) at scrape 41
BLANK_GPU, BLANK_AT = 5, 45  # GPU 5 (two pods) reads DCGM's blank for its replays at scrape 45
BLANK = 9223372036854775792


def _replays(gpu: int, k: int) -> int:
    per_scrape, _, reset = GPUS[gpu]
    return per_scrape * (k - reset + 1) if reset is not None and k >= reset else 1_000 + per_scrape * (k + 1)


def _labels(gpu: int, instance: str | None, pod: tuple[str, str, int, int] | None) -> str:
    parts = [f'gpu="{gpu}"', f'UUID="GPU-{gpu:04d}"', f'device="nvidia{gpu}"', 'modelName="NVIDIA A100-SXM4-40GB"']
    if instance is not None:
        parts += ['GPU_I_PROFILE="2g.10gb"', f'GPU_I_ID="{instance}"']
    parts += [f'Hostname="{NODE}"', 'DCGM_FI_DRIVER_VERSION="535.161.08"']
    if pod is not None:
        parts += ['container="main"', f'namespace="{pod[0]}"', f'pod="{pod[1]}"']
    return ",".join(parts)


def series_at(k: int, story: str = "copies") -> dict[str, float]:
    """{series text: value} the exporter serves at scrape k (a GPU instance no pod holds: one series without pod
    labels): `copies` one per pod holding the instance, `named` one under the holder it names at scrape k."""
    served = {}
    for gpu, (_, instances, _) in GPUS.items():
        for instance, pods in instances.items():
            holders = [p for p in pods if p[2] <= k < p[3]] or [None]
            for pod in holders if story == "copies" else holders[k % len(holders):][:1]:
                labels = _labels(gpu, instance, pod)
                served[f"{REPLAYS}{{{labels}}}"] = BLANK if (gpu, k) == (BLANK_GPU, BLANK_AT) else _replays(gpu, k)
                served[f"{ROWS}{{{labels}}}"] = float(gpu == ROW_GPU and k >= ROW_AT)
    return served


def _payload(k: int, story: str = "copies") -> str:
    if k in FAILED:
        return ""
    lines = [f"# TYPE {name} counter" for name in FIELDS]
    return "\n".join(lines + [f"{series} {value:.0f}" for series, value in series_at(k, story).items()]) + "\n"


def true_increase(gpu: int, start: int, end: int) -> int:
    """The GPU's replays from scrape `start` to scrape `end` (a restart from 0 counted from 0, as Prometheus and
    awsemf count it)."""
    return _replays(gpu, end) - _replays(gpu, start) if GPUS[gpu][2] is None or not start < GPUS[gpu][2] <= end \
        else _replays(gpu, end) + _replays(gpu, GPUS[gpu][2] - 1) - _replays(gpu, start)


def _instances() -> list[tuple[int, str]]:
    return [(gpu, instance or "none") for gpu, (_, instances, _) in GPUS.items() for instance in instances]


def firing(end: int) -> set[int]:
    """The GPUs whose replays over the 5 minutes before `end` pass 50 (a MIG GPU is one GPU: its instances
    repeat its device counter)."""
    last, first = end // STEP - 1, end // STEP - 11
    return {gpu for gpu in GPUS if true_increase(gpu, first, last) > 50}


VIRTUAL_GPUS = "exporter:\n  virtual_gpus: true\n"
SETTINGS = {"copies": VIRTUAL_GPUS, "named": ""}  # each story's exporter, as its settings say it


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The build for the exporter that writes copies per pod (exporter.virtual_gpus)."""
    return built_with(tmp_path_factory.mktemp("device-counters"), {}, FIELDS, VIRTUAL_GPUS)


@pytest.fixture(scope="module")
def built_default(tmp_path_factory):
    """The build for the default exporter (a shared GPU named under one pod at a time)."""
    return built_with(tmp_path_factory.mktemp("device-counters-named"), {}, FIELDS)


@pytest.fixture(scope="module", params=list(SETTINGS))
def story(request, built, built_default):
    """(story, build, datapoints the OTel pipeline publishes from the story's payloads)."""
    files, _ = built if request.param == "copies" else built_default
    config, job = agent_config(files[AGENT_FILE])
    labels = target_labels(job, NODE)
    return request.param, files, Agent(config, job).run([Scrape(float(k * STEP), _payload(k, request.param), labels)
                                                         for k in range(-1, STEPS)])


ALL = "agent:\n  metric_selection: all\n"  # a device counter per pod: published only with `all` (no artifact reads it)


@pytest.fixture(scope="module", params=list(SETTINGS))
def story_all(request, tmp_path_factory):
    """`story` with agent.metric_selection: all, whose per-pod set carries the device counters too."""
    files, _ = built_with(tmp_path_factory.mktemp(f"device-counters-all-{request.param}"), {}, FIELDS,
                          SETTINGS[request.param] + ALL)
    config, job = agent_config(files[AGENT_FILE])
    labels = target_labels(job, NODE)
    return request.param, files, Agent(config, job).run([Scrape(float(k * STEP), _payload(k, request.param), labels)
                                                         for k in range(-1, STEPS)])


def test_the_truth_is_where_the_copies_would_differ():
    """Each case fires or not by the true increase, and counting each pod's copy would tell otherwise."""
    assert firing(900) == {0, 2, 5, 6, 8, 9, 10}
    assert len([instance for gpu, instance in _instances() if gpu == 10]) == 3  # one GPU, three instances
    assert {gpu for gpu, _ in _instances() if len(GPUS[gpu][1].get(None, ())) > 1 and GPUS[gpu][0] * 10 <= 50} \
        == {1, 3, 7, 11}


def test_every_gpu_reads_its_true_increase_once_on_cloudwatch(story):
    """The SUM of the published deltas per GPU over each 5 minutes is the GPU's increase, once: k = 1 to 4
    holders, a pod leaving while another arrives, an idle GPU taken, failed scrapes, a restart from 0, a GPU cut
    in three MIG instances (each repeats its GPU's device counter: one line, not three), a row remapped on a GPU
    three pods share. Every GPU has a line holding every 5 minutes, 0 where nothing was replayed or remapped: a
    counter the agent does not publish, or publishes for some GPUs only, fails. The same where the exporter names
    a shared GPU under a different pod at every scrape: the pipeline merges the GPU's series before its deltas."""
    _, files, published = story
    for metric, truth in ((REPLAYS, true_increase), (ROWS, lambda gpu, a, b: (gpu == ROW_GPU) * (a < ROW_AT <= b))):
        query = alarm_request(files, "pcie-replays")["Metrics"][0]["Expression"].replace(REPLAYS, metric)
        assert metric in query
        shown = cloudwatch_eval.metrics_insights(query, published, 0, STEPS * STEP, 300)
        assert shown.keys() == {(("node", NODE), ("gpu", str(gpu))) for gpu in GPUS}, (metric, list(shown))
        for gpu in GPUS:
            expected = {t: truth(gpu, t // STEP - 1, t // STEP + 9) for t in range(0, STEPS * STEP, 300)}
            assert shown[(("node", NODE), ("gpu", str(gpu)))] == expected, (metric, gpu)
        values = [v for line in shown.values() for v in line.values()]
        assert 0 in values if metric == ROWS else 0 not in values  # rows: one remapped, the rest read 0


@pytest.mark.parametrize("end", range(300, STEPS * STEP + 1, 300))
def test_the_cloudwatch_alarm_fires_exactly_when_the_true_increase_passes_its_threshold(story, end):
    _, files, published = story
    request = alarm_request(files, "pcie-replays")
    assert request["Threshold"] == 50 and "once per pod" not in request["AlarmDescription"]
    assert "once per instance" not in request["AlarmDescription"]
    states = cloudwatch_eval.alarm(request, published, end)
    assert {tuple(sorted(dict(key))) for key in states} == {("gpu", "node")}  # a contributor is a GPU
    assert {int(dict(key)["gpu"]) for key in states} == set(GPUS)
    fired = {int(dict(key)["gpu"]) for key, state in states.items() if state == "ALARM"}
    assert fired == firing(end)


def test_a_pods_line_reads_its_gpus_increase_while_it_held_it(story_all):
    """With agent.metric_selection: all the per-pod set keeps each pod's series of a device counter: the GPU's
    increase from the first scrape that names the pod to the
    last (the pods of one GPU each read it whole), never another pod's. Where the exporter names a shared GPU under
    another pod at every scrape, awsemf keeps each pod's reading across the scrapes that name another (up to 4 here,
    2 minutes: within its 15-minute cache), so each pod still reads the GPU's increase between its first and last
    naming."""
    name, files, published = story_all
    alarmed = alarm_request(files, "pcie-replays")["Metrics"][0]["Expression"]
    query = alarmed.replace('"node", "gpu")', '"namespace", "pod")').replace(
        'GROUP BY "node", "gpu"', 'GROUP BY "namespace", "pod"')
    assert query.count('"pod"') == 2 and '"gpu"' not in query, query
    shown = cloudwatch_eval.metrics_insights(query, published, -STEP, STEPS * STEP, STEPS * STEP + STEP)
    totals = {dict(key)["pod"]: sum(line.values()) for key, line in shown.items()}
    named = {k: {key.split('pod="')[1].split('"')[0] for key in series_at(k, name) if 'pod="' in key}
             for k in range(-1, STEPS) if k not in FAILED}
    held = {pod[1]: (gpu, min(k for k in named if pod[1] in named[k]), max(k for k in named if pod[1] in named[k]))
            for gpu, (_, instances, _) in GPUS.items() for pods in instances.values() for pod in pods}
    truth = {pod: true_increase(gpu, first, last) for pod, (gpu, first, last) in held.items()}
    # not exact, named story: a restart from 0 between two scrapes that name a pod loses, in that pod's line, the
    # growth from its last reading before to the restart (awsemf counts a drop as a restart from 0 at the new
    # reading): j0, named at even scrapes, read 1,210 at 34 and 6 at 36 after the restart at 36; the growth from 34
    # to 35 (6) is only in j1's line
    lost = {"j0": _replays(9, RESET_AT - 1) - _replays(9, RESET_AT - 2)} if name == "named" else {}
    assert lost in ({}, {"j0": 6})
    assert totals == {pod: value - lost.get(pod, 0) for pod, value in truth.items()}


def rows_firing(end: int) -> set[tuple[int, str]]:
    """The GPU instances with a row remapped in the 5 minutes before `end` (between the scrapes that bound it)."""
    last, first = end // STEP - 1, end // STEP - 11
    return {(ROW_GPU, "none")} if first < ROW_AT <= last else set()


def _said(note: str, request: dict) -> bool:
    """Whether an alarm's description gives `note`, whole or in its short form (where the notes before it, DCGM's
    blank on classic among them, leave it no room: render/alarm_text)."""
    return note in request["AlarmDescription"] or SHORT[note] in request["AlarmDescription"]


def test_classic_cannot_merge_so_a_threshold_other_than_0_is_a_lint_error(tmp_path, built_default):
    """agent.pipeline: classic publishes each pod's copy per GPU, which the exporter writes with
    KUBERNETES_VIRTUAL_GPUS (exporter.virtual_gpus: true): the GPU four pods share at 30 replays per 5 minutes reads
    120, over the threshold, so lint fails on that alarm (AL013, an error naming the fix); the widgets summing a
    counter per GPU are noted (CW016) and the header and descriptions say it. An alarm on any increase (the
    remapped rows, threshold 0) is true however many pods share the GPU: it fires exactly for the GPU whose row was
    remapped, in the periods that hold it, and lint says nothing of it. Without the setting the exporter writes a
    shared GPU once (verify fails an exporter run with it): no copies, no AL013, and the header says what a series
    change loses instead. The default pipeline notes nothing."""
    from generator.lint.runner import lint_project
    from generator.project import load_project

    (tmp_path / "one").mkdir()
    files, folder = built_with(tmp_path / "one", {}, FIELDS, "agent:\n  pipeline: classic\n")
    header = json.loads(json.loads(files["cloudwatch/dashboards/gpudash-gpu-cluster-health.json"])["DashboardBody"])
    said = header["widgets"][0]["properties"]["markdown"]
    assert "once per pod" not in said and "once per pod" not in alarm_request(files, "pcie-replays")["AlarmDescription"]
    assert "the exporter names a GPU pods share by time-slicing or MPS under one of them" in said
    found = [f for f in lint_project(load_project(folder / "gpudash.yaml", folder / "counters.csv"))
             if f.rule in ("AL013", "CW016")]
    assert {f.rule for f in found} == {"CW016"} and all("k times" not in f.message for f in found)
    files, folder = built_with(tmp_path, {}, FIELDS, "agent:\n  pipeline: classic\nexporter:\n  virtual_gpus: true\n")
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(float(k * STEP), _payload(k), target_labels(job, NODE))
                                     for k in range(-1, STEPS)])
    request = alarm_request(files, "pcie-replays")
    assert _said(CLASSIC_COUNTER_ALARM, request)
    fired = {(int(dict(key)["gpu"]), dict(key)["GPU_I_ID"])
             for key, state in cloudwatch_eval.alarm(request, points, 900).items() if state == "ALARM"}
    truly = {(gpu, instance) for gpu, instance in _instances() if gpu in firing(900)}  # listed once per instance
    assert (3, "none") in fired - truly  # four copies of 50 (5 per scrape): 200
    rows = alarm_request(files, "uncorrectable-rows")
    assert rows["Threshold"] == 0
    ends = range(300, STEPS * STEP + 1, 300)
    assert any(rows_firing(end) for end in ends) and not all(rows_firing(end) for end in ends)
    for end in ends:
        fired = {(int(dict(key)["gpu"]), dict(key)["GPU_I_ID"])
                 for key, state in cloudwatch_eval.alarm(rows, points, end).items() if state == "ALARM"}
        assert fired == rows_firing(end), end
    header = json.loads(json.loads(files["cloudwatch/dashboards/gpudash-gpu-cluster-health.json"])["DashboardBody"])
    assert "reads its increase once per pod sharing it" in header["widgets"][0]["properties"]["markdown"]
    found = [f for f in lint_project(load_project(folder / "gpudash.yaml", folder / "counters.csv"))
             if f.rule in ("AL013", "CW016")]
    assert {(f.rule, f.severity, f.where.split(" ", 1)[1]) for f in found} == {
        ("AL013", "error", "gpudash-gpu-cluster-pcie-replays-warning"),
        ("CW016", "note", "widget 2 (Rows remapped (uncorrectable))"),
        ("CW016", "note", "widget 4 (PCIe replays)")}  # a rate per GPU is the SUM of its deltas over the period too
    (error,) = [f for f in found if f.rule == "AL013"]
    assert "divided by the number of pods sharing it" in error.message and "agent.pipeline: otel" in error.message
    _, folder = built_default
    assert not [f for f in lint_project(load_project(folder / "gpudash.yaml", folder / "counters.csv"))
                if f.rule in ("AL013", "CW016")]


def _stored(story: str) -> list[dict[str, str]]:
    """The served series as Prometheus stores them from the generated scrape job (it attaches `node`), on
    promtool's grid (scrape k at (k + 1) x 30 s): a series its target stops serving, and every series at a
    failed scrape, gets a staleness marker."""
    served = [{} if k in FAILED else series_at(k, story) for k in range(-1, STEPS)]
    names = list(dict.fromkeys(name for scrape in served for name in scrape))
    stored = []
    for name in names:
        values, before = [], False
        for scrape in served:
            values.append(f"{scrape[name]:.0f}" if name in scrape else "stale" if before else "_")
            before = name in scrape
        stored.append({"series": f'{name[:-1]},node="{NODE}"}}', "values": " ".join(values)})
    return stored


def test_the_prometheus_rule_names_the_gpus_the_alarm_names(built):
    """The rule merges a GPU's copies before its increase (a subquery at the scrape interval): pods arriving
    and leaving, failed scrapes and a restart from 0 leave it the GPU's whole increase, as CloudWatch reads it;
    a MIG GPU is one GPU to the rule, as to the alarm. Run on the copies story only: the rule does not depend on
    exporter.virtual_gpus, and a shared GPU's one series moving to another pod at every scrape is read on a real
    Prometheus by test_shared_gpu_counters (GPU 6) and test_pod_counters."""
    from tests.support.promtool_batches import judged_in_halves
    from tests.support.promtool_rules import expected_alert, promtool_test
    import yaml

    _, folder = built
    groups = parsed_rules((folder / "rules.yaml").read_text())["groups"]
    (rule,) = [r for g in groups for r in g["rules"] if r["labels"]["gpudash_rule"] == "pcie-replays"]
    assert "[569999ms:5s]" in rule["expr"]  # the 5-minute period and its reach, up to 9 scrapes (promql._unarrived_own)
    stored = _stored("copies")

    def judge(gpus) -> None:  # the GPUs `gpus` alone (the rule judges each GPU on its own series)
        checks = [{"eval_time": f"{end}s", "alertname": rule["alert"],
                   "exp_alerts": [expected_alert(folder, rule["alert"], node=NODE, gpu=str(gpu))
                                  for gpu in sorted(firing(end) & set(gpus))]}
                  for end in range(300, STEPS * STEP + 1, 300)]
        series = [one for one in stored if int(re.search(r'\bgpu="(\d+)"', one["series"])[1]) in gpus]
        promtool_test(folder, f"device_counters-{gpus[0]}.yaml", [{"interval": f"{STEP}s", "input_series": series,
                                                                   "alert_rule_test": checks}],
                      evaluation_interval=f"{STEP}s")

    # the period and its reach (promql._unarrived_own)
    # over the twelve GPUs' copies pass promtool's 10,000 samples a query
    # in one run: judged in halves where so (tests/support/promtool_batches)
    judged_in_halves(list(GPUS), judge)


# A GPU's holders all change between two scrapes: idle GPU 0 is taken at scrape 12, GPU 1 passes from pod p to
# pod q at scrape 12 (no overlap) and is left idle at scrape 24. One uncorrectable row is remapped on each GPU in
# those intervals: GPU 0 between scrapes 11 and 12, GPU 1 between 11 and 12 and again between 23 and 24.
HANDOVER = {0: ((None, -1, 12), ("a", 12, STEPS)), 1: (("p", -1, 12), ("q", 12, 24), (None, 24, STEPS))}
HANDOVER_ROWS = {0: (12,), 1: (12, 24)}


def _handover_payload(k: int) -> str:
    lines = [f"# TYPE {name} counter" for name in FIELDS]
    for gpu, spans in HANDOVER.items():
        (pod,) = [name for name, first, end in spans if first <= k < end]
        labels = _labels(gpu, None, None if pod is None else ("ml", pod, -1, STEPS))
        lines += [f"{REPLAYS}{{{labels}}} {1_000 + 2 * k}",
                  f"{ROWS}{{{labels}}} {sum(k >= at for at in HANDOVER_ROWS[gpu])}"]
    return "\n".join(lines) + "\n"


def _rows_alarm_fires(files) -> set[tuple[int, int]]:
    """(gpu, end) of the remapped-rows alarm's ALARM states at each 5-minute end, on the build `files`."""
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(float(k * STEP), _handover_payload(k), target_labels(job, NODE))
                                     for k in range(-1, STEPS)])
    rows = alarm_request(files, "uncorrectable-rows")
    return {(int(dict(key)["gpu"]), end) for end in range(300, STEPS * STEP + 1, 300)
            for key, state in cloudwatch_eval.alarm(rows, points, end).items() if state == "ALARM"}


def test_an_increase_where_a_gpus_holders_all_change_is_seen_on_otel_and_stated_on_classic(tmp_path, built_default):
    """The agent's JSON path computes each delta per series, every label included (plugins/inputs/prometheus/
    delta_calculator.go keys its cache by getUniqMetricKey: the metric's name and all its tags), before the EMF
    declarations choose the dimensions: a row remapped between the last scrape of one pod's series and the first of
    the next one's (or of the series without a pod of a GPU taken from idle, or left idle) is in no delta, in no
    dimension set. The truth: a 5-minute window holding such a scrape fires for its GPU. The OTel pipeline merges a
    GPU's copies into one series before awsemf takes deltas: it fires exactly then. On agent.pipeline: classic it
    fires never, as the alarm's description and the warning AL015 say."""
    from generator.lint.runner import lint_project
    from generator.project import load_project

    truth = {(gpu, end) for gpu, ats in HANDOVER_ROWS.items() for at in ats
             for end in range(300, STEPS * STEP + 1, 300) if end // STEP - 11 < at <= end // STEP - 1}
    assert truth == {(0, 600), (1, 600), (1, 900)}
    otel, otel_folder = built_default
    files, folder = built_with(tmp_path, {}, FIELDS, "agent:\n  pipeline: classic\n")
    assert _rows_alarm_fires(otel) == truth
    assert _rows_alarm_fires(files) == set()
    assert _said(CLASSIC_COUNTER_ALARM_ONE_SERIES, alarm_request(files, "uncorrectable-rows"))
    notes = {f.where.split(" ", 1)[1]: f for f in lint_project(load_project(folder / "gpudash.yaml",
                                                                           folder / "counters.csv"))
             if f.rule == "AL015"}
    assert set(notes) == {"gpudash-gpu-cluster-uncorrectable-rows-warning", "gpudash-gpu-cluster-pcie-replays-warning"}
    assert {f.severity for f in notes.values()} == {"warning"} and "agent.pipeline: otel" in notes[
        "gpudash-gpu-cluster-uncorrectable-rows-warning"].message
    assert not [f for f in lint_project(load_project(otel_folder / "gpudash.yaml",
                                                     otel_folder / "counters.csv")) if f.rule == "AL015"]
