"""The PCIe replays rule ("more than N replays within 5 minutes", a level per period) across a gap in a GPU's data
longer than its 5-minute window, and across a counter reset (a GPU reset or driver reload zeroes DCGM's counter), on
`promtool test rules` with the generated rules (Debian's Prometheus 2.42).

Each GPU is alone on its node; its exporter fails every scrape of its gap (each series marked stale at the first). The
truth of a window (t - 5 min, t] is the replays the link made in it. A steady link of 40 per 5 minutes (under the
level, 50) never fires, whatever gap its data has; a burst of 60 within one scrape interval fires in every window
holding it, also the first after a gap longer than the window (its baseline the first reading back) and right after a
reset (the reading after a fall counted as it is: replays since the reset). A reset during a gap counts the reading
back as it is too: no negative increase, no spike.

Open (README, "A counter across a gap in its data"): a gap shorter than promql.WINDOW_PREVIOUS_WITHIN (10 minutes)
lands its whole growth in the window after it, not normalised by the time it grew in: a steady link under the level
fires after an 8-minute gap (68 replays in one window: GAP_GROWTH). Its CloudWatch twin fires there too (the agent
sends the gap's growth as one delta: AL018 says so).
"""

from __future__ import annotations

import pytest

from tests.integration.test_device_counters import FIELDS, REPLAYS
from tests.integration.test_mig_twins import built_with

STEP, STEPS = 30, 80  # forty minutes of 30 s scrapes, k = -1 .. 79 (scrape k at (k + 1) x 30 s on promtool's grid)
LEVEL = 50  # pcie_replays_per_minute 10, per 5 minutes
ENDS = range(330, (STEPS + 1) * STEP, 60)


def _steady(k: int) -> float:
    return 1000 + 4 * (k + 1)  # 40 replays per 5 minutes


# node -> (its counter's reading at scrape k, what the GPU counted, whether stored or not; the scrapes its exporter
# fails: the series has no sample there)
STORIES = {
    "steady": (_steady, range(0)),
    "gap-8m": (_steady, range(31, 47)),  # 16 scrapes away: the reading before is 8.5 minutes old at the return
    "gap-15m": (_steady, range(31, 61)),  # past the rule's 10-minute horizon: the gap's growth is counted nowhere
    "burst-after-gap-15m": (lambda k: 1000.0 if k < 62 else 1060.0, range(31, 61)),
    "reset": (lambda k: _steady(k) if k <= 40 else 2 + 4 * (k - 41), range(0)),
    "reset-burst": (lambda k: 5000.0 if k <= 40 else 60.0, range(0)),
    "reset-during-gap": (lambda k: _steady(k) if k <= 36 else 4 * (k - 37), range(31, 39)),  # reads 8 back
}
GAP_GROWTH = {"gap-8m"}


def _made(node: str, k: int) -> float:
    """What the GPU's link made between scrapes k - 1 and k: the growth, or after a fall the reading as it is."""
    counter = STORIES[node][0]
    now, before = counter(k), counter(k - 1)
    return now - before if now >= before else now


def _window(node: str, end: int) -> float:
    """The replays the link made in (end - 5 min, end], by the scrapes taken in it (stored or not)."""
    return sum(_made(node, k) for k in range(STEPS) if end - 300 < (k + 1) * STEP <= end)


def truth(node: str) -> set[int]:
    return {end for end in ENDS if _window(node, end) > LEVEL}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return built_with(tmp_path_factory.mktemp("replay-gaps"), {}, FIELDS)


def _stored(node: str) -> dict[str, str]:
    """The node's replay counter as Prometheus stores it from the generated scrape job (which attaches `node`), on
    promtool's grid: a failed scrape marks the series stale."""
    labels = (f'gpu="0",UUID="GPU-{node}",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="{node}",'
              f'DCGM_FI_DRIVER_VERSION="550.54.15",node="{node}"')
    counter, away = STORIES[node]
    values, before = [], False
    for k in range(-1, STEPS):
        values.append(f"{counter(k):g}" if k not in away else "stale" if before else "_")
        before = k not in away
    return {"series": f"{REPLAYS}{{{labels}}}", "values": " ".join(values)}


def test_the_stories_are_told_apart():
    assert {node for node in STORIES if truth(node)} == {"burst-after-gap-15m", "reset-burst"}
    assert max(_window(node, end) for node in ("steady", "gap-8m", "reset-during-gap") for end in ENDS) == 40


@pytest.mark.parametrize("node", [pytest.param(node, marks=pytest.mark.xfail(strict=True, reason=(
    "a gap's growth under 10 minutes lands whole in the window after it (68 replays of 8.5 minutes read as one "
    "window's): not normalised by the time it grew in"))) if node in GAP_GROWTH else node for node in STORIES])
def test_the_replays_rule_fires_where_the_link_made_more_than_the_level_in_5_minutes(built, node):
    from tests.integration.test_prometheus_rules import _expected, _promtool_test
    import yaml

    _, folder = built
    groups = yaml.safe_load((folder / "rules.yaml").read_text())["groups"]
    (rule,) = [r for g in groups for r in g["rules"] if r.get("labels", {}).get("gpudash_rule") == "pcie-replays"
               and "alert" in r]
    fires = truth(node)
    checks = [{"eval_time": f"{end}s", "alertname": rule["alert"],
               "exp_alerts": [_expected(folder, rule["alert"], node=node, gpu="0")] if end in fires else []}
              for end in ENDS]
    _promtool_test(folder, f"replay_gaps_{node}.yaml", [{"interval": f"{STEP}s", "input_series": [_stored(node)],
                                                         "alert_rule_test": checks}], evaluation_interval=f"{STEP}s")
