"""The PCIe replays rule ("more than N replays within 5 minutes", a level per period) across a gap in a GPU's data
longer than its 5-minute window, and across a counter reset (a GPU reset or driver reload zeroes DCGM's counter), on
`promtool test rules` with the generated rules (Debian's Prometheus 2.42).

Each GPU is alone on its node; its exporter fails every scrape of its gap (each series marked stale at the first). The
truth of a window (t - 5 min, t] is the replays the link made in it. A steady link of 40 per 5 minutes (under the
level, 50) never fires, whatever gap its data has; a burst of 60 within one scrape interval fires in every window
holding it, also the first after a gap longer than the window (its baseline the first reading back) and right after a
reset (the reading after a fall counted as it is: replays since the reset). A reset during a gap counts the reading
back as it is too: no negative increase, no spike.

A reading after a gap shorter than promql.WINDOW_PREVIOUS_WITHIN (10 minutes), or after a missed scrape, holds the
growth of every scrape it stands for: each period counts the share of the scrapes due inside it (promql._prorated),
so a steady link reads its 40 per 5 minutes in every period after the gap (the whole 8.5 minutes' growth landed in one
period: 68, and the rule fired). Its CloudWatch twin still fires there (the agent sends the gap's growth as one
delta: AL018 says so).
"""

from __future__ import annotations

import json
import subprocess

import pytest

from generator.project import load_project
from generator.render.alarms import period_value
from tests.integration.test_device_counters import FIELDS, REPLAYS
from tests.integration.test_mig_twins import built_with
from tests.support.prometheus_server import binary
from tests.support.promtool_rules import parsed_rules

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
    "missed-one": (_steady, range(20, 21)),  # the scrape at 630 s, a period's start, missed
}


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


LATER = STEP  # the rule's stories judged a scrape later (_rule_verdict): the rules read no absolute time
_RULE_VERDICT: dict[str, str | None] = {}  # the rules' folder -> promtool's failure judging every story, or None


def _rule_verdict(built) -> str | None:
    """promtool's failure judging the replays rule on every story at once, or None: each story's GPU (its own node
    and UUID) is its own alert, expected at the ends its truth fires. One run for the eight stories: promtool
    evaluates the rule at every step whatever the series, so eight runs of one series (2.6 s CPU each) cost about
    eight times one of eight. The rule joins no node's series with another's (checked, as for test_counter_gap_twins'
    gaps); a run over promtool's sample limit is halved (tests/support/promtool_batches)."""
    from tests.support.promtool_rules import stories_alert_failure
    import yaml

    _, folder = built
    if str(folder) not in _RULE_VERDICT:
        groups = parsed_rules((folder / "rules.yaml").read_text())["groups"]
        (rule,) = [r for g in groups for r in g["rules"]
                   if r.get("labels", {}).get("gpudash_rule") == "pcie-replays" and "alert" in r]
        # every story a scrape later (the ends then fall on whole minutes: promtool evaluates the rule every minute
        # from 0 to the last, 41 times, where at the ends as they are, 330 s past the minute 5 apart, the fewest
        # evaluations that hold them all were 70, in 24 files); promtool's times are the stories' plus LATER
        _RULE_VERDICT[str(folder)] = stories_alert_failure(
            folder, rule, STORIES, [end + LATER for end in ENDS], lambda node, end: end - LATER in truth(node),
            lambda node: {**_stored(node), "values": "_ " + _stored(node)["values"]}, STEP, "replay_gaps")
    return _RULE_VERDICT[str(folder)]


@pytest.mark.parametrize("node", list(STORIES))
def test_the_replays_rule_fires_where_the_link_made_more_than_the_level_in_5_minutes(built, node):
    """The rule fires at the ends whose window holds more than the level of the node's replays, and at no other.
    Every story is judged in one promtool run (_rule_verdict): a story's wrong alert fails every story's test,
    promtool's message naming the node."""
    failure = _rule_verdict(built)
    assert failure is None, failure


# the stories whose every period the rule can read whole: no gap past its horizon, no reset inside a gap (whose
# growth before the reset no reading holds)
KNOWN = ("steady", "gap-8m", "missed-one", "reset", "reset-burst")


def test_each_period_reads_the_replays_the_link_made_in_it(built):
    """The replays rule's period (its value, not only whether it fires) at each END where every story's reading at
    END arrived (a period ending inside a gap reads what arrived: the rest comes with the reading back): the replays
    the link made in it. Before, a period starting inside the 8-minute gap read 68 (the gap's whole growth) and the period
    after the missed scrape at 630 s read 44, for 40. promtool loads its input's samples up to before its last
    evaluation instant: a last check after the data holds them all."""
    _, folder = built
    project = load_project(folder / "gpudash.yaml", folder / "counters.csv")
    (alarm,) = [a for a in project.alarms if a.id == "pcie-replays"]
    expr = period_value(alarm, project.catalog, project.settings)
    ends = [end for end in ENDS if all(end // STEP - 1 not in STORIES[node][1] for node in KNOWN)]
    assert len(ends) == 26
    checks = [{"expr": expr, "eval_time": f"{end}s", "exp_samples": [
        {"labels": f'{{gpu="0", node="{node}"}}', "value": _window(node, end)} for node in KNOWN]} for end in ends]
    checks.append({"expr": "vector(1)", "eval_time": f"{(STEPS + 2) * STEP}s", "exp_samples": [{"labels": "{}",
                                                                                              "value": 1}]})
    (folder / "periods.json").write_text(json.dumps({"tests": [{"interval": f"{STEP}s", "input_series": [
        _stored(node) for node in KNOWN], "promql_expr_test": checks}]}))
    run = subprocess.run([binary("promtool"), "test", "rules", "periods.json"], cwd=folder, capture_output=True, text=True)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
