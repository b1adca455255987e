"""A GPU read by two exporters (n4 mid-rollout: its old exporter, `Hostname="n4"`, 90 %, and a newer one through a
scrape job that labels the node, `hostname="n4"`, `node="n4"`, 95 %), neither failing a scrape, one scrape of the
node-labelled copy taken 2 s late (a loaded Prometheus). On a 1 s input grid standing for 30 s scrapes (promtool): the
old copy scraped at 30 n - 1 s, the node-labelled one at 30 n - 20 s but scrape 7 at 192 s for 190.

Truth: "GPU utilization" draws `n4 GPU 0` at 95 % at every instant (the copy choice's: of two copies answering every
scrape, the one reading the most). Found: at 191 s, inside the late scrape's 2 s gap, it draws 90 %: the node-labelled
copy's latest sample (160 s) is 31 s old, not "within the last scrape interval" (promql.fresh_copies, chosen_copy),
so the old copy, the only fresh one, is read. A scrape that starts d late (past Prometheus' 2 ms timestamp alignment)
moves the line to the other exporter at every instant within d after it was due: a value jumping between exporters
with scrape jitter (s39 J; the flake of test_node_view_every_panel at load ~20 was a failed or late scrape alike).
Pinned (strict xfail); at 185 s and 193 s, and with scrape 7 on time, 95 % holds."""

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


def _read(tmp_path, scrapes: dict[str, dict[int, int]], seconds: tuple[int, ...]) -> None:
    _, expr = lookback_panel("", "GPU utilization", 30)
    cases = [{"expr": expr, "eval_time": f"{at}s", "exp_samples": [{"labels": '{gpu="0",node="n4"}', "value": 95}]}
             for at in seconds]
    (tmp_path / "rules.yaml").write_text("groups: []\n")
    promtool_test(tmp_path, "late.yaml", [{"interval": "1s", "input_series": _series(scrapes),
                                           "promql_expr_test": cases}])


@pytest.mark.parametrize("scrapes", [ON_TIME, LATE], ids=["on_time", "late"])
def test_the_higher_copy_shows_around_a_late_scrape(tmp_path, scrapes):
    _read(tmp_path, scrapes, (185, 190, 193, 200))


@pytest.mark.xfail(strict=True, reason="90 % for 95 % within a late scrape's gap: the copy is not fresh there")
def test_the_higher_copy_shows_within_a_late_scrapes_gap(tmp_path):
    _read(tmp_path, LATE, (191,))
