"""The fleet panels across an exporter rollout that turns --use-old-namespace off, on a real Prometheus holding the
history (backfilled).

dcgm-exporter with --use-old-namespace writes a GPU's UUID as `uuid` (and the workload as pod_name, ...); without it,
as `UUID`. A rollout turning the flag off (or on) respells the UUID label of every GPU at once, while the GPUs stay the
same.

The story (30 s scrapes, 1 hour): node n1's two GPUs, held by no pod, draw 300 and 500 W at 40 and 41 °C; the exporter
pod is replaced at ROLLOUT (another address) by one writing `UUID` where the old one wrote `uuid`. Truth at every
instant: 2 GPUs, drawing 800 W. Its twins: the GPUs read 10 W and 10 °C more from ROLLOUT on (2 GPUs, 820 W, 50.5 °C
on average, 51 °C the hottest: the new exporter's readings), the flag turned off or on (`uuid` where it wrote `UUID`),
read with the settings implying either label (`UUID`, or `uuid` with the old namespace's workload labels).

The rules' story (promtool, 30 s scrapes, 200 minutes): node-a's four GPUs read throughout, the exporter rolled at
minute 30 from one writing `uuid` to one writing `UUID`. Truth: no GPU stopped reporting, at any minute.
"""

from __future__ import annotations

import pytest

from tests.integration.test_gpu_stopped_reporting import ALERT, _labels, _target, built  # noqa: F401 (a fixture)
from tests.support.projects import bundled_panels, bundled_project
from tests.support.promtool_rules import expected_alert, promtool_test
from tests.support.prometheus_server import backfilled_fixture
from tests.support.range_panels import panel_at

SPAN, STEP, ROLLOUT = 3600, 30, 1800
WATTS = {0: 300.0, 1: 500.0}
FIELDS = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE")
TRUTH = {"GPUs reporting": 2.0, "Total power draw": 800.0, "Average GPU temperature": 40.5, "Hottest GPU": 41.0}
CHANGED = {"GPUs reporting": 2.0, "Total power draw": 820.0, "Average GPU temperature": 50.5, "Hottest GPU": 51.0}
AFTER = (ROLLOUT + 15, ROLLOUT + 45, ROLLOUT + 90)  # within the look-back of the old exporter's last scrape


def _openmetrics(start: int, before: str | None = "uuid", after: str | None = "UUID", added: float = 0) -> str:
    """The story: the UUID written as `before` until ROLLOUT, then as `after` (None: under no label), the readings
    `added` more from it."""
    lines = []
    for metric in FIELDS:
        lines.append(f"# TYPE {metric} gauge")
        for t in range(0, SPAN + 1, STEP):
            uuid, address, more = (before, "10.0.0.5", 0) if t < ROLLOUT else (after, "10.0.0.6", added)
            for gpu, watts in WATTS.items():
                value = more + (watts if metric == "DCGM_FI_DEV_POWER_USAGE" else 40 + gpu)
                named = f'{uuid}="GPU-n1-{gpu}",' if uuid else ""
                lines.append(f'{metric}{{gpu="{gpu}",{named}device="nvidia{gpu}",modelName="NVIDIA L4",'
                             f'Hostname="n1",instance="{address}:9400",job="gpu-metrics",node="n1"}} '
                             f'{value:g} {start + t}')
    return "\n".join(lines) + "\n# EOF\n"


history = backfilled_fixture("uuid-respelled-in-rollout", _openmetrics, SPAN, STEP)
turned_off = backfilled_fixture("uuid-respelled-readings-changed",
                                lambda start: _openmetrics(start, "uuid", "UUID", 10), SPAN, STEP)
turned_on = backfilled_fixture("uuid-respelled-back-readings-changed",
                               lambda start: _openmetrics(start, "UUID", "uuid", 10), SPAN, STEP)
# a scrape rolled with a labeldrop of UUID (or the drop undone): the GPUs named by their node and index after (before)
dropped = backfilled_fixture("uuid-dropped-in-rollout", lambda start: _openmetrics(start, "UUID", None, 10), SPAN, STEP)
added = backfilled_fixture("uuid-added-in-rollout", lambda start: _openmetrics(start, None, "UUID", 10), SPAN, STEP)
# An exporter run with --use-old-namespace writes the workload as pod_name, pod_namespace, container_name; the
# settings say so, and imply `uuid`
OLD_NAMESPACE = "labels:\n  pod: pod_name\n  namespace: pod_namespace\n  container: container_name\n"


def _shown(prometheus, start: int, title: str, at: int, settings: str = "") -> list[float]:
    return list(panel_at(prometheus, bundled_project(settings), bundled_panels(settings)[title], start + at,
                         SPAN).values())


@pytest.mark.parametrize("title", sorted(TRUTH))
def test_the_fleet_figures_count_each_gpu_once_before_and_long_after_the_rollout(history, title):
    prometheus, start = history
    assert {at: _shown(prometheus, start, title, at) for at in (ROLLOUT - 300, ROLLOUT + 600)} == {
        at: pytest.approx([TRUTH[title]]) for at in (ROLLOUT - 300, ROLLOUT + 600)}


