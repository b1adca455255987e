"""The last XID code per GPU on a real Prometheus scraping live exporters (every half second, as 30 s scrapes:
scraped_every), in a messy fleet: the panels show the code of the GPU's newest reading, in both forms the exporter
writes (the code as the value; from 3.3.6 also as `err_code` and `err_msg` labels, each code its own series).

Exporters (each a scrape target), codes by answer:
* `a` (labels form, `Hostname="a"`): GPU 0 holds ml/train, 0, then 13 from answer 6, 79 from 10, 45 (XID 45 follows the
  error that caused it) from 14: a code that rises, then falls; GPU 1 holds no pod (idle), 0, then 119 from 8, 79 from
  12.
* `v` (value form, `Hostname="v"`): GPU 0 as a's GPU 0.
* `u-old` (value form, `Hostname="u"`) and `u-new` (labels form, `hostname="u"`): one GPU mid-upgrade, both serving it
  from answer 8 to 13 (the old one ends at 14, the new one starts at 8), both reading 0, then 119 from 6, 79 from 10.
* `r-old` (labels form, `Hostname="r"`): 0, then 79 from answer 4; it ends at 12 (the exporter pod restarted, the
  runbook's way to clear the code) and `r-new` (another pod: another target) reads 0 from its answer 13 on.
* `s` (labels form): 0, then 119 from 4, 79 from 8; it ends at 12 (its series marked stale).

Truth at an instant: each GPU's newest reading among its exporters' answers (an ended exporter's last one), while that
is within the panels' look-back (4 scrape intervals); around its end (3 to 5 intervals) the GPU may show or not, but
never another code. Before, the panels took the largest code of the look-back: the restarted GPU read the old pod's
79 for the new one's 0 for two intervals, the upgraded GPU 119 for 79 for up to an interval (one exporter's old code,
marked stale as the new one begins, was left out already: test_xid_code_falls reads it without staleness markers).
"""

from __future__ import annotations

import pytest

from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.project import load_project
from tests.support.live_scrapes import scraped_fixture
from tests.support.projects import bundled_panel, defined_project
from tests.support.prometheus_server import SCENE_RANGE, counted_inline, scraped_every
from tests.support.xid_codes import GROUPED, XID, grouped_target

INTERVAL, ANSWERS, LOOKBACK = 0.5, 24, 4
MODEL = 'modelName="NVIDIA H100 80GB HBM3",DCGM_FI_DRIVER_VERSION="570.133.20"'
MESSAGES = {0: "No Error", 13: "Graphics Engine Exception", 45: "Preemptive cleanup, due to previous errors",
            79: "GPU has fallen off the bus", 119: "GSP RPC Timeout"}
RISES_THEN_FALLS = ((0, 0), (6, 13), (10, 79), (14, 45))
# exporter: (node label, node, form, first answer served, first answer not served, {GPU: (pod, codes from answer)})
EXPORTERS = {
    "a": ("Hostname", "a", "labels", 0, ANSWERS, {0: ("train", RISES_THEN_FALLS),
                                                  1: (None, ((0, 0), (8, 119), (12, 79)))}),
    "v": ("Hostname", "v", "value", 0, ANSWERS, {0: (None, RISES_THEN_FALLS)}),
    "u-old": ("Hostname", "u", "value", 0, 14, {0: (None, ((0, 0), (6, 119), (10, 79)))}),
    "u-new": ("hostname", "u", "labels", 8, ANSWERS, {0: (None, ((0, 0), (6, 119), (10, 79)))}),
    "r-old": ("Hostname", "r", "labels", 0, 12, {0: (None, ((0, 0), (4, 79)))}),
    "r-new": ("Hostname", "r", "labels", 13, ANSWERS, {0: (None, ((0, 0),))}),
    "s": ("Hostname", "s", "labels", 0, 12, {0: (None, ((0, 0), (4, 119), (8, 79)))}),
}
TITLES = ("Last XID error code", "DEV_XID_ERRORS")


def code(codes: tuple[tuple[int, int], ...], k: int) -> int:
    return next(value for since, value in reversed(codes) if k >= since)


def page(exporter: str, k: int) -> str:
    """Exporter `exporter`'s answer k ("" where it serves nothing: its series marked stale)."""
    label, node, form, first, end, gpus = EXPORTERS[exporter]
    if not first <= k < end:
        return ""
    lines = [f"# TYPE {XID} gauge"]
    for gpu, (pod, codes) in gpus.items():
        value = code(codes, k)
        labels = f'gpu="{gpu}",UUID="GPU-{node}-{gpu}",device="nvidia{gpu}",{MODEL},{label}="{node}"'
        if pod:
            labels += f',container="main",namespace="ml",pod="{pod}"'
        if form == "labels":
            labels += f',err_code="{value}",err_msg="{MESSAGES[value]}"'
        lines.append(f"{XID}{{{labels}}} {value}")
    return "\n".join(lines) + "\n"


live = scraped_fixture("xid-code-latest", page, EXPORTERS, ANSWERS, INTERVAL)


