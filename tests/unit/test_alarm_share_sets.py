"""Alarms on agent.pipeline: otel that judge a share below a level, or every reading of several periods past one,
read copies of the field's readings the agent makes (an unused share; flags past the level). A pod's total or count
of its GPUs below a level is no share of a whole: it reads the pod's total as made.

The agent makes one copy per grouping, each kept to the points that carry its grouping's labels, and each grouping's
declaration publishes its own copy alone. One copy of every grouping's labels (before) held only the points carrying
all of them: a user's "any GPU idle" per (node, gpu) beside the bundled gpu-idle per (pod, gpu) lost every GPU no pod
holds, and `min(temp) by pod > 80` over two periods beside the bundled gpu-temp-high blinded it to them; such pairs
were then refused. Here every alarm of the bundled set and six of a user's (two of a grouping nested in another's:
a pod's GPUs in a pod) fire, through the build's agent model, for exactly the GPUs and pods
the fleet's facts say, on the mixed MIG fleet (its GPU no pod holds hot) and on an idle-GPU fleet; and each set holds
each GPU (instance) once a scrape. tests/integration/test_share_copies_twins.py runs the Prometheus twins."""

from __future__ import annotations

import copy
import json
import shutil
from collections import Counter

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from generator.resources import bundled
from tests.support import cloudwatch_eval
from tests.support.agent_points import alarms_through_agent, through_agent
from tests.support.idle_fleet import HOT_MIXED, IDLE
from tests.support.lint_input import agent_lint
from tests.support.projects import defined_project

HEAD = "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
UTIL, ENGINE, TEMP = "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_GPU_TEMP"
END = 1800


def _alarm(name: str, field: str, aggregation: str, group: tuple, comparison: str, level: float,
           periods: int = 1) -> str:
    return (f"    yield Alarm({name!r}, 'T', Condition(Query({field!r}, {aggregation!r}, {group!r}), {comparison!r}, "
            f"{level}), evaluation_periods={periods}, description='d', runbook='r')\n")


def _states(folder, text: str) -> dict[str, dict[str, str]]:
    requests, points = alarms_through_agent(defined_project(folder, alarms=HEAD + text), 30, END)
    return {name: {"/".join(v for _, v in key): state for key, state in
                   cloudwatch_eval.alarm(request, points, END).items()} for name, request in requests.items()}


def test_a_pods_count_or_total_below_a_level_reads_the_pods_own_gpus(tmp_path):
    """The mixed fleet: 8 pods hold one GPU (trainer.v2-0 two, mig-b an instance of each MIG GPU); the pods whose GPUs'
    utilization adds up under 75.5 are infer-1 (2), team-b's worker-0 (35), ts-0 and ts-1 (3 each), solo-0 (70) and
    solo-1 (71). Read as an unused share these were 100 - count and 100 - total: no datapoint at all, and trainer.v2-0
    (120) would have fired. (A pod's count of the GPUs reporting GPU utilization below a level is refused: the rule
    counts a pod's MIG instances too, which do not report it; tests/unit/test_mig_half_alarms.py.)"""
    states = _states(tmp_path, _alarm("one-gpu", TEMP, "count", ("pod",), "<", 1.5)
                     + _alarm("low-total", "DCGM_FI_DEV_GPU_UTIL", "sum", ("pod",), "<", 75.5))
    firing = {name: sorted(k for k, s in by.items() if s == "ALARM") for name, by in states.items()}
    assert firing["gpudash-gpu-cluster-one-gpu-warning"] == sorted(
        ["team-a/worker-0", "team-b/worker-0", "team-a/infer-1", "team-d/ts-0", "team-d/ts-1", "team-e/solo-0",
         "team-e/solo-1", "team-a/mig-a"])
    assert firing["gpudash-gpu-cluster-low-total-warning"] == sorted(
        ["team-a/infer-1", "team-b/worker-0", "team-d/ts-0", "team-d/ts-1", "team-e/solo-0", "team-e/solo-1"])
    assert set(states["gpudash-gpu-cluster-low-total-warning"]) == {
        "team-a/worker-0", "team-b/worker-0", "team-a/infer-1", "team-d/ts-0", "team-d/ts-1", "team-e/solo-0",
        "team-e/solo-1", "team-f/trainer.v2-0"}