@pytest.mark.parametrize("title", sorted(TRUTH))
def test_the_fleet_figures_count_each_gpu_once_just_after_the_rollout(history, title):
    """A GPU was named by its UUID under the one label the settings imply: for the look-back after the rollout its old
    copies, written with uuid, were named by their node and counted as other GPUs (4 GPUs for 2, 1,600 W for 800)."""
    prometheus, start = history
    shown = {at: _shown(prometheus, start, title, at) for at in AFTER}
    assert shown == {at: pytest.approx([TRUTH[title]]) for at in AFTER}, shown


@pytest.mark.parametrize("settings", ["", OLD_NAMESPACE], ids=["UUID implied", "uuid implied"])
@pytest.mark.parametrize("title", sorted(CHANGED))
@pytest.mark.parametrize("story", ["turned_off", "turned_on"])
def test_the_fleet_figures_read_the_new_exporter_whichever_way_the_uuid_is_respelled(request, story, title, settings):
    """Either rollout (--use-old-namespace turned off or on) read with the settings implying either label, the
    readings changed at it: each GPU once, at the new exporter's reading. A GPU named by the implied label alone was
    two GPUs for the look-back in each of the four (4 GPUs for 2, 1,620 W for 820, 45.5 °C on average for 50.5)."""
    prometheus, start = request.getfixturevalue(story)
    times = (ROLLOUT - 300, ROLLOUT, *AFTER, ROLLOUT + 600)
    shown = {at: _shown(prometheus, start, title, at, settings) for at in times}
    assert shown == {at: pytest.approx([(TRUTH if at < ROLLOUT else CHANGED)[title]]) for at in times}, shown


@pytest.mark.parametrize("title", sorted(CHANGED))
@pytest.mark.parametrize("story", ["dropped", "added"])
def test_the_fleet_figures_count_each_gpu_once_across_a_rollout_dropping_or_adding_the_uuid(request, story, title):
    """The old exporter's series carry `UUID`, the new one's none (or the other way round), the readings changed at the
    rollout: each GPU once, at the new exporter's reading. A GPU was named by its UUID where a series carries one and
    by its node and index where none does, two GPUs for the look-back after the rollout: 'GPUs reporting' read 4 for
    2 and 'Total power draw' 1,620 W for 820 at 15, 45 and 90 s after it. (At the rollout's own instant the old
    exporter's last scrape, one interval before, is as fresh as the new one's first: either reading, once.)"""
    prometheus, start = request.getfixturevalue(story)
    times = (ROLLOUT - 300, *AFTER, ROLLOUT + 600)
    shown = {at: _shown(prometheus, start, title, at) for at in times}
    assert shown == {at: pytest.approx([(TRUTH if at < ROLLOUT else CHANGED)[title]]) for at in times}, shown


@pytest.mark.parametrize("story", ["dropped", "added"])
def test_a_gpus_line_reads_the_new_exporter_across_a_rollout_dropping_or_adding_the_uuid(request, story):
    """'Power draw' (a line per GPU): the new exporter's reading from the rollout on; the line was the mean of the old
    and new exporters' readings for the look-back (305 W for 310)."""
    prometheus, start = request.getfixturevalue(story)
    times = (ROLLOUT - 300, *AFTER, ROLLOUT + 600)
    shown = {at: panel_at(prometheus, bundled_project(), bundled_panels()["Power draw"], start + at, SPAN)
             for at in times}
    assert shown == {at: {f"n1 GPU {gpu}": pytest.approx(watts + (0 if at < ROLLOUT else 10))
                          for gpu, watts in WATTS.items()} for at in times}, shown


RULE_STEPS, RULE_ROLLOUT = 400, 60  # 200 minutes of 30 s scrapes; the rollout at scrape 60 (minute 30)


def _marked_stale(values: dict[str, list[str]]) -> list[dict[str, str]]:
    """promtool's input series from each series' samples at every scrape ("_": none), each with Prometheus' staleness
    marker after its last sample."""
    for samples in values.values():
        last = max(k for k, value in enumerate(samples) if value != "_")
        if last + 1 < RULE_STEPS:
            samples[last + 1] = "stale"
    return [{"series": series, "values": " ".join(samples)} for series, samples in values.items()]


def _rule_series(lost: int | None = None, spellings: tuple[str, str | None] = ("uuid", "UUID")) -> list[dict[str, str]]:
    """node-a's four GPUs at every scrape, the UUID under `spellings`' first label before the rollout and its second
    from it (None: under none; another exporter pod and address), each series with Prometheus' staleness marker after
    its last sample; `lost`: GPU 2 read by no scrape from that one on."""
    values: dict[str, list[str]] = {}
    for gpu in range(4):
        for k in range(RULE_STEPS if gpu != 2 or lost is None else lost):
            target = _target("node-a", 0) if k < RULE_ROLLOUT else \
                {**_target("node-a", 0), "instance": "10.0.2.97:9400", "exporter_pod": "nvidia-dcgm-exporter-q8w2z"}
            uuid = spellings[0] if k < RULE_ROLLOUT else spellings[1]
            named = {uuid: f"GPU-node-a-{gpu}"} if uuid else {}
            labels = {"gpu": str(gpu), **named, "Hostname": "node-a", **target}
            values.setdefault(f"DCGM_FI_DEV_GPU_TEMP{{{_labels(dict(sorted(labels.items())))}}}",
                              ["_"] * RULE_STEPS)[k] = "40"
    return _marked_stale(values)