def truth(times: dict[str, list[float]], at: float, pod: str | None = None) -> dict[str, tuple[int, bool]]:
    """{legend: (code, certain)} at `at`: each GPU's newest reading among its exporters' answers taken by `at` (of the
    GPUs `pod` holds, with a pod picked); `certain` False where that reading is 3 to 5 intervals old (the look-back's
    edge: the GPU may show or not), the GPU left out past it."""
    newest: dict[str, tuple[float, int]] = {}
    for name, (_, node, _, first, end, gpus) in EXPORTERS.items():
        taken = [(t, k) for k, t in enumerate(times[name]) if t <= at and first <= k < end]
        if not taken:
            continue
        when, k = taken[-1]
        for gpu, (holder, codes) in gpus.items():
            legend = f"{node} GPU {gpu}"
            if (pod is None or holder == pod) and when > newest.get(legend, (float("-inf"), 0))[0]:
                newest[legend] = (when, code(codes, k))
    return {legend: (value, at - when < (LOOKBACK - 1) * INTERVAL) for legend, (when, value) in newest.items()
            if at - when <= (LOOKBACK + 1) * INTERVAL}


def off_truth(live, title: str, pod: str | None = None) -> dict[float, tuple[dict, dict]]:
    """{step: (shown, truth)} where the panel `title` (with ml/`pod` picked, else at All) differs from the truth."""
    prometheus, times, start, count, step = live
    target = bundled_panel(title)["targets"][0]
    expr = scraped_every(counted_inline(target["expr"], load_project()), 30, INTERVAL)
    picked = {"namespace": "ml", "pod": pod} if pod else {}
    query = interpolate(expr, {**SCENE_RANGE, **variables(picked, ("namespace", "pod", "node", "gpu"))})
    wrong = {}
    for at, result in prometheus.query_at(query, start, count, step).items():
        shown = {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1]) for s in result}
        expected = truth(times, at, pod)
        certain = {legend for legend, (_, sure) in expected.items() if sure}
        if len(shown) != len(result) or not certain <= set(shown) <= set(expected) \
                or any(shown[legend] != expected[legend][0] for legend in shown):
            wrong[round(at - start, 3)] = (shown, expected)
    return wrong


def grouped_off_truth(live, project, title: str) -> dict[float, tuple[dict, dict]]:
    """{step: (shown, truth)} where the user's panel `title` (GROUPED) differs from the largest of the newest codes of
    the GPUs of each of its lines (ml/train holds a's GPU 0)."""
    prometheus, times, start, count, step = live
    target = grouped_target(project, title)
    expr = scraped_every(counted_inline(target["expr"], project), 30, INTERVAL)
    query = interpolate(expr, {**SCENE_RANGE, **variables({}, ("namespace", "pod", "node", "gpu", "cluster"))})
    wrong = {}
    for at, result in prometheus.query_at(query, start, count, step).items():
        shown = {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1]) for s in result}
        gpus = truth(times, at, "train") if title.endswith("pod") else truth(times, at)
        lines: dict[str, list[tuple[int, bool]]] = {}
        for legend, reading in gpus.items():
            lines.setdefault("Pod ml/train" if title.endswith("pod") else legend.split(" GPU ")[0], []).append(reading)
        certain = {line for line, readings in lines.items() if all(sure for _, sure in readings)}
        if len(shown) != len(result) or not certain <= set(shown) <= set(lines) \
                or any(shown[line] != max(value for value, _ in lines[line]) for line in shown):
            wrong[round(at - start, 3)] = (shown, lines)
    return wrong


@pytest.mark.parametrize("title", ["XID code by pod", "XID code by node"])
def test_a_pod_or_node_shows_the_largest_of_its_gpus_newest_codes(live, tmp_path, title):
    assert not grouped_off_truth(live, defined_project(tmp_path, dashboards=GROUPED), title)


@pytest.mark.parametrize("title", TITLES)
def test_each_gpu_shows_the_code_of_its_newest_reading(live, title):
    assert not off_truth(live, title)


@pytest.mark.parametrize("title", TITLES)
def test_a_picked_pod_shows_its_gpu_at_its_newest_code(live, title):
    assert not off_truth(live, title, "train")


def test_the_scene_holds_each_story(live):
    """Each story's codes are read at some step, and the stopped exporter's GPU leaves (a scene scraped too few times
    would pass the tests above on little)."""
    prometheus, times, start, count, step = live
    seen: dict[str, set[int]] = {}
    for at in (start + i * step for i in range(count)):
        for legend, (value, _) in truth(times, at).items():
            seen.setdefault(legend, set()).add(value)
    stories = {"a GPU 0": {13, 79, 45}, "a GPU 1": {119, 79}, "v GPU 0": {13, 79, 45}, "u GPU 0": {119, 79},
               "r GPU 0": {79, 0}, "s GPU 0": {119, 79}}
    assert all(codes <= seen.get(legend, set()) for legend, codes in stories.items()), seen
    assert "s GPU 0" not in truth(times, start + (count - 1) * step)