# A user's alarms beside the bundled ones (gpu-idle: a pod's GPU below 5 % for 30 minutes, each MIG instance by its
# engine activity; gpu-temp-high: a GPU above 80 °C at every reading of two periods), each of one field whose copy
# the bundled alarm of another grouping reads too.
USER = (_alarm("any-idle", UTIL, "avg", ("node", "gpu"), "<", 5)  # a GPU idle, held by a pod or not
        + _alarm("engine-idle", ENGINE, "avg", ("pod", "gpu"), "<", 0.1)  # a pod's GPU (MIG instances too) by engine
        + _alarm("pod-engine-idle", ENGINE, "avg", ("pod",), "<", 0.1)  # a pod by its GPUs' mean engine activity
        + _alarm("pod-hot", TEMP, "min", ("pod",), ">", 80, 2)  # every GPU of a pod hot
        + _alarm("pod-gpu-hot", TEMP, "min", ("pod", "gpu"), ">", 80, 2)  # a pod's GPU hot
        + _alarm("node-hot", TEMP, "min", ("node",), ">", 80, 2))  # every GPU of a node hot

# What fires, from the fleets' facts (tests/support/idle_fleet.py, mixed_fleet.py); keys as the alarms name their
# contributors: a MIG alarm's by GPU instance and profile too. A GPU split into MIG instances reads, for GPU
# utilization over a node's GPU, its instances' mean engine activity (x 100).
TRUTH = {
    "mixed": {
        # team-a/infer-1 at 2 %, the time-sliced GPU at 3 % (named under ts-0 and ts-1 in turn); no MIG instance a
        # pod holds is below 5 % (80, 40, 60 %)
        "gpu-idle": ["team-a/infer-1/0", "team-d/ts-0/0", "team-d/ts-1/0"], "gpu-idle-mig": [],
        # the GPU no pod holds (0 %), infer-1's (2 %), the time-sliced one (3 %); the MIG GPUs read 60 and 30 %
        "any-idle": ["gpu-node-a/1", "gpu-node-c/0", "gpu-node-ts/0"],
        "engine-idle": ["team-a/infer-1/0", "team-d/ts-0/0", "team-d/ts-1/0"],
        "pod-engine-idle": ["team-a/infer-1", "team-d/ts-0", "team-d/ts-1"],
        # 84 °C (worker-0's), 90 °C (no pod's), 91 °C (MIG GPU 1)
        "gpu-temp-high": ["gpu-node-a/0", "gpu-node-a/1", "gpu-node-mig/1"],
        "pod-hot": ["team-a/worker-0"],  # mig-b holds instances of GPU 0 (70 °C) and GPU 1 (91 °C)
        "pod-gpu-hot": ["team-a/worker-0/0", "team-c/mig-b/1"],
        "node-hot": ["gpu-node-a"],  # 84 and 90 °C; gpu-node-mig's GPU 0 at 70
    },
    "idle": {
        "gpu-idle": ["team-x/held-idle/0", "team-y/pair/0"], "gpu-idle-mig": ["team-z/mig-idle/0/1/3g.20gb"],
        # a GPU's own reading once, the MIG GPU's its instances' mean engine activity (0.5 %): one alarm
        "any-idle": ["idle-mig/0", "idle-node-1/0", "idle-node-1/1", "idle-node-2/0", "idle-node-2/2"],
        "engine-idle": ["team-x/held-idle/0", "team-y/pair/0", "team-z/mig-idle/0"],
        "pod-engine-idle": ["team-x/held-idle", "team-z/mig-idle"],  # pair's GPUs average 25 %
        "gpu-temp-high": ["idle-mig/0", "idle-node-1/1", "idle-node-1/2", "idle-node-2/0"],
        "pod-hot": ["team-x/hot-busy", "team-z/mig-idle"],  # pair holds a GPU at 70 °C
        "pod-gpu-hot": ["team-x/hot-busy/2", "team-y/pair/0", "team-z/mig-idle/0"],
        "node-hot": ["idle-mig"],
    },
}
FLEETS = {"mixed": HOT_MIXED, "idle": IDLE}