def test_no_gpu_of_a_node_whose_exporter_respelled_the_uuid_reads_as_stopped(built):
    """The rule judged a GPU by its UUID under the one label the settings imply: the old copies (uuid) were a GPU named
    by its node and index, which the new copies (UUID) stood in for only within the hour; from minute 88 every GPU of
    the node fired 'GPU stopped reporting' (critical), held by the rule's own recording to the story's end."""
    promtool_test(built, "uuid_respelled.yaml", [{"interval": "30s", "input_series": _rule_series(),
                                                  "alert_rule_test": [
        {"eval_time": f"{minute}m", "alertname": ALERT, "exp_alerts": []} for minute in range(31, 199, 3)]}])


@pytest.mark.parametrize("lost", [RULE_ROLLOUT, RULE_ROLLOUT + 40], ids=["at the rollout", "20 minutes after"])
def test_a_gpu_lost_within_the_hour_of_the_respelling_fires_named_by_its_uuid(built, lost):
    """GPU 2 stops reading (the node's other GPUs read on) at the rollout or 20 minutes after it: the alert fires from
    10 minutes after its last reading, naming it by its UUID, whichever label its copies wrote it under. The rule read
    each GPU's UUID under the settings' label alone beside naming it by either: the GPU's old copies (no `UUID`) and
    new ones (`UUID`) were two series of one GPU, and the recording failed to evaluate ("many-to-many matching") at
    every evaluation with a GPU lost anywhere, for the hour the old copies stay: no alert for any GPU."""
    stopped = lost // 2  # the minute of its first missing scrape
    alert = expected_alert(built, ALERT, node="node-a", gpu="2", UUID="GPU-node-a-2")
    promtool_test(built, "uuid_respelled_lost.yaml", [{"interval": "30s", "input_series": _rule_series(lost),
                                                       "alert_rule_test": [
        {"eval_time": f"{minute}m", "alertname": ALERT, "exp_alerts": [alert] if minute > stopped + 10 else []}
        for minute in range(stopped - 8, 199, 3) if minute != stopped + 10]}])


def test_a_gpu_lost_after_a_rollout_dropping_the_uuid_fires_once(built):
    """GPU 2 stops reading 20 minutes after a rollout after which no series carries its UUID: one alert, named by its
    UUID. A GPU is named by its UUID where a series carries one and by its node and index where none does: the rule
    fired twice for it from minute 60 to the story's end, once by each name."""
    lost = RULE_ROLLOUT + 40
    alert = expected_alert(built, ALERT, node="node-a", gpu="2", UUID="GPU-node-a-2")
    series = _rule_series(lost, ("UUID", None))
    promtool_test(built, "uuid_dropped_lost.yaml", [{"interval": "30s", "input_series": series, "alert_rule_test": [
        {"eval_time": f"{minute}m", "alertname": ALERT, "exp_alerts": [alert]} for minute in range(62, 199, 8)]}])


POD_TRUTH = {"Framebuffer used by pod": 10_000.0, "GPU utilization by pod": 70.0,
             "Power draw of each pod's GPUs": 300.0, "Pods on GPUs": 1.0}


def _pod_under_old_uuid(start: int) -> str:
    """node n1's GPU 0 held by ml/a using 10,000 MiB at 70 %, 300 W and 40 °C, its series carrying the workload as
    `pod` and the UUID as `uuid` (an exporter with --use-old-namespace whose pod_name a relabelling renamed `pod`), all
    hour."""
    lines = []
    for metric, value in (("DCGM_FI_DEV_FB_USED", 10000), ("DCGM_FI_DEV_GPU_UTIL", 70),
                          ("DCGM_FI_DEV_POWER_USAGE", 300), ("DCGM_FI_DEV_GPU_TEMP", 40)):
        lines.append(f"# TYPE {metric} gauge")
        lines += [f'{metric}{{gpu="0",uuid="GPU-n1-0",device="nvidia0",modelName="NVIDIA L4",Hostname="n1",'
                  f'container="main",namespace="ml",pod="a",instance="10.0.0.5:9400",job="gpu-metrics",node="n1"}} '
                  f'{value} {start + t}' for t in range(0, SPAN + 1, STEP)]
    return "\n".join(lines) + "\n# EOF\n"


pod_under_old_uuid = backfilled_fixture("pod-under-old-uuid", _pod_under_old_uuid, SPAN, STEP)


