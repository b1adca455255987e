"""A GPU read by two exporters (n4 mid-rollout: its old exporter, `Hostname="n4"`, 90 %, and a newer one through a
scrape job that labels the node, `hostname="n4"`, `node="n4"`, 95 %), neither failing a scrape, one scrape of the
node-labelled copy taken 2 s late (a loaded Prometheus). On a 1 s input grid standing for 30 s scrapes (promtool): the
old copy scraped at 30 n - 1 s, the node-labelled one at 30 n - 20 s but scrape 7 at 192 s for 190.

Truth: "GPU utilization" draws `n4 GPU 0` at the reading of the copy scraped last (each scrape is a reading of the
one GPU at its time: the newest is its latest; promql.older_samples): 90 % from the old copy's scrape at 30 n - 1 s
until the node-labelled copy's next, 95 % from there. Inside the late scrape's 2 s gap (191 s) the old copy's 179 s
reading is the newest (the node-labelled copy's 160 s one is also older than the scrape interval): 90 %. Before c75fe0bb
the line read the higher of the fresh copies (95 %) and, inside that gap, 90 % (the node-labelled copy not fresh):
a value that jumped between exporters with scrape jitter alone; now it follows the scrapes' own order."""

from __future__ import annotations

import pytest

from tests.support.promtool_rules import promtool_test
from tests.support.scrape_scene import lookback_panel

OLD = 'instance="n4:9400",job="dcgm"'
JOB = 'instance="10.0.0.4:9400",job="gpudash-dcgm"'
GPU = 'gpu="0",UUID="GPU-n4-0",device="nvidia0",modelName="NVIDIA A100-SXM4-80GB"'
ON_TIME = {OLD: {n: 30 * n - 1 for n in range(1, 9)}, JOB: {n: 30 * n - 20 for n in range(1, 9)}}
LATE = {OLD: ON_TIME[OLD], JOB: ON_TIME[JOB] | {7: 192}}


def _values(value: float, at: dict[int, int]) -> str:
    return " ".join(str(value) if second in at.values() else "_" for second in range(max(at.values()) + 1))


def _series(scrapes: dict[str, dict[int, int]]) -> list[dict[str, str]]:
    return [*({"series": f"up{{{target}}}", "values": _values(1, at)} for target, at in scrapes.items()),
            {"series": f'DCGM_FI_DEV_GPU_UTIL{{{GPU},Hostname="n4",{OLD}}}', "values": _values(90, scrapes[OLD])},
            {"series": f'DCGM_FI_DEV_GPU_UTIL{{{GPU},hostname="n4",node="n4",{JOB}}}',
             "values": _values(95, scrapes[JOB])}]


def _fresher(scrapes: dict[str, dict[int, int]], at: int) -> float:
    """The reading of the copy scraped last at or before `at`."""
    latest = {target: max(t for t in times.values() if t <= at) for target, times in scrapes.items()}
    return {OLD: 90, JOB: 95}[max(latest, key=latest.get)]


def _read(tmp_path, scrapes: dict[str, dict[int, int]], seconds: tuple[int, ...]) -> None:
    _, expr = lookback_panel("", "GPU utilization", 30)
    cases = [{"expr": expr, "eval_time": f"{at}s",
              "exp_samples": [{"labels": '{gpu="0",node="n4"}', "value": _fresher(scrapes, at)}]} for at in seconds]
    (tmp_path / "rules.yaml").write_text("groups: []\n")
    promtool_test(tmp_path, "late.yaml", [{"interval": "1s", "input_series": _series(scrapes),
                                           "promql_expr_test": cases}])


@pytest.mark.parametrize("scrapes", [ON_TIME, LATE], ids=["on_time", "late"])
def test_the_fresher_copy_shows_around_a_late_scrape(tmp_path, scrapes):
    assert [_fresher(scrapes, at) for at in (185, 190, 191, 193)] == \
        ([90, 95, 95, 95] if scrapes is ON_TIME else [90, 90, 90, 95])  # the scene's own order of scrapes
    _read(tmp_path, scrapes, (185, 190, 191, 193, 200))