def built_beside_bundled(folder, user: str = USER) -> dict[str, bytes]:
    """The build of the bundled alarms and the alarms `user` (a definitions file's body)."""
    shutil.copytree(bundled("alarms"), folder / "alarms")
    (folder / "alarms" / "mine.py").write_text(HEAD + user)
    (folder / "gpudash.yaml").write_text("definitions:\n  alarms: [alarms]\n")
    return encode(build(load_project(folder / "gpudash.yaml")))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("share-sets")


@pytest.fixture(scope="module")
def files(folder):
    return built_beside_bundled(folder)


@pytest.fixture(scope="module")
def points(files):
    return {name: through_agent(files, 30, END, fleet) for name, fleet in FLEETS.items()}


def _firing(files, points) -> dict[str, list[str]]:
    requests = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]]
    return {request["AlarmName"].removeprefix("gpudash-gpu-cluster-").removesuffix("-warning"):
            sorted("/".join(v for _, v in key) for key, state in cloudwatch_eval.alarm(request, points, END).items()
                   if state == "ALARM") for request in requests}


@pytest.mark.parametrize("fleet", sorted(TRUTH))
def test_each_alarm_fires_for_the_gpus_and_pods_it_judges_beside_the_others(files, points, fleet):
    firing = _firing(files, points[fleet])
    assert {name: firing[name] for name in TRUTH[fleet]} == TRUTH[fleet]


def _marked(dims: dict[str, str]) -> bool:
    return "share" in dims or any(name.startswith("above ") for name in dims)


def test_each_grouping_holds_each_gpu_once_a_scrape(points):
    """On the idle fleet (no GPU shared by time-slicing), each copy's set holds, per group and scrape, one point per
    GPU of the group (per GPU instance of engine activity, which MIG reports per instance): a node's set does not
    also publish the copy of its node's GPUs, nor a pod's the copy of its pod's GPUs."""
    counted = Counter((p.metric, tuple(sorted(p.dimensions)), p.timestamp) for p in points["idle"] if _marked(p.dims()))
    for (metric, dims, _), count in counted.items():
        assert count == _units(metric, dict(dims)), (metric, dims, count)
    # every grouping of the three fields appears: the copies were made and published (GPU utilization per node and
    # GPU reads the GPU's reading once, a MIG GPU's its instances' mean: no copy of its own; a pod's mean engine
    # activity reads its totals per GPU, its instances of a GPU averaged at the agent: no copy of its own either)
    assert {(metric, tuple(name for name, _ in dims)) for metric, dims, _ in counted} >= {
        (UTIL, ("ClusterName", "gpu", "namespace", "pod", "share")),
        (ENGINE, ("ClusterName", "gpu", "namespace", "pod", "share")),
        (TEMP, ("ClusterName", "above 80", "gpu", "namespace", "pod")), (TEMP, ("ClusterName", "above 80", "gpu", "node")),
        (TEMP, ("ClusterName", "above 80", "namespace", "pod"))}


def _units(metric: str, dims: dict[str, str]) -> int:
    """The GPUs (GPU instances of engine activity, which MIG reports per instance) of the idle fleet in the group
    `dims` names (MIG instances a pod holds for a set naming the pod; for GPU utilization, which MIG GPUs do not
    report, whole GPUs)."""
    found = set()
    for node in IDLE:
        for gpu in node.gpus:
            for instance in gpu.instances:
                if metric == UTIL and gpu.mig:
                    continue
                labels = {"node": node.name, "gpu": str(gpu.index), "GPU_I_PROFILE": instance.profile or "",
                          **dict(zip(("namespace", "pod"), instance.pod or ("", "")))}
                if all(labels.get(name) == value for name, value in dims.items() if name in labels):
                    found.add((node.name, gpu.index, instance.id if metric == ENGINE else None))
    return len(found)