@pytest.mark.parametrize("title", sorted(POD_TRUTH))
def test_a_pod_on_a_gpu_named_by_the_other_uuid_label_reads_its_value(pod_under_old_uuid, title):
    """The per-pod panels find a GPU's pods naming it by its UUID under either label, and read its value through
    groupings that kept the settings' UUID label alone (`max by (cluster, UUID, gpu, ...)`), which named it by its node
    there: a series carrying the UUID under the other label and the workload under the settings' pod label (no exporter
    writes both so: --use-old-namespace renames the pod label with the UUID's; it takes a relabelling) found no value
    for its pod, and each of these panels showed nothing for ml/a."""
    prometheus, start = pod_under_old_uuid
    shown = panel_at(prometheus, bundled_project(), bundled_panels()[title], start + SPAN, SPAN)
    assert shown == {"Pod ml/a": pytest.approx(POD_TRUTH[title])}


def _pod_in_rollout(start: int, before: str | None, after: str | None, held_after: bool) -> str:
    """node n1's GPU 0 held by ml/a, using 10,000 MiB, its UUID under `before` until ROLLOUT and under `after` from it
    (None: under none; "UUID,uuid": under both; another exporter pod and address), reading 10,010 MiB from it where the
    pod holds it on (`held_after`), else idle at 0 (the pod ended at the rollout)."""
    lines = ["# TYPE DCGM_FI_DEV_FB_USED gauge"]
    for t in range(0, SPAN + 1, STEP):
        uuid, address = (before, "10.0.0.5") if t < ROLLOUT else (after, "10.0.0.6")
        named = "".join(f'{label}="GPU-n1-0",' for label in (uuid or "").split(",") if label)
        held = t < ROLLOUT or held_after
        pod = 'container="main",namespace="ml",pod="a",' if held else ""
        value = 10000 if t < ROLLOUT else 10010 if held else 0
        lines.append(f'DCGM_FI_DEV_FB_USED{{gpu="0",{named}device="nvidia0",modelName="NVIDIA L4",Hostname="n1",'
                     f'{pod}instance="{address}:9400",job="gpu-metrics",node="n1"}} {value} {start + t}')
    return "\n".join(lines) + "\n# EOF\n"


pod_uuid_dropped = backfilled_fixture("pod-uuid-dropped", lambda start: _pod_in_rollout(start, "UUID", None, True),
                                      SPAN, STEP)
pod_uuid_added = backfilled_fixture("pod-uuid-added", lambda start: _pod_in_rollout(start, None, "UUID", True),
                                    SPAN, STEP)


@pytest.mark.parametrize("story", ["pod_uuid_dropped", "pod_uuid_added"])
def test_a_pod_reads_its_gpu_once_across_a_rollout_dropping_or_adding_the_uuid(request, story):
    """A GPU is named by its UUID where its series carry one and by its node and index where none does, and a pod is
    named on the GPUs the scrapes of its look-back named it on: for one scrape interval after a rollout dropping (or
    adding) the UUID label both exporters' scrapes name the pod, on two GPUs of one node and index, and 'Framebuffer
    used by pod' added them: 20,010 MiB for 10,010 at 15 s after the rollout (right from 45 s). The GPUs a pod is named
    on at one node and index are read once, the higher reading, as the pod's other panels read them (its utilization
    and its GPUs' power: the highest per node and index)."""
    prometheus, start = request.getfixturevalue(story)
    shown = {at: panel_at(prometheus, bundled_project(), bundled_panels()["Framebuffer used by pod"], start + at, SPAN)
             for at in AFTER}
    assert shown == {at: {"Pod ml/a": pytest.approx(10_010.0)} for at in AFTER}, shown


pod_ended_respelled = backfilled_fixture("pod-ended-uuid-respelled",
                                         lambda start: _pod_in_rollout(start, "uuid", "UUID", False), SPAN, STEP)
pod_ended_same_uuid = backfilled_fixture("pod-ended-same-uuid",
                                         lambda start: _pod_in_rollout(start, "UUID", "UUID", False), SPAN, STEP)
# a scrape relabelling a copy of the UUID into the other label (the series carry both) until the rollout, then not
pod_ended_both_to_one = backfilled_fixture("pod-ended-uuid-both-to-one",
                                           lambda start: _pod_in_rollout(start, "UUID,uuid", "UUID", False), SPAN, STEP)
pod_ended_one_to_both = backfilled_fixture("pod-ended-uuid-one-to-both",
                                           lambda start: _pod_in_rollout(start, "uuid", "UUID,uuid", False), SPAN, STEP)


@pytest.mark.parametrize("story", ["pod_ended_same_uuid", "pod_ended_respelled", "pod_ended_both_to_one",
                                   "pod_ended_one_to_both"])
def test_a_pod_that_ended_at_a_rollout_leaves_the_per_pod_panel(request, story):
    """ml/a ends as its node's exporter is rolled, the new exporter's first scrape finding GPU 0 idle: from then on the
    pod shows nothing, whether or not the rollout respelled `uuid` as `UUID` (default settings). The idle check keyed a
    GPU by the settings' UUID label alone: the old copies, under `uuid`, were a GPU without a UUID there, not the GPU
    found idle, and the pod stayed on it at the idle GPU's 0 MiB at 15, 45 and 90 s after the rollout."""
    prometheus, start = request.getfixturevalue(story)
    shown = {at: panel_at(prometheus, bundled_project(), bundled_panels()["Framebuffer used by pod"], start + at, SPAN)
             for at in AFTER}
    assert shown == {at: {} for at in AFTER}, shown


