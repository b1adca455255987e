"""gpu-stopped-reporting against stories its first tests left out: each story's truth
judged by promtool at every minute, on payloads shaped as dcgm-exporter serves them (30 s scrapes from the gpudash
job; a series that ends gets Prometheus' staleness marker; kube-state-metrics' Node object made before the history
unless the story says otherwise)."""

from __future__ import annotations

import re

import pytest

from tests.integration.test_gpu_stopped_reporting import (  # noqa: F401
    ALERT, STEP, _ended, _labels, _lost, _renamed_series, _target, built)
from tests.support.cluster_stories import story_failure
from tests.support.promtool_rules import expected_alert, promtool_test

LONG = 300  # 150 minutes of 30 s scrapes
LOST = 60  # the scrape (minute 30) each story's GPU is lost at


def _node_made(node: str, values: str | None = None) -> dict[str, str]:
    return {"series": f'kube_node_created{{node="{node}",instance="10.0.9.9:8080",job="kube-state-metrics"}}',
            "values": values or f"0x{LONG - 1}"}


def _history(node: str, read) -> list[dict[str, str]]:
    """promtool's input series of `node`: read(k) -> {index: UUID} of the GPUs its exporter serves at scrape k."""
    values: dict[str, list[str]] = {}
    for k in range(LONG):
        for gpu, uuid in read(k).items():
            labels = {"gpu": str(gpu), "UUID": uuid, "Hostname": node, **_target(node, 0)}
            values.setdefault(f"DCGM_FI_DEV_GPU_TEMP{{{_labels(dict(sorted(labels.items())))}}}",
                              ["_"] * LONG)[k] = "40"
    return _ended(values)