def _lint(folder, edit=None) -> list[str]:
    """AG001's messages on the build of `folder` (made by the `files` fixture), its agent's collector configuration
    edited by `edit`."""
    return agent_lint(load_project(folder / "gpudash.yaml"), "AG001", edit)


def _one_copy_of_both(otel):
    """The copies of temperature's flags past 80 made as before: one insert keeping every grouping's labels, of the
    points carrying them all, which every grouping's declaration publishes. (GPU utilization per node and GPU, whose
    unused share was the example, reads the GPU's reading once now: no copy of its own.)"""
    transforms = otel["processors"]["metricstransform/gpudash-pods"]["transforms"]
    mine = [t for t in transforms if t.get("new_name") == f"gpudash.level.0.{TEMP}"]
    kept = sorted({label for t in mine for label in t["operations"][0]["label_set"]})
    union = copy.deepcopy(mine[0])
    union["operations"][0]["label_set"] = kept
    union["experimental_match_labels"] = {label: ".+" for label in kept if label not in ("ClusterName", "UUID", "GPU_I_ID")}
    otel["processors"]["metricstransform/gpudash-pods"]["transforms"] = [
        union if t is mine[0] else t for t in transforms if t not in mine[1:]]
    for declaration in otel["exporters"]["awsemf/gpudash"]["metric_declarations"]:  # the flags' sets (a plain set's
        # matchers kept: without them it takes every copy, AG001's own finding)
        if declaration["metric_name_selectors"] == [f"^{TEMP}$"] and any(
                name.startswith("above ") for dims in declaration["dimensions"] for name in dims):
            declaration.pop("label_matchers", None)


def _no_label_matchers(otel):
    for declaration in otel["exporters"]["awsemf/gpudash"]["metric_declarations"]:
        if any("share" in dims or any(d.startswith("above ") for d in dims) for dims in declaration["dimensions"]):
            declaration.pop("label_matchers", None)


def _no_level_copies(otel):
    processor = otel["processors"]["metricstransform/gpudash-pods"]
    processor["transforms"] = [t for t in processor["transforms"] if not t.get("new_name", "").startswith("gpudash.level.")]


def test_lint_passes_each_groupings_copy_and_names_one_copy_of_two_groupings_or_a_set_taking_two(folder, files):
    assert _lint(folder) == []
    assert _lint(folder, _one_copy_of_both) == [
        f"{TEMP} [ClusterName, node, gpu, above 80] is made only of points that carry namespace, pod, which the set "
        f"does not name: the GPUs and pods lacking them are missing from the alarm that reads it"]
    taken = _lint(folder, _no_label_matchers)  # (a pod's mean engine activity reads its totals per GPU: no share)
    assert any(t.startswith(f"{ENGINE} [ClusterName, namespace, pod, gpu, share] also publishes the copy kept for ")
               for t in taken), taken
    # a pod's flags and its GPUs' are one copy since each keeps the GPU's index (an exporter writing no UUID merged a
    # pod's GPUs into one: tests/unit/test_cloudwatch_uuid_less.py): no set of temperature takes two
    assert not any(t.startswith(TEMP) for t in taken), taken
    assert f"{TEMP} [ClusterName, node, gpu, above 80]: no copy the agent makes carries the set's labels: the alarm " \
           f"reading it reads nothing" in _lint(folder, _no_level_copies)