@pytest.mark.parametrize("story", ["pod_ended_same_uuid", pytest.param("pod_ended_respelled", marks=pytest.mark.xfail(
    strict=True, reason=(
        "The per-GPU panels' judgement of a GPU a picked pod left (_left_idle, counted_rate) keys a GPU by the "
        "settings' UUID label alone: across a rollout respelling `uuid` as `UUID` the old copies are a GPU without a "
        "UUID there, not the GPU the new exporter's first scrape found idle, so with the pod that ended at the rollout "
        "picked, 'Framebuffer memory used' draws n1 GPU 0 at its idle 0 MiB at 15, 45 and 90 s after it. The per-pod "
        "panels' check keys it by the UUID under either label (held_labels' `either`); the per-GPU panels' would cost "
        "the bundled all-metrics dashboard at least 6,240 bytes, past its room.")))])
def test_a_gpu_a_picked_pod_left_at_a_rollout_leaves_the_per_gpu_panel(request, story):
    """ml/a picked, ending as its node's exporter is rolled: the per-GPU panel draws its GPU no more from the new
    exporter's first scrape, which finds the GPU idle."""
    prometheus, start = request.getfixturevalue(story)
    shown = {at: panel_at(prometheus, bundled_project(), bundled_panels()["Framebuffer memory used"], start + at, SPAN,
                          pod="a") for at in AFTER}
    assert shown == {at: {} for at in AFTER}, shown


def test_a_hot_gpu_alerts_once_across_a_rollout_dropping_the_uuid(built):
    """node-a's four GPUs at 85 °C throughout, the exporter rolled at minute 30 to one writing no UUID: 'GPU
    temperature high' fires once for each GPU at every minute checked around and after the rollout. Named by its UUID
    before it and by its node and index after, each GPU is two names of one node and index for the rule's window,
    which the alert's labels (node, index) hold as one; keeping the fresher name alone, as the panels do, left the
    alert quiet at minutes 30 to 34, the new name's readings too few for its periods."""
    series = [{**each, "values": each["values"].replace("40", "85")} for each in _rule_series(None, ("UUID", None))]
    alerts = [expected_alert(built, "GpudashGpuTempHigh", node="node-a", gpu=str(gpu)) for gpu in range(4)]
    promtool_test(built, "uuid_dropped_hot.yaml", [{"interval": "30s", "input_series": series, "alert_rule_test": [
        {"eval_time": f"{minute}m", "alertname": "GpudashGpuTempHigh", "exp_alerts": alerts}
        for minute in range(26, 60, 2)]}])


def _renamed_in_rollout(start: int, before: str | None, after: str | None, node: bool = False) -> str:
    """The story's GPUs scraped with no node target label (`node`: with gpudash's, node="n1"), the old exporter (given
    no NODE_NAME) writing its own pod's name into Hostname and the UUID under `before`, the new one the node into
    hostname and the UUID under `after` (None: under none), the readings 10 more from the rollout."""
    lines, scraped = [], ',node="n1"' if node else ""
    for metric in FIELDS:
        lines.append(f"# TYPE {metric} gauge")
        for t in range(0, SPAN + 1, STEP):
            old = t < ROLLOUT
            uuid, address, more = (before, "10.0.0.5", 0) if old else (after, "10.0.0.6", 10)
            host = 'Hostname="nvidia-dcgm-exporter-x7k2p"' if old else 'hostname="n1"'
            for gpu, watts in WATTS.items():
                value = more + (watts if metric == "DCGM_FI_DEV_POWER_USAGE" else 40 + gpu)
                named = f'{uuid}="GPU-n1-{gpu}",' if uuid else ""
                lines.append(f'{metric}{{gpu="{gpu}",{named}device="nvidia{gpu}",modelName="NVIDIA L4",{host},'
                             f'instance="{address}:9400",job="gpu-metrics"{scraped}}} {value:g} {start + t}')
    return "\n".join(lines) + "\n# EOF\n"


renamed_kept = backfilled_fixture("renamed-uuid-kept", lambda start: _renamed_in_rollout(start, "UUID", "UUID"),
                                  SPAN, STEP)
renamed_dropped = backfilled_fixture("renamed-uuid-dropped", lambda start: _renamed_in_rollout(start, "UUID", None),
                                     SPAN, STEP)
renamed_none = backfilled_fixture("renamed-uuid-none", lambda start: _renamed_in_rollout(start, None, None),
                                  SPAN, STEP)
# the same rollouts scraped by gpudash's scrape job, which writes the node the exporter's pod runs on into `node`
renamed_dropped_node = backfilled_fixture("renamed-uuid-dropped-node",
                                          lambda start: _renamed_in_rollout(start, "UUID", None, True), SPAN, STEP)