def _judge(folder, name: str, series: list[dict[str, str]], truth) -> None:
    promtool_test(folder, name, [{"interval": f"{STEP}s", "input_series": series, "alert_rule_test": [
        {"eval_time": f"{minute}m", "alertname": ALERT,
         "exp_alerts": [expected_alert(folder, ALERT, **labels) for labels in truth(minute)]}
        for minute in range(20, LONG * STEP // 60)]}])


def _swapped(k: int) -> dict[int, str]:
    """node-s, four GPUs, drained at minute 30 and its machine replaced by one of two GPUs (other UUIDs) under the
    same name, its exporter back at minute 50; the Node object kept (a node not deleted re-registers into it)."""
    if k < LOST:
        return {gpu: f"GPU-old-{gpu}" for gpu in range(4)}
    return {} if k < LOST + 40 else {gpu: f"GPU-new-{gpu}" for gpu in range(2)}


def test_a_machine_replaced_by_a_smaller_one_under_a_kept_node_object_is_no_gpu_stopped(built):  # noqa: F811
    """Truth: no GPU stopped reporting at any minute: GPUs 2 and 3 left with the old machine. Every GPU reading on
    node-s since minute 50 first read after the old GPUs' last reading (29:30), as without kube-state-metrics; its
    kube_node_created is older than both."""
    failure = story_failure(built, ALERT, _kept_node_objects(), "swapped", JUDGED, "kept")
    assert failure is None, failure


REBOOT = (LOST + 60, LOST + 70)  # node-r rebooted from minute 60 to 65 (no scrape)


def _renumbered(lost: int):
    """node-r, four GPUs: GPU `lost` falls off the bus at minute 30 (its series end); the node is rebooted at minute
    60 and the GPU does not come back: NVML enumerates the GPUs in bus order, so those after it are indexed one lower."""
    uuids = [f"GPU-r-{gpu}" for gpu in range(4)]

    def read(k: int) -> dict[int, str]:
        if k < LOST:
            return dict(enumerate(uuids))
        if k < REBOOT[0]:
            return {gpu: uuid for gpu, uuid in enumerate(uuids) if gpu != lost}
        return {} if k < REBOOT[1] else dict(enumerate(uuids[:lost] + uuids[lost + 1:]))
    return read


@pytest.mark.parametrize("lost", [1, 0])
def test_a_lost_gpu_is_named_after_a_reboot_renumbers_the_gpus_after_it(built, lost):  # noqa: F811
    """Truth: node-r's lost GPU (GPU-r-<lost>, under its index when it last read) from minute 40 on, and no other
    GPU: GPU-r-3, index 3 before the reboot and 2 after, reads all along. From minute 70 it named GPU 3 instead (the
    index GPU-r-3 left read as lost, the lost GPU's index read by another GPU as a replacement); with GPU 0 lost, the
    GPUs reading at new indexes read as a machine arrived at 65 (their first readings by index). After the reboot its
    index names another GPU: the alert's UUID label and summary say which GPU is lost."""
    # the notification names the GPU by its UUID too (promtool compares the annotations Prometheus renders)
    assert expected_alert(built, ALERT, **_lost("node-r", lost, f"GPU-r-{lost}"))["exp_annotations"]["summary"] == \
        f"GPU stopped reporting on node-r GPU {lost} (GPU-r-{lost})"
    failure = story_failure(built, ALERT, _kept_node_objects(), f"renumbered {lost}", JUDGED, "kept")
    assert failure is None, failure


def _started(k: int) -> dict[int, str]:
    """node-n, whose exporter starts at minute 30: its first answer leaves GPU 0 out (DCGM's first reading of it
    blank, which dcgm-exporter leaves out), its second serves both GPUs, and GPU 1 is lost after it (30:30)."""
    if k < LOST:
        return {}
    return {1: "GPU-n-1"} if k == LOST else {0: "GPU-n-0", 1: "GPU-n-1"} if k == LOST + 1 else {0: "GPU-n-0"}


def test_a_gpu_lost_a_scrape_after_its_node_started_fires(built):  # noqa: F811
    """Truth: node-n GPU 1 from minute 41 on (its last reading 30:30, beside GPU 0's first). The rule reads a GPU's
    last reading and its node's first readings at 1-minute steps, where GPU 1's last is found before GPU 0's first:
    without ARRIVED_MARGIN (stopped_gpus) GPU 1 read as older than every GPU on its node, another machine's, and its
    alert never came."""
    stories = {"started": (_history("node-n", _started) + [_node_made("node-n")],
                           lambda minute: [_lost("node-n", 1, "GPU-n-1")] if minute >= 41 else [])}
    failure = story_failure(built, ALERT, stories, "started", JUDGED, "started")
    assert failure is None, failure


def _outage(minutes: tuple[int, int]) -> list[dict[str, str]]:
    """node-p, four GPUs, GPU 2 lost at minute 30; Prometheus down (nothing scraped) over `minutes`."""
    def read(k: int) -> dict[int, str]:
        if minutes[0] * 2 <= k < minutes[1] * 2:
            return {}
        return {gpu: f"GPU-p-{gpu}" for gpu in range(4) if gpu != 2 or k < LOST}
    made = " ".join("_" if minutes[0] * 2 <= k < minutes[1] * 2 else "0" for k in range(LONG))
    return _history("node-p", read) + [_node_made("node-p", made)]


@pytest.mark.parametrize("minutes", [
    (60, 72), (60, 100), (60, 110), (50, 140),
    pytest.param((33, 145), marks=pytest.mark.xfail(strict=True, reason="Prometheus down over OUTAGE_SECONDS (an hour "
                                                    "and 45 minutes): its node's GPUs read as a machine arrived at its "
                                                    "end (their first readings are looked for no further back)"))],
    ids=["down 12 minutes", "down 40 minutes", "down 50 minutes", "down 90 minutes", "down 112 minutes"])
def test_a_lost_gpu_fires_again_once_prometheus_is_back(built, minutes):  # noqa: F811
    """Truth: node-p GPU 2 from minute 40 at every minute Prometheus runs: its node's other GPUs read at its first
    scrapes after the restart, the GPU does not. (promtool evaluates through the outage, where a real Prometheus
    evaluates nothing: its recording is written no later there than promtool's.) Down 40 minutes it was not alerted
    again while the recording read itself over 30 minutes (HOLD), down 50 or 90 while it read 45 alone: past an outage
    it now reads what it wrote up to Prometheus' last reading before (stopped_gpus.ACROSS)."""
    down = range(*minutes)
    promtool_test(built, "outage.yaml", [{"interval": f"{STEP}s", "input_series": _outage(minutes),
                                          "alert_rule_test": [
        {"eval_time": f"{minute}m", "alertname": ALERT,
         "exp_alerts": [expected_alert(built, ALERT, **_lost("node-p", 2, "GPU-p-2"))] if minute >= 40 else []}
        for minute in range(20, LONG * STEP // 60) if minute not in down]}])


def test_a_lost_gpu_holds_past_the_hour_after_prometheus_was_down_once_its_node_reads_in_each_period(built):  # noqa: F811
    """Prometheus down 12 minutes (60 to 72): from minute 77, its node's other GPUs read in both periods again. Truth:
    node-p GPU 2 at every minute from 77 to 149, and from 40 to 59. An hour after the outage the node's GPUs' first
    readings were looked for only after it (within an hour and 4 minutes): they read as a machine arrived at 72, and
    with the Node object's time and theirs both read the alert resolved at minute 129."""
    shown = [*range(20, 60), *range(77, LONG * STEP // 60)]
    promtool_test(built, "outage-after.yaml", [{"interval": f"{STEP}s", "input_series": _outage((60, 72)),
                                                "alert_rule_test": [
        {"eval_time": f"{minute}m", "alertname": ALERT,
         "exp_alerts": [expected_alert(built, ALERT, **_lost("node-p", 2, "GPU-p-2"))] if minute >= 40 else []}
        for minute in shown]}])


def _replaced(k: int) -> dict[int, str]:
    """node-q, four GPUs: GPU 2 falls off the bus at minute 30; the node drained at minute 60 and the GPU replaced by
    a new one (another UUID at index 2), back at 65."""
    if k < REBOOT[0]:
        return {gpu: f"GPU-q-{gpu}" for gpu in range(4) if gpu != 2 or k < LOST}
    return {} if k < REBOOT[1] else {gpu: f"GPU-q-{gpu}" if gpu != 2 else "GPU-q-new" for gpu in range(4)}


def test_a_lost_gpu_replaced_at_its_index_ends_once_the_new_one_reads_in_each_period(built):  # noqa: F811
    """Truth: node-q GPU 2 from minute 40 until the new GPU at its index reads in each of the two periods (70), as a
    GPU on other hardware does; none after (a GPU at the index that read before the hour would be one renumbered)."""
    failure = story_failure(built, ALERT, _kept_node_objects(), "replaced", JUDGED, "kept")
    assert failure is None, failure


JUDGED = range(20, LONG * STEP // 60)  # every minute from before the GPU is lost to the story's end


def _kept_node_objects() -> dict:
    """The stories of a node whose Node object is kept all along, judged at every minute (JUDGED): {name: (promtool's
    input series, the truth)}. Those whose fleet's presence is the same are judged in one promtool run
    (tests/support/cluster_stories): renumbered 1 and replaced (each node rebooted from minute 60 to 65, a GPU reading
    across); renumbered 0 (every series ends at the reboot: none visible during it) and swapped alone."""
    return {"swapped": (_history("node-s", _swapped) + [_node_made("node-s")], lambda minute: []),
            **{f"renumbered {lost}": (_history("node-r", _renumbered(lost)) + [_node_made("node-r")],
                                      lambda minute, lost=lost: [_lost("node-r", lost, f"GPU-r-{lost}")]
                                      if minute >= 40 else []) for lost in (1, 0)},
            "replaced": (_history("node-q", _replaced) + [_node_made("node-q")],
                         lambda minute: [_lost("node-q", 2, "GPU-q-2")] if 40 <= minute < 70 else [])}


OUTAGE = (80, 135)  # Prometheus down 55 minutes (over HOLD), after node-q's GPU 2 was replaced


def test_a_lost_gpu_replaced_at_its_index_is_not_taken_up_again_after_prometheus_was_down(built):  # noqa: F811
    """Truth: node-q GPU 2 from minute 40 to 69, none after at any minute Prometheus runs. The recording dropped it at
    70 (the new GPU at its index), while Prometheus read on: what is carried past an outage is what it wrote up to
    its last reading before, and by 135 the new GPU read before the hour (it would be one a reboot indexed anew)."""
    def read(k: int) -> dict[int, str]:
        return {} if OUTAGE[0] * 2 <= k < OUTAGE[1] * 2 else _replaced(k)
    made = " ".join("_" if OUTAGE[0] * 2 <= k < OUTAGE[1] * 2 else "0" for k in range(LONG))
    promtool_test(built, "replaced-outage.yaml", [{"interval": f"{STEP}s", "input_series": _history("node-q", read) + [
        _node_made("node-q", made)], "alert_rule_test": [
        {"eval_time": f"{minute}m", "alertname": ALERT,
         "exp_alerts": [expected_alert(built, ALERT, **_lost("node-q", 2, "GPU-q-2"))] if 40 <= minute < 70 else []}
        for minute in range(20, LONG * STEP // 60) if minute not in range(*OUTAGE)]}])


def _several(node: str):
    """node-t, four GPUs: GPU 1 lost at minute 30, GPU 3 at 45. node-u, four GPUs: all but GPU 3 lost at minute 30."""
    def read(k: int) -> dict[int, str]:
        gone = ({1} if k >= LOST else set()) | ({3} if k >= LOST + 30 else set()) if node == "node-t" else \
            ({0, 1, 2} if k >= LOST else set())
        return {gpu: f"GPU-{node[-1]}-{gpu}" for gpu in range(4) if gpu not in gone}
    return read


def _several_truth(minute: int) -> list[dict[str, str]]:
    return [*([_lost("node-t", 1, "GPU-t-1")] if minute >= 40 else []),
            *([_lost("node-t", 3, "GPU-t-3")] if minute >= 55 else []),
            *([_lost("node-u", gpu, f"GPU-u-{gpu}") for gpu in range(3)] if minute >= 40 else [])]


@pytest.mark.parametrize("every", ["1m", "30s"])
def test_gpus_lost_at_different_times_and_all_but_one_each_fire_past_the_hour(built, every):  # noqa: F811
    """Truth: node-t GPU 1 from minute 40 and GPU 3 from 55, node-u GPUs 0 to 2 from 40, each at every minute to 149
    (past the hour of their last readings: the recording keeps them), with the rules evaluated every minute or every
    30 s (the recording then reads itself at twice the evaluations)."""
    series = _history("node-t", _several("node-t")) + _history("node-u", _several("node-u")) + \
        [_node_made("node-t"), _node_made("node-u")]
    promtool_test(built, f"several-{every}.yaml", [{"interval": f"{STEP}s", "input_series": series,
                                                    "alert_rule_test": [
        {"eval_time": f"{minute}m", "alertname": ALERT,
         "exp_alerts": [expected_alert(built, ALERT, **labels) for labels in _several_truth(minute)]}
        for minute in range(20, LONG * STEP // 60)]}], evaluation_interval=every)


@pytest.mark.xfail(strict=True, reason="an exporter writing no UUID renamed by its upgrade: the GPUs reading after "
                                       "are other GPUs to the rule (named by node and index), none vouches for the "
                                       "lost one's old name, and they read as a machine arrived")
def test_a_gpu_lost_as_its_uuid_less_exporter_is_renamed_fires(built):  # noqa: F811
    """node-e, scraped by a user's own job (no `node` label), its exporter writing no UUID and, given no NODE_NAME, its
    own pod's name into Hostname; at minute 30 GPU 3 of four is lost and the exporter upgraded to one writing
    hostname=node-e. Truth: node-e GPU 3 from minute 40 on (test_a_gpu_lost_before_its_exporter_is_renamed_fires with
    UUIDs fires). Nothing fires at any minute (the story's 95 minutes judged to 92)."""
    series = [entry if "UUID" not in entry["series"] else
              {**entry, "series": re.sub(r'UUID="[^"]*",', "", entry["series"])} for entry in _renamed_series(False)]
    promtool_test(built, "renamed-no-uuid.yaml", [{"interval": f"{STEP}s", "input_series": series, "alert_rule_test": [
        {"eval_time": f"{minute}m", "alertname": ALERT,
         "exp_alerts": [expected_alert(built, ALERT, node="node-e", gpu="3")] if minute >= 40 else []}
        for minute in range(20, 93)]}])


RENAMED = 90  # the scrape (minute 45) node-e's exporter is upgraded at, a quarter hour after its GPU 3 was lost


def _renamed_later(told: bool) -> list[dict[str, str]]:
    """node-e, scraped by a user's own job (no `node` label), its exporter writing no UUID and, given no NODE_NAME,
    its own pod's name into Hostname: GPU 3 of four lost at minute 30; at minute 45 (one scrape missed) the exporter
    upgraded to one writing hostname=node-e, on a new pod; kube-state-metrics' Node object of node-e made before the
    history where `told`."""
    values: dict[str, list[str]] = {}
    for k in range(LONG):
        for gpu in range(4):
            if gpu == 3 and k >= LOST or k == RENAMED:
                continue
            labels = {"gpu": str(gpu), "job": "dcgm", "instance": f"10.0.{1 + (k > RENAMED)}.5:9400",
                      **({"hostname": "node-e"} if k > RENAMED else {"Hostname": "nvidia-dcgm-exporter-7xk2p"})}
            values.setdefault(f"DCGM_FI_DEV_GPU_TEMP{{{_labels(dict(sorted(labels.items())))}}}",
                              ["_"] * LONG)[k] = "40"
    return _ended(values) + ([_node_made("node-e")] if told else [])


@pytest.mark.xfail(strict=True, reason="an exporter writing no UUID renamed within the hour after it lost a GPU: "
                                       "no GPU reading after the rename carries the old pod's name, nothing links the "
                                       "two names (kube_pod_info would), and the lost GPU is dropped at the rename")
@pytest.mark.parametrize("told", [True, False], ids=["kube-state-metrics", "no kube-state-metrics"])
def test_a_gpu_lost_before_its_uuid_less_exporter_is_renamed_fires(built, told):  # noqa: F811
    """Truth: node-e GPU 3 from minute 40 on, under the old pod's name until the renamed copies are read (45), under
    node-e after, at every minute to 149. Nothing fires from 46 on, with kube-state-metrics' Node object or without
    (as before the first-reading comparison: 108ee99c fails alike). With UUIDs it holds
    (test_a_gpu_lost_fires_past_the_hour_until_it_reads_again_or_its_node_goes, node-e)."""
    def truth(minute: int) -> list[dict[str, str]]:
        if minute < 40:
            return []
        return [{"node": "nvidia-dcgm-exporter-7xk2p" if minute <= RENAMED // 2 else "node-e", "gpu": "3"}]
    _judge(built, f"renamed-later-{told}.yaml", _renamed_later(told), truth)