def test_cost_counts_a_flags_copy_per_gpu_instance_where_the_agent_keeps_one(tmp_path):
    """A field MIG reports per instance (engine activity) keeps GPU_I_ID in its flags' copy: an event per GPU instance
    and scrape (the agent model on the mixed fleet: one point per MIG instance, 4), where a device field's (temperature)
    is one per GPU: on 100 GPUs split in two instances each, 200 and 100 events."""
    from generator.cost import Fleet, log_events

    text = (_alarm("engine-busy", ENGINE, "min", ("mig_instance",), ">", 0.5, 2)
            + _alarm("hot", TEMP, "min", ("node", "gpu"), ">", 80, 2))
    project = defined_project(tmp_path, alarms=HEAD + text)
    points = through_agent(encode(build(project, grafana=False)), 30, 120)
    flags = Counter(p.metric for p in points if p.timestamp == 60 and _marked(p.dims()))
    assert flags == {ENGINE: sum(1 for node in HOT_MIXED for gpu in node.gpus if gpu.mig for _ in gpu.instances),
                     TEMP: sum(len(node.gpus) for node in HOT_MIXED)} == {ENGINE: 4, TEMP: 11}
    events = {e.what: e.count for e in log_events(project, Fleet(clusters=1, pods=40, churn=0, gpus=100,
                                                                 mig_instances=2)) if "flags" in e.what}
    assert events == {"a GPU instance's flags above 0.5": 200, "a GPU's flags above 80": 100}


# graphics engine activity, a share every GPU instance reports (a pod's count of the GPUs reporting GPU utilization below
# a level is refused: MIG instances do not report it, and the rule counts them; tests/unit/test_mig_half_alarms.py)
FORMS = [(ENGINE, aggregation, ("pod",), comparison, 1.5 if aggregation == "count" else 0.5, periods)
         for aggregation in ("count", "sum", "avg", "max", "min") for comparison in (">", "<") for periods in (1, 2)]


def _published(folder, forms) -> dict[tuple, list]:
    """{dimension names: the field's datapoints in that set} of a project of the alarms `forms`, the mixed fleet
    through the build's agent model."""
    from generator.output import encode
    from tests.support.agent_points import through_agent

    text = "".join(_alarm(f"a{n}", *form) for n, form in enumerate(forms))
    folder.mkdir()
    # (no Grafana dashboard rendered: the agent's configuration does not read them)
    files = encode(build(defined_project(folder, "agent:\n  pipeline: otel\n", alarms=HEAD + text), grafana=False))
    result: dict[tuple, list] = {}
    for point in through_agent(files, 30, 300):
        if point.metric == ENGINE:
            result.setdefault(tuple(name for name, _ in point.dimensions), []).append(point)
    return {dims: sorted(points, key=lambda p: (p.timestamp, p.dimensions, p.value)) for dims, points in result.items()}


def test_every_per_pod_form_of_one_field_together_publishes_each_set_as_alone(tmp_path):
    """Count, sum, mean, max and min of one field by pod, above and below a level, over one and two periods, in one
    project: the agent publishes each set exactly the datapoints it publishes for the alarm alone. Two per-pod count
    alarms (`> 1.5` and `< 1.5`) made two chains of the pod's count (insert, insert a copy, combine by count) of one
    name: the second chain's combine took the first's counted points and its own per-GPU ones, which
    metricstransformprocessor's canBeCombined refuses (different label keys: a warning, the metrics left as they are),
    so its per-GPU points, unmarked, took the field's name back and the plain per-pod set published 3 datapoints a
    scrape per GPU (a count by namespace read team-b's one GPU as 3), the pods' counts and totals twice."""
    together = _published(tmp_path / "together", FORMS)
    alone: dict[tuple, list] = {}
    for n, form in enumerate(FORMS):
        for dims, points in _published(tmp_path / f"alone{n}", [form]).items():
            assert alone.setdefault(dims, points) == points, (form, dims)
    assert together == alone
    # one count a pod and scrape: 12 scrapes of the 9 pods the exporters name at each (ts-0 and ts-1 in turn; the MIG
    # pods mig-a and mig-b too, whose instances report engine activity)
    assert len(together[("ClusterName", "namespace", "pod", "pod_gpus")]) == 9 * 12