renamed_none_node = backfilled_fixture("renamed-uuid-none-node",
                                       lambda start: _renamed_in_rollout(start, None, None, True), SPAN, STEP)


RENAMED_WITHOUT_UUID = pytest.mark.xfail(strict=True, reason=(
    "A GPU whose series carry no UUID is named by its node spelling: an exporter rollout from one writing its own pod's "
    "name into Hostname (no NODE_NAME, no node target label) to one writing the node into hostname names the old copies "
    "and the new ones as two GPUs of two nodes, and the choice of one GPU per node and index (named_gpus' slot) "
    "does not meet them: for the look-back after the rollout 'GPUs reporting' reads 4 for 2 and 'Total power draw' "
    "1,620 W for 820 (15, 45 and 90 s after it), whether the old exporter's series carried the UUID or not; with the "
    "UUID on both sides, or a node target label on the series (gpudash's scrape job and ServiceMonitor write it), each "
    "GPU counts once. The old copies share no label with the new ones but the index (the old exporter's pod name, "
    "another pod address, no UUID): telling them one GPU takes pairing a GPU whose copies stopped, named like an "
    "exporter's pod, with one whose copies began within the look-back at its index, anywhere in the cluster (its node "
    "is unknown), two more readings of each field's copies a naming (some 330 bytes each: ~18 KB for the 27 fields the "
    "bundled all-metrics dashboard names, which has ~2.1 KB of room as its cut counts it), and it would take a GPU "
    "whose exporter missed one scrape as another node's new GPU at that index came up for that GPU."))


@pytest.mark.parametrize("story", ["renamed_kept", pytest.param("renamed_dropped", marks=RENAMED_WITHOUT_UUID),
                                   pytest.param("renamed_none", marks=RENAMED_WITHOUT_UUID), "renamed_dropped_node",
                                   "renamed_none_node"])
@pytest.mark.parametrize("title", ["GPUs reporting", "Total power draw"])
def test_the_fleet_figures_count_each_gpu_once_across_a_rollout_renaming_the_node(request, story, title):
    """node n1's exporter rolled from one naming the node by its own pod's name (Hostname) to one naming it (hostname),
    the readings 10 more from the rollout: each GPU once, at the new exporter's reading, through the look-back."""
    prometheus, start = request.getfixturevalue(story)
    times = (ROLLOUT - 300, *AFTER, ROLLOUT + 600)
    shown = {at: _shown(prometheus, start, title, at) for at in times}
    assert shown == {at: pytest.approx([(TRUTH if at < ROLLOUT else CHANGED)[title]]) for at in times}, shown



def _moved_to_pod_named_node(start: int) -> str:
    """GPU-A (index 0) on node n1 until ROLLOUT, then on a node named like a DaemonSet pod's (a Karpenter node claim,
    gpu-x7k2p) at index 0, a new GPU-B taking n1's index 0 from ROLLOUT: 300 and 500 W, 40 °C, each exporter writing
    its node into Hostname (no node target label)."""
    lines = []
    for metric in FIELDS:
        lines.append(f"# TYPE {metric} gauge")
        for t in range(0, SPAN + 1, STEP):
            held = [("GPU-A", "n1", "10.0.0.5", 300)] if t < ROLLOUT else [
                ("GPU-A", "gpu-x7k2p", "10.0.0.7", 300), ("GPU-B", "n1", "10.0.0.5", 500)]
            for uuid, host, address, watts in held:
                value = watts if metric == "DCGM_FI_DEV_POWER_USAGE" else 40
                lines.append(f'{metric}{{gpu="0",UUID="{uuid}",device="nvidia0",modelName="NVIDIA L4",'
                             f'Hostname="{host}",instance="{address}:9400",job="gpu-metrics"}} {value} {start + t}')
    return "\n".join(lines) + "\n# EOF\n"


moved_to_pod_named_node = backfilled_fixture("moved-to-pod-named-node", _moved_to_pod_named_node, SPAN, STEP)


@pytest.mark.parametrize("title", ["GPUs reporting", "Total power draw"])
def test_a_gpu_moved_to_a_node_named_like_a_pod_counts_beside_the_gpu_that_took_its_place(moved_to_pod_named_node,
                                                                                          title):
    """GPU-A moved from n1 to gpu-x7k2p, GPU-B taking n1's index 0: from then on 2 GPUs, 800 W. The range names GPU-A by
    its old node at every step (a plain name outranks a pod-shaped one), and the choice of one GPU per node and index,
    made among the GPUs' chosen names, met it there with GPU-B and dropped it: 1 GPU, 500 W."""
    prometheus, start = moved_to_pod_named_node
    truth = {"GPUs reporting": 2.0, "Total power draw": 800.0}[title]
    times = (ROLLOUT + 300, ROLLOUT + 900, SPAN)
    shown = {at: _shown(prometheus, start, title, at) for at in times}
    assert shown == {at: pytest.approx([truth]) for at in times}, shown


def test_a_gpu_moved_to_a_node_named_like_a_pod_is_drawn_there_beside_the_gpu_that_took_its_place(
        moved_to_pod_named_node):
    """'Power draw' (a line per GPU): GPU-A under gpu-x7k2p, GPU-B under n1, from the move on."""
    prometheus, start = moved_to_pod_named_node
    times = (ROLLOUT + 300, ROLLOUT + 900, SPAN)
    shown = {at: panel_at(prometheus, bundled_project(), bundled_panels()["Power draw"], start + at, SPAN)
             for at in times}
    assert shown == {at: {"gpu-x7k2p GPU 0": pytest.approx(300.0), "n1 GPU 0": pytest.approx(500.0)}
                     for at in times}, shown


def _reindexed(start: int, overlap: int, uuid: bool) -> str:
    """node n1's GPUs A (300 W) and B (500 W): the old exporter names them 0 and 1 until ROLLOUT + overlap, the new one
    1 and 0 from ROLLOUT, 10 W more, scraped 7 s after the old one in each interval (Prometheus spreads its targets'
    scrapes over the interval)."""
    lines = []
    for metric in FIELDS:
        lines.append(f"# TYPE {metric} gauge")
        for t in range(0, SPAN + 1, STEP):
            copies = ([("10.0.0.5", {"A": 0, "B": 1}, 0)] if t < ROLLOUT + overlap else []) + (
                [("10.0.0.6", {"A": 1, "B": 0}, 10)] if t >= ROLLOUT else [])
            for address, index, more in copies:
                for name, watts in (("A", 300), ("B", 500)):
                    value = more + (watts if metric == "DCGM_FI_DEV_POWER_USAGE" else 40)
                    named = f'UUID="GPU-{name}",' if uuid else ""
                    lines.append(f'{metric}{{gpu="{index[name]}",{named}device="nvidia{index[name]}",modelName="NVIDIA L4",'
                                 f'Hostname="n1",instance="{address}:9400",job="gpu-metrics",node="n1"}} {value} '
                                 f'{start + t + (more and 7)}')
    return "\n".join(lines) + "\n# EOF\n"


reindexed_overlap = backfilled_fixture("reindexed-overlap", lambda start: _reindexed(start, 60, True), SPAN, STEP)



def test_two_gpus_numbered_apart_by_overlapping_exporters_each_count_once(reindexed_overlap):
    """Each GPU once, at either exporter's reading, while both are scraped: 800 to 820 W in all. A GPU is keyed by its
    UUID and index, so each is two GPUs for the overlap, and the choice of one name per node and index met A and B at
    each index alike (both fresh, one node name) and kept A at both: 'Total power draw' 610 W (A at 300 and 310), B
    left out. The new exporter's copy wins each index now (its target the younger), the same exporter's at both."""
    prometheus, start = reindexed_overlap
    shown = {at: _shown(prometheus, start, "Total power draw", at) for at in (ROLLOUT + 15, ROLLOUT + 45)}
    assert all(len(each) == 1 and 800 <= each[0] <= 820 for each in shown.values()), shown


def test_two_gpus_numbered_apart_keep_one_gpu_a_line_through_the_overlap(reindexed_overlap):
    """From the new exporter's first scrape (7 s after the old one's, in each interval) each index's line reads the GPU
    the new exporter numbers so, at every step of the overlap. With the copy scraped last winning each index, the line
    read the old exporter's GPU or the new one's as their scrapes came in turn: 'n1 GPU 0' 510 W (B) at 15 s, 300 W
    (A) at 33 s, 510 W at 45 s (Grafana's aligned steps read one exporter throughout; an instant query or a finer step
    at another phase flipped). A fresh copy weighs first its target's longest-lived copy's samples within the look-back
    (promql._present): the new exporter's target, younger, wins every index."""
    prometheus, start = reindexed_overlap
    times = (ROLLOUT + 10, ROLLOUT + 15, ROLLOUT + 33, ROLLOUT + 45, ROLLOUT + 63)
    shown = {at - ROLLOUT: panel_at(prometheus, bundled_project(), bundled_panels()["Power draw"], start + at, SPAN)
             for at in times}
    assert shown == {at - ROLLOUT: {"n1 GPU 0": pytest.approx(510.0), "n1 GPU 1": pytest.approx(310.0)}
                     for at in times}, shown


def test_two_gpus_numbered_apart_by_the_new_exporter_each_read_once_after_the_overlap(reindexed_overlap):
    """From the old exporter's last scrape on, each GPU once at the new exporter's reading and index."""
    prometheus, start = reindexed_overlap
    times = (ROLLOUT + 90, ROLLOUT + 600)
    shown = {at: panel_at(prometheus, bundled_project(), bundled_panels()["Power draw"], start + at, SPAN)
             for at in times}
    assert shown == {at: {"n1 GPU 0": pytest.approx(510.0), "n1 GPU 1": pytest.approx(310.0)} for at in times}, shown


def _renamed_rule_series(spellings: tuple[str | None, str | None], lost: int | None = None) -> list[dict[str, str]]:
    """node-a's four GPUs at every scrape with no node target label: the old exporter (given no NODE_NAME) writing its
    own pod's name into Hostname and the UUID under `spellings`' first label, the new one from the rollout the node
    into hostname and the UUID under its second (None: under none), staleness markers after each series' last sample;
    `lost`: GPU 2 read by no scrape from that one on."""
    values: dict[str, list[str]] = {}
    for gpu in range(4):
        for k in range(RULE_STEPS if gpu != 2 or lost is None else lost):
            old = k < RULE_ROLLOUT
            uuid = spellings[0] if old else spellings[1]
            labels = {"gpu": str(gpu), **({uuid: f"GPU-node-a-{gpu}"} if uuid else {}),
                      **({"Hostname": "nvidia-dcgm-exporter-x7k2p", "instance": "10.0.1.5:9400"} if old else
                         {"hostname": "node-a", "instance": "10.0.2.97:9400"}), "job": "dcgm"}
            values.setdefault(f"DCGM_FI_DEV_GPU_TEMP{{{_labels(dict(sorted(labels.items())))}}}",
                              ["_"] * RULE_STEPS)[k] = "40"
    return _marked_stale(values)


@pytest.mark.parametrize("spellings", [("UUID", "UUID"), ("UUID", None), (None, None)],
                         ids=["UUID kept", "UUID dropped", "no UUID"])
def test_a_gpu_lost_after_a_rollout_renaming_its_node_fires_once_and_no_other(built, spellings):
    """GPU 2 stops reading 20 minutes after its node's exporter was rolled from one naming the node by its own pod's
    name to one naming it: one alert, under the node, from 10 minutes after its last reading; none for the GPUs that
    read on under their new name, whether the UUID is kept, dropped or never there."""
    lost = RULE_ROLLOUT + 40
    uuid = {"UUID": "GPU-node-a-2"} if spellings[1] else {}
    alert = expected_alert(built, ALERT, node="node-a", gpu="2", **uuid)
    promtool_test(built, "renamed_rollout_lost.yaml", [{"interval": "30s",
                                                        "input_series": _renamed_rule_series(spellings, lost),
                                                        "alert_rule_test": [
        {"eval_time": f"{minute}m", "alertname": ALERT, "exp_alerts": [alert] if minute > lost // 2 + 10 else []}
        for minute in (34, 46, 70, 100, 150, 198)]}])


def _reindexed_pod_started(start: int) -> str:
    """_reindexed's overlap (the old exporter until ROLLOUT + 60, the new one from ROLLOUT, 7 s later in each interval),
    and ml/p starting on GPU A at ROLLOUT + 30: the old exporter names it from its scrape at 30 s, the new one from its
    scrape at 37 s."""
    lines = []
    for metric in FIELDS:
        lines.append(f"# TYPE {metric} gauge")
        for t in range(0, SPAN + 1, STEP):
            copies = ([("10.0.0.5", {"A": 0, "B": 1}, 0)] if t < ROLLOUT + 60 else []) + (
                [("10.0.0.6", {"A": 1, "B": 0}, 10)] if t >= ROLLOUT else [])
            for address, index, more in copies:
                for name, watts in (("A", 300), ("B", 500)):
                    value = more + (watts if metric == "DCGM_FI_DEV_POWER_USAGE" else 40)
                    pod = ',container="main",namespace="ml",pod="p"' if name == "A" and t >= ROLLOUT + 30 else ""
                    lines.append(f'{metric}{{gpu="{index[name]}",UUID="GPU-{name}",device="nvidia{index[name]}",'
                                 f'modelName="NVIDIA L4",Hostname="n1",instance="{address}:9400",job="gpu-metrics",'
                                 f'node="n1"{pod}}} {value} {start + t + (more and 7)}')
    return "\n".join(lines) + "\n# EOF\n"


reindexed_pod_started = backfilled_fixture("reindexed-overlap-pod-started", _reindexed_pod_started, SPAN, STEP)


def test_two_gpus_numbered_apart_count_once_when_a_pod_starts_in_the_overlap(reindexed_pod_started):
    """Each GPU once while both exporters are scraped, a pod starting on A in the overlap: one exporter's GPU at each
    index (the old one's 300 and 500 W, or the new one's 510 and 310). Weighing first the copy that began last, A's
    copy naming the pod under the old exporter (from 30 s) and its copy under the new one (from 7 s) both outranked
    B's: A at both indexes, 610 W at 33 and 45 s."""
    prometheus, start = reindexed_pod_started
    times = (ROLLOUT + 15, ROLLOUT + 33, ROLLOUT + 45)
    shown = {at - ROLLOUT: panel_at(prometheus, bundled_project(), bundled_panels()["Power draw"], start + at, SPAN)
             for at in times}
    either = ({"n1 GPU 0": 300.0, "n1 GPU 1": 500.0}, {"n1 GPU 0": 510.0, "n1 GPU 1": 310.0})
    assert all(lines in either for lines in shown.values()), shown
    totals = {at: _shown(prometheus, start, "Total power draw", at + ROLLOUT) for at in shown}
    assert totals == {at: [pytest.approx(sum(lines.values()))] for at, lines in shown.items()}, totals
