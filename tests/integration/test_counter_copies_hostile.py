"""The counter rules' merge of a GPU's exporter copies (promql.held_reading: at each step where a copy has a new
sample, the largest of every copy's latest reading) on stories where that largest reading goes down without the
counter having been reset on the GPU the way the rule assumes: the exporters of a surge rollout
(tests/unit/test_cloudwatch_exporter_overlap.py `scrapes`: the old pod scraped on the half minute reading DCGM 1 s
before, the new one 10 s past) stored as gpudash's scrape job stores them (test_cloudwatch_rollout_twins._series),
judged by `promtool test rules` on the generated rules file at every minute from 6 to 30.

The truth in each story: the link replays 30 per 5 minutes (threshold 50), so GpudashPcieReplays never fires.

The same stories through Grafana's counter panels (a rate of the counter's recording, promql.counted_rules; an
increase over the range, range_increase): a per-GPU rate reads the
link's 0.1 per second and the GPU's 200,000 mW, an increase over the range the replays of its scrapes, within what
DCGM's collect interval blurs (below).
"""

from __future__ import annotations

import functools
import json
import math
from typing import Callable

import pytest

from tests.integration import test_cloudwatch_rollout_twins as twins
from tests.support import exporter_overlap as overlap
from tests.support.copy_choice_scene import counter_growth
from tests.support.promtool_batches import batch_failure
from tests.support.promtool_rules import (alert_rule, judged_apart, promtool_test, rule_groups,  # noqa: F401
                                          rules, stories_own, targets_up)

ALERT = "GpudashPcieReplays"
_SCRAPES = overlap.scrapes  # the rollout's scrapes, each exporter collecting every 30 s


def _silent(rules, name: str, series: list[dict]) -> None:
    """Pass promtool when the replays rule fires at no minute of twins.MINUTES."""
    tests = [{"interval": f"{twins.STEP}s", "input_series": series, "alert_rule_test": [
        {"eval_time": f"{m}m", "alertname": ALERT, "exp_alerts": []} for m in twins.MINUTES]}]
    promtool_test(rules, name, tests)


def _slow_collection(old_until: int, new_from: int, collect: int = 60) -> list[tuple[str, float, float]]:
    """overlap.scrapes with the new exporter collecting from DCGM every `collect` seconds (dcgm-exporter -c 60000),
    twice the 30 s scrape interval: each of its scrapes serves the reading of its latest collection, at 12 s past."""
    out = []
    for who, scraped, taken in _SCRAPES(old_until, new_from):
        if who == "new":
            taken = math.floor((scraped - 12) / collect) * collect + 12
        out.append((who, scraped, taken))
    return out


RESET_AT = 700  # s: the GPU is reset (nvidia-smi -r, the runbook's remedy after an XID error); the counter restarts at 0


def _replays_with_reset(taken: float) -> int:
    if taken < RESET_AT:
        return overlap.replays_at(taken)
    return math.floor(0.1 * (taken - RESET_AT))


def _silent_story(name: str) -> list[dict]:
    """The series of a story in which the replays rule stays silent (SILENT_STORIES)."""
    reset = {twins.REPLAYS: lambda taken: str(_replays_with_reset(taken))}
    if name == "reset-during-a-surge-overlap":
        return twins._series(900, 600, readings=reset)
    if name == "reset-under-one-exporter":
        return twins._series(overlap.END, overlap.END, readings=reset)
    with pytest.MonkeyPatch.context() as patched:  # a rollout whose new exporter collects every 60 s
        patched.setattr(overlap, "scrapes", _slow_collection)
        return twins._series(900, 600 if name == "60s-collection-5-minute-overlap" else 840)


SILENT_STORIES = ("60s-collection-5-minute-overlap", "60s-collection-1-minute-overlap", "reset-during-a-surge-overlap",
                  "reset-under-one-exporter")
_SILENCE: dict[str, str | None] = {}  # the rules' folder -> promtool's failure judging SILENT_STORIES together, or None


def _stays_silent(rules, name: str) -> None:
    """Pass when the replays rule fires at no minute of the story. Every story of SILENT_STORIES is judged in one
    promtool run, each under its own namespace, node and GPU UUID (stories_own), no alert expected: promtool's
    cost is evaluating the rule at every minute, whatever the series (the four stories 3.6 s of CPU apart). The rule
    joins no story's series with another's (judged_apart), so no story can keep another's alert from firing, and an alert
    of any story fails the run. A run over promtool's sample limit is halved (tests/support/promtool_batches); an
    alert fails every story's test with promtool's message (the alert's namespace and node end in the story's -s<k>)."""
    if not judged_apart(alert_rule(rules, ALERT)["expr"]):  # a join could match one story's series with another's: alone
        _silent(rules, f"replays_silent_{name}.yaml", _silent_story(name))
        return
    if str(rules) not in _SILENCE:
        def judge(part: list[int]) -> None:
            series = [{**one, "series": stories_own(one["series"], k)}
                      for k in part for one in _silent_story(SILENT_STORIES[k])]
            _silent(rules, f"replays_silent_together_{part[0]}.yaml", series)

        _SILENCE[str(rules)] = batch_failure(list(range(len(SILENT_STORIES))), judge)
    if _SILENCE[str(rules)] is not None:
        pytest.fail(f"the replays rule fired in a story of {SILENT_STORIES} judged together (story k's namespace, "
                    f"node and UUID end in -s<k>):\n{_SILENCE[str(rules)]}")


@pytest.mark.parametrize("new_from", [600, 840], ids=["5-minute-overlap", "1-minute-overlap"])
def test_the_replays_rule_stays_silent_through_a_rollout_whose_exporter_collects_every_60s(rules, new_from):
    # after the old exporter's staleness marker (900 s) the new one's reading taken at 852 s (10,085) is below the
    # old one's last (10,086 at 869 s): read as a reset, the counter since boot counted as one increase, the rule
    # fired at minutes 16-20 of both overlaps; the step's delta is now the new copy's own (10,085 less 10,079)
    _stays_silent(rules, {600: "60s-collection-5-minute-overlap", 840: "60s-collection-1-minute-overlap"}[new_from])


def test_the_replays_rule_stays_silent_when_the_gpu_is_reset_during_a_surge_overlap(rules):
    # the old exporter's first reading after the reset (1 at 719 s) merged with the new one's latest, taken before
    # the reset (10,067 at 672 s): the merged readings went 10,068 -> 10,067 -> 0, two steps down, the counter since
    # boot counted as an increase, and the rule fired at minutes 12-16; each step is now the copies' own deltas
    _stays_silent(rules, "reset-during-a-surge-overlap")


def test_the_replays_rule_stays_silent_when_the_gpu_is_reset_under_one_exporter(rules):
    # the same reset with the old exporter alone (no rollout): one copy, the reset read as a reset, the replays
    # since it (a few) as its increase
    _stays_silent(rules, "reset-under-one-exporter")


# --- Grafana's counter panels on the same stories -----------------------------------------------------------------

PANEL_MINUTES = range(8, overlap.END // 60)  # each window (2 minutes; 5 for an increase) full of readings


def _panel(dashboard: str, title: str, metric: str | None = None) -> str:
    """A panel's query with every variable at All, Grafana's $__rate_interval for 30 s scrapes (2m) and a 5-minute
    range; `metric`: read on another counter (the query's form is the same for each)."""
    files = overlap.overlap_build("otel")
    (expr,) = [p["targets"][0]["expr"] for p in json.loads(files[f"grafana/{dashboard}.json"])["panels"]
               if p.get("title") == title]
    expr = expr.replace("$__rate_interval", "2m").replace("${__range_ms}", "300000").replace("$__range", "5m")
    for variable in ("$namespace", "$pod", "$gpu", "$node", "$cluster"):
        expr = expr.replace(variable, ".*")
    return expr.replace(twins.ROWS, metric) if metric else expr


def _reads_within(rules, name: str, expr: str, series: list[dict], low: float, high: float,
                  line: str | list[str] = f'{{gpu="0", node="{overlap.NODE}"}}') -> None:
    """Pass promtool when `expr` reads the one `line` (the GPU's; or each of the lines listed) at every minute of
    PANEL_MINUTES, between `low` and `high`: a reading under `low` is filtered out (no sample), one over `high` reads
    0, either fails the case. `expr` is written once: Prometheus evaluates each occurrence of a subexpression anew, and
    two occurrences of these increases over the range (an hour's subquery inside) took three times the CPU of one in
    promtool."""
    inside = f"(({expr}) >= {low!r}) <= bool {high!r}"
    lines = [{"labels": one, "value": 1} for one in ([line] if isinstance(line, str) else line)]
    tests = [{"interval": f"{twins.STEP}s", "input_series": series,
              "promql_expr_test": [{"expr": inside, "eval_time": f"{m}m", "exp_samples": lines}
                                   for m in PANEL_MINUTES]}]
    promtool_test(rules, name, tests)


@functools.cache
def _kept_apart(rules, expr: str) -> bool:
    """Whether neither `expr` nor a recording of the rules file it reads joins one story's series with another's
    (judged_apart)."""
    recorded = [r["expr"] for g in rule_groups((rules / "rules.yaml").read_text()) for r in g["rules"]
                if r.get("record") and r["record"] in expr]
    return all(judged_apart(e) for e in [expr, *recorded])


_READ: dict[tuple, str | None] = {}  # (the rules' folder, a batch's name) -> promtool's failure reading it, or None


def _read_together(rules, batch: str, stories: dict[str, Callable[[], list[dict]]], name: str, expr: str, low: float,
                   high: float, line: str = f'{{gpu="0", node="{overlap.NODE}"}}') -> None:
    """Pass when story `name` of `stories` (each made by its function, every one read on `line` at the same interval)
    reads within `low` and `high` at every minute of PANEL_MINUTES, as _reads_within judges one story. Every
    story of the batch is read in one promtool run, each under its own namespace, node and GPU UUID (stories_own),
    each story's line expected at each minute and no other line: promtool's cost is evaluating the counters'
    recordings and the panel at each step, whatever the series. Neither the panel nor a recording it reads joins one
    story's series with another's (_kept_apart; else `name` is read alone), so the run passes only where each story
    alone would. A run over promtool's sample limit is halved (tests/support/promtool_batches); any other failure
    fails every test of the batch with promtool's message (a story's line ends in its -s<k>)."""
    if not _kept_apart(rules, expr):
        _reads_within(rules, f"{batch}_{name}.yaml", expr, stories[name](), low, high, line)
        return
    names, key = list(stories), (str(rules), batch)
    if key not in _READ:
        made = [stories[n]() for n in names]

        def judge(part: list[int]) -> None:
            series = [{**one, "series": stories_own(one["series"], k)} for k in part for one in made[k]]
            _reads_within(rules, f"{batch}_{part[0]}.yaml", expr, series, low, high, [stories_own(line, k) for k in part])

        _READ[key] = batch_failure(list(range(len(names))), judge)
    if _READ[key] is not None:
        pytest.fail(f"the stories of {batch} read together ({names}: story k's namespace, node and UUID end in -s<k>, "
                    f"this one's -s{names.index(name)}):\n{_READ[key]}")


def _reset_story() -> list[dict]:
    return twins._series(900, 600, readings={twins.REPLAYS: lambda taken: str(_replays_with_reset(taken))})


def test_grafanas_replays_rate_reads_the_links_rate_when_the_gpu_is_reset_during_a_surge_overlap(rules):
    # the health dashboard's "PCIe replays" (per GPU, per second) reads at every minute what it reads with the old
    # exporter alone (the same reset, no rollout): 0.1, and where the window holds the reset the replays its readings
    # show (the 1 of 719 s counted from the reset: 13 in 150 s; the growth between the reading of 689 s and the reset
    # is in no reading). rate() of the merged readings read 84 per second at minutes 12 and 13 (the reset copy's step
    # down read as a reset of the counter since boot). While the largest latest reading alone chose the leading copy,
    # the panel read 0.1 there: the new copy's reading taken before the reset (10,067 at 672 s) led, and its own delta
    # recounted 3 replays the old copy had counted
    panel = _panel("gpudash-health", "PCIe replays")
    assert judged_apart(panel)
    stories = [_reset_story(), _silent_story("reset-under-one-exporter")]
    series = [{**one, "series": stories_own(one["series"], k)} for k, story in enumerate(stories) for one in story]
    # one value shared by both stories' lines (count_values: 2 of it), within 10 replays in 120 s and 0.1
    alike = f'max by (gpu) (count_values by (gpu) ("value", (({panel}) >= {10 / 120!r}) <= 0.1))'
    promtool_test(rules, "panel_replays_reset.yaml", [{"interval": f"{twins.STEP}s", "input_series": series,
                  "promql_expr_test": [{"expr": alike, "eval_time": f"{m}m", "exp_samples": [
                      {"labels": '{gpu="0"}', "value": 2}]} for m in PANEL_MINUTES]}])


def _energy_story(scrapes, old_until: int = overlap.END, new_from: int = 0) -> Callable[[], list[dict]]:
    """The energy story whose scrapes `scrapes` gives (overlap.scrapes' form), the old exporter until `old_until`, the
    new one from `new_from`."""
    def made() -> list[dict]:
        with pytest.MonkeyPatch.context() as patched:
            patched.setattr(overlap, "scrapes", scrapes)
            return twins._series(old_until, new_from,
                                 readings={twins.ENERGY: lambda taken: f"{overlap.energy_at(taken):.0f}"})
    return made


def _energy_within(rules, batch: str, name: str, low: float, high: float) -> None:
    """The all-metrics dashboard's "Energy use rate" (per GPU) reads within `low` and `high` of the GPU's 200,000 mW on
    story `name` of ENERGY_STORIES[batch], every story of the batch read in one promtool run (_read_together)."""
    watts = overlap.WATTS * 1000
    _read_together(rules, batch, ENERGY_STORIES[batch], name, _panel("gpudash-all-metrics", twins.ENERGY[8:]),
                   low * watts, high * watts)


@pytest.mark.parametrize("new_from", [600, 840], ids=["5-minute-overlap", "1-minute-overlap"])
def test_grafanas_energy_rate_reads_the_gpus_power_through_a_rollout_whose_exporter_collects_every_60s(
        rules, new_from):
    # 200,000 mW throughout, within what DCGM collecting every 60 s blurs (rate() of the merged readings read 4.18e8
    # mW at minutes 15 and 16: the new copy's reading taken before the old one's last read as a reset)
    _energy_within(rules, "blurred", f"60s-collection-{new_from}", 0.75, 1.25)


@pytest.mark.parametrize("new_from", [600, 840], ids=["5-minute-overlap", "1-minute-overlap"])
def test_grafanas_per_pod_energy_rate_reads_the_gpus_power_through_a_surge_rollout(rules, new_from):
    # the by-pod dashboard's "Energy use rate of each pod's GPUs" (ml/train-0 holds the GPU, both exporters name it):
    # 200,000 mW at every minute. rate() of the copies' merged readings read 4.18e8 mW at minutes 15 and 16 after
    # either overlap (the new copy's reading taken before the old one's last, at the old one's staleness marker);
    # both overlaps read in one promtool run (_read_together)
    watts = overlap.WATTS * 1000
    stories = {f"surge-{k}": _energy_story(_SCRAPES, 900, k) for k in (600, 840)}
    _read_together(rules, "pod_energy", stories, f"surge-{new_from}",
                   _panel("gpudash-by-pod", "Energy use rate of each pod's GPUs"), watts, watts,
                   '{namespace="ml", pod="train-0"}')


@pytest.mark.parametrize("story", ["reset-in-overlap", "slow-collection", "surge-1-minute"])
def test_an_increase_over_the_range_reads_the_replays_of_its_scrapes_through_a_rollout(rules, story, monkeypatch):
    # the health dashboard's increase over the range (the remapped-rows panels' form), read on the replays counter
    # over a 5-minute range: 30 to 33 replays (the range holds the scrapes at both its ends), or up to 36 where the
    # new exporter collects every 60 s (one collection counted twice at the handover). It read 10,097 to 10,115 (the
    # counter since boot) for every range holding the step where the merged readings went down: at minutes 12-20
    # with the reset, 15-20 through the 60 s collection and the 1-minute overlap
    if story == "slow-collection":
        monkeypatch.setattr(overlap, "scrapes", _slow_collection)
    series = _reset_story() if story == "reset-in-overlap" else twins._series(
        900, 840 if story == "surge-1-minute" else 600,
        readings={twins.REPLAYS: lambda taken: str(overlap.replays_at(taken))})
    # Each range holding the handover (the old exporter's staleness marker at 900 s) counts from the old copy's
    # reading before it (taken 1 s before its scrape) to the new copy's latest (taken 18 s or more before its own, the
    # old one's last reading held until the new one's passes it): 29 for a range ending at 16-20 minutes (10,091 at
    # 912 s less 10,062 at 629 s), one collection's blur
    high = 36 if story == "slow-collection" else 33
    _reads_within(rules, "panel_replays_increase.yaml",
                  _panel("gpudash-health", "Rows remapped (uncorrectable)", twins.REPLAYS), series, 29, high)


def _both_collect_every(collect: int):
    """overlap.scrapes with both exporters collecting from DCGM every `collect` seconds, 10 s apart (the old one at 2 s
    past, the new one at 12 s past): two DaemonSets on a node, each exporter run with -c 60000 under a 30 s scrape.
    Each copy's reading is fresher than the other's at every other scrape."""
    def scrapes(old_until: int, new_from: int) -> list[tuple[str, float, float]]:
        phase = {"old": 2, "new": 12}
        return [(who, scraped, math.floor((scraped - phase[who]) / collect) * collect + phase[who])
                for who, scraped, _ in _SCRAPES(old_until, new_from)]
    return scrapes


def _scraped_across_a_step(old_until: int, new_from: int) -> list[tuple[str, float, float]]:
    """Both exporters reading DCGM when scraped (their readings fresh), the old one scraped 20 s past each half
    minute, the new one 29 s past until 600 s and 1 s past from then on (its scrape drifted across the recording's
    step: no scrape of it in (600, 630])."""
    old = [("old", t, t) for t in range(20, overlap.END, 30)]
    new = [("new", t, t) for t in [*range(29, 600, 30), *range(631, overlap.END, 30)]]
    return sorted(old + new, key=lambda s: s[1])


def test_grafanas_energy_rate_reads_the_gpus_power_when_an_exporters_scrape_drifts_across_a_step(rules, monkeypatch):
    # "Energy use rate" with two exporters reading the GPU fresh at each scrape, 9 s apart, until the later one's
    # scrape drifts into the next step: 200,000 mW at every minute. The leading copy's growth above the step before's
    # readings counted over a whole step read 0.925 of it (21 s of growth in 30 s at 630 s); live, with two exporters
    # scraped 1.5 s apart every 2 s, 122,500 mW for 150,000 (test_live_panel_truth)
    monkeypatch.setattr(twins, "STEP", 1)
    _energy_within(rules, "exact", "scrape-drifts", 0.999, 1.001)


@pytest.mark.parametrize("collect", [60], ids=["60s-collection"])
def test_grafanas_energy_rate_reads_the_gpus_power_while_two_exporters_collect_apart(rules, collect):
    # "Energy use rate" (all-metrics dashboard, per GPU) with both exporters reading the GPU throughout, each
    # collecting every 60 s, 10 s apart: 200,000 mW within what a 60 s collection blurs (the rollout test's bound)
    _energy_within(rules, "blurred", f"both-collect-every-{collect}s", 0.75, 1.25)


LATE_BY = 5  # s: one scrape stamped this late (a loaded Prometheus starting it late), its reading taken then


def _one_scrape_stamped_late(old_until: int, new_from: int) -> list[tuple[str, float, float]]:
    """One exporter reading DCGM when scraped (its readings fresh), scraped 10 s past each half minute, its scrape
    due at 640 s stamped LATE_BY seconds late (still inside the recording's step (630, 660]) and its reading taken
    then; the new exporter never runs."""
    return [("old", t + LATE_BY * (t == 640), t + LATE_BY * (t == 640)) for t in range(10, overlap.END, 30)]


def test_grafanas_energy_rate_reads_the_gpus_power_when_a_scrape_is_stamped_late(rules, monkeypatch):
    # "Energy use rate" with one exporter whose scrape due at 640 s ran 5 s late: 200,000 mW at every minute. Its
    # own delta counted over the step grid's 30 s (35 s of growth at 660 s, 25 s at 690 s) read 1.042 of it for the
    # 2-minute window ending at 11 minutes; live, a scrape stamped 303 ms late at 2 s scrapes read 144,335 mW for
    # 150,000 (test_live_panel_truth)
    monkeypatch.setattr(twins, "STEP", 1)
    _energy_within(rules, "exact", "scrape-stamped-late", 0.999, 1.001)


# The energy stories read in one promtool run each (_energy_within), by the bounds they are read within (a 60 s
# collection's blur, or 0.1 %) and the step of their series (30 s; 1 s for scrapes off the 30 s grid)
ENERGY_STORIES = {
    "blurred": {"60s-collection-600": _energy_story(_slow_collection, 900, 600),
                "60s-collection-840": _energy_story(_slow_collection, 900, 840),
                "both-collect-every-60s": _energy_story(_both_collect_every(60))},
    "exact": {"scrape-drifts": _energy_story(_scraped_across_a_step),
              "scrape-stamped-late": _energy_story(_one_scrape_stamped_late, overlap.END, overlap.END)}}


RESTART_AT = 665  # s: the GPU's energy counter starts over from 0 (a GPU reset), between two scrapes of each exporter
MISSED_AT = 690  # s: the old exporter's scrape then failed (its staleness marker in the sample's place)


def _both_fresh(old_until: int, new_from: int) -> list[tuple[str, float, float]]:
    """Two exporters reading DCGM when scraped (their readings fresh), the old one scraped on the half minute, the new
    one 10 s past, both throughout."""
    return sorted([*(("old", t, t) for t in range(0, overlap.END, 30)),
                   *(("new", t + 10, t + 10) for t in range(0, overlap.END, 30))], key=lambda s: s[1])


def _energy_restarting(taken: float) -> str:
    return f"{overlap.energy_at(taken) if taken < RESTART_AT else overlap.WATTS * 1000 * (taken - RESTART_AT):.0f}"


def test_grafanas_energy_rate_reads_the_gpus_power_after_a_restart_the_leading_copy_missed_the_scrape_of(
        rules, monkeypatch):
    # "Energy use rate" with two exporters reading the GPU fresh, the counter restarting at 665 s: the new exporter
    # reads it first (670 s), the old one's scrape of 690 s fails, and its next (720 s) leads. That step counts the old
    # copy's growth above the new copy's 670 s reading (50 s of growth); counted over the old copy's own 60 s since its
    # reading before the restart, a 2-minute window holding it read 0.933 to 0.944 of 200,000 mW (13m50s, 14m). Every
    # window holding no step of the restart (the step of 690 s counts the 5 s since it: the 25 s of growth before it
    # are in no reading) reads the GPU's power
    monkeypatch.setattr(overlap, "scrapes", _both_fresh)
    series = [{**one, "values": " ".join("stale" if "dcgm-exporter-old" in one["series"] and k * twins.STEP == MISSED_AT
                                         else v for k, v in enumerate(one["values"].split()))}
              for one in twins._series(overlap.END, 0, readings={twins.ENERGY: _energy_restarting})]
    series += targets_up(series)  # the old target's `up` 0 at its failed scrape
    watts = overlap.WATTS * 1000
    inside = (f"(({_panel('gpudash-all-metrics', twins.ENERGY[8:])}) >= {0.999 * watts!r}) "
              f"<= bool {1.001 * watts!r}")
    restart_step = MISSED_AT  # the recording's step (660, 690] holding the new copy's first reading after the restart
    instants = [t for t in range(PANEL_MINUTES[0] * 60, PANEL_MINUTES[-1] * 60 + 1, 10)
                if not t - 120 <= restart_step <= t]
    assert 830 in instants and 840 in instants
    promtool_test(rules, "panel_energy_restart_missed.yaml", [{
        "interval": f"{twins.STEP}s", "input_series": series, "promql_expr_test": [
            {"expr": inside, "eval_time": f"{t}s", "exp_samples": [{"labels": f'{{gpu="0", node="{overlap.NODE}"}}',
                                                                     "value": 1}]} for t in instants]}])


LEAD_FLIPS_AT = 600  # s: the step (600, 630] the old copy leads at; no copy is read in (630, 660]


def _lead_flips_across_an_empty_step(old_until: int, new_from: int) -> list[tuple[str, float, float]]:
    """Two exporters reading one GPU throughout, each collecting every 30 s on its own clock (the old one on the half
    minute, the new one 20 s past), the old one scraped 25 s past each half minute, the new one 26 s past: the new
    copy's reading is the fresher and leads. Its scrape due at 626 s ran at 619 s, before its collection (its reading
    the one of 590 s, the old copy's of 600 s the larger); both scrapes of (630, 660] failed (a node's network down
    for 30 s: the test writes their staleness markers)."""
    out = []
    for k in range(-2, overlap.END // 30):
        t = 30 * k
        if t == LEAD_FLIPS_AT + 30:
            continue
        new = t + (19 if t == LEAD_FLIPS_AT else 26)
        out += [("old", t + 25, t), ("new", new, math.floor((new - 20) / 30) * 30 + 20)]
    return sorted(out, key=lambda s: s[1])


def test_grafanas_energy_rate_counts_no_growth_twice_where_the_lead_changes_across_a_step_no_copy_read(
        rules, monkeypatch):
    """"Energy use rate" (all-metrics dashboard, per GPU) on _lead_flips_across_an_empty_step reads, at every minute,
    the GPU's readings merged (at each step the largest, as one series of the GPU's readings counts it:
    counted_rules): their growth since the window's baseline over the seconds between the two readings' scrapes
    (the collections' own blur, 168,067 mW at 11 minutes and 225,166 at 13). Before, the leading copy's own delta at
    690 s counted from the new copy's reading of 619 s (90 s of growth) where the old copy's larger reading of 625 s
    had counted 10 s of it at 630 s (no copy read in the step between to count above): 205,128 mW for the GPU's
    200,000 at 12 minutes, 229,299 at 13. Live, test_pod_lookback_energy_rename read 200,004.9 mW for 199,994.9 at
    a scene's first steps where neither of n6's copies was scraped in one second (a loaded machine)."""
    monkeypatch.setattr(twins, "STEP", 1)
    monkeypatch.setattr(overlap, "scrapes", _lead_flips_across_an_empty_step)
    failed = {"nvidia-dcgm-exporter-old": LEAD_FLIPS_AT + 55, "nvidia-dcgm-exporter-new": LEAD_FLIPS_AT + 56}
    series = [{**one, "values": " ".join("stale" if k == failed[pod] else v for k, v in enumerate(one["values"].split()))}
              for one in twins._series(overlap.END, 0,
                                       readings={twins.ENERGY: lambda taken: f"{overlap.energy_at(taken):.0f}"})
              for pod in failed if f'exporter_pod="{pod}"' in one["series"]]
    assert len(series) == 2, series
    series += targets_up(series)  # each target's `up` 0 at its failed scrape
    steps: dict[int, tuple[float, float]] = {}  # a 30 s step's end -> its largest reading (its scrape, the reading)
    for _, scraped, taken in _lead_flips_across_an_empty_step(overlap.END, 0):
        step = math.ceil(scraped / 30) * 30
        if steps.get(step, (0, -math.inf))[1] < overlap.energy_at(taken):
            steps[step] = (scraped, round(overlap.energy_at(taken)))
    _energy_rate_reads_merged(rules, "panel_energy_lead_flips.yaml", series, sorted(steps.values()))


def _energy_rate_reads_merged(rules, name: str, series: list[dict], merged: list[tuple[float, float]]) -> None:
    """"Energy use rate" (all-metrics dashboard, per GPU) over `series` reads, at every minute of PANEL_MINUTES, the
    growth of the `merged` readings ((scrape, reading), a step's largest) over its 2-minute range, within 0.01 %."""
    cases = []
    for minute in PANEL_MINUTES:
        truth = counter_growth(merged, minute * 60, 150)  # the 2-minute range holds 5 steps (Prometheus 2: closed)
        cases.append({"expr": f"(({_panel('gpudash-all-metrics', twins.ENERGY[8:])}) >= {truth * 0.9999!r}) "
                              f"<= bool {truth * 1.0001!r}", "eval_time": f"{minute}m",
                      "exp_samples": [{"labels": f'{{gpu="0", node="{overlap.NODE}"}}', "value": 1}]})
    promtool_test(rules, name, [{"interval": "1s", "input_series": series, "promql_expr_test": cases}])


def _leading_copy_misses_two_steps(old_until: int, new_from: int) -> list[tuple[str, float, float]]:
    """Two exporters reading one GPU throughout, each polling DCGM on its own clock: the old one every 60 s (at 50 s
    past each minute, dcgm-exporter -c 60000), scraped 25 s past each half minute, the new one every 30 s (at 15 s
    past each half minute), scraped 10 s past: the old copy's reading is the larger at every step and leads. Its
    scrapes at 985 and 1015 s failed (the test writes their staleness markers): the new copy's reading of 945 s, read
    alone in the step (960, 990], is below the old copy's reading of 950 s scraped at 955 s."""
    out = []
    for k in range(-2, overlap.END // 30):
        t = 30 * k
        out += [("old", t + 25, math.floor((t + 25 - 50) / 60) * 60 + 50), ("new", t + 10, t - 15)]
    return sorted(out, key=lambda s: s[1])


def test_grafanas_energy_rate_counts_no_growth_twice_where_only_a_lagging_copy_read_the_step_before(
        rules, monkeypatch):
    """"Energy use rate" (all-metrics dashboard, per GPU) on _leading_copy_misses_two_steps reads, at every minute,
    the GPU's readings merged (at each step the largest, where not below an earlier step's: one counter, counted by
    its largest readings) over the 2-minute range's 5 steps. At 1,020 s the new copy leads (the old one's reading is
    older than the step before); its growth above the step before's largest reading, its own of 945 s, counted the 5 s
    of growth up to the old copy's reading of 950 s, counted at 960 s, again, and the step the old lead missed
    counted 0 s (the chain of scrapes lost 15 s): 250,000, 274,074 and 224,242 mW for 214,815, 240,000 and 200,000 at
    17, 18 and 19 minutes (240,000 at the other minutes, the truth: the old copy's 60 s polls read as scraped).
    Counted above the largest of the copies' latest readings at every step, this story read the truth, but the
    rollout, reset and 60 s collection stories failed (a copy gone or behind a restart held its last reading for
    COUNTED_WITHIN). Now a copy whose target's `up` is 0 (its scrapes fail; a target gone has its `up` marked stale)
    holds its latest reading in the step before's: the new lead counts above the old one's 950 s reading."""
    monkeypatch.setattr(twins, "STEP", 1)
    monkeypatch.setattr(overlap, "scrapes", _leading_copy_misses_two_steps)
    failed = {985, 1015}
    series = [{**one, "values": " ".join("stale" if k in failed and "exporter-old" in one["series"] else v
                                         for k, v in enumerate(one["values"].split()))}
              for one in twins._series(overlap.END, 0,
                                       readings={twins.ENERGY: lambda taken: f"{overlap.energy_at(taken):.0f}"})]
    assert sum(one["values"].count("stale") for one in series) == 2, series
    series += targets_up(series)  # the old target's `up` 0 at its failed scrapes
    steps: dict[int, tuple[float, float]] = {}  # a 30 s step's end -> its largest reading (its scrape, the reading)
    for who, scraped, taken in _leading_copy_misses_two_steps(overlap.END, 0):
        step = math.ceil(scraped / 30) * 30
        if not (who == "old" and scraped in failed) and steps.get(step, (0, -math.inf))[1] < overlap.energy_at(taken):
            steps[step] = (scraped, round(overlap.energy_at(taken)))
    merged = [steps[step] for k, step in enumerate(sorted(steps))
              if all(steps[step][1] >= steps[earlier][1] for earlier in sorted(steps)[:k])]
    _energy_rate_reads_merged(rules, "panel_energy_lagging_alone.yaml", series, merged)


LATE_SCRAPE = (1169, 1176)  # s: the scrape due at 1,169 s ran 7 s late, after the collection of 1,172 s


def _late_scrape_then_a_failed_one(old_until: int, new_from: int) -> list[tuple[str, float, float]]:
    """One exporter, collecting every 30 s at 2 s past each half minute, scraped 29 s past (its reading 27 s old); its
    scrape due at 1,169 s ran at 1,176 s (a loaded Prometheus), reading the collection of 1,172 s, and its next one, at
    1,199 s, failed (the test writes its staleness marker): both in the recording's step (1170, 1200]."""
    out = []
    for k in range(-2, overlap.END // 30):
        scraped = 30 * k + 29
        scraped = LATE_SCRAPE[1] if scraped == LATE_SCRAPE[0] else scraped
        out.append(("new", scraped, math.floor((scraped - 2) / 30) * 30 + 2))
    return out


def test_grafanas_energy_rate_reads_the_gpus_power_after_a_late_scrape_then_a_failed_one_in_one_step(
        rules, monkeypatch):
    """"Energy use rate" (all-metrics dashboard, per GPU) on _late_scrape_then_a_failed_one, ONE exporter: the GPU's
    200,000 mW at every minute (its readings 30 s apart grow 30 s of 200 W; the reading of 1,172 s is read at no step:
    the failed scrape's staleness marker follows it within its step, which the recording honours). Where no copy read
    in the step before, the step at 1,230 s counted the growth above the copies' latest raw reading, 1,172 s's (30 s),
    over the seconds since the scrape its steps last read, 1,139 s's (90 s): the growth of 1,112 to 1,172 s counted at
    no step, 120,000 mW at 21 minutes and 133,333 at 22 (a random scene on promtool; since 494b059a). The latest
    readings the copies' steps read are that base now, as they are the seconds'."""
    monkeypatch.setattr(twins, "STEP", 1)
    monkeypatch.setattr(overlap, "scrapes", _late_scrape_then_a_failed_one)
    series = [{**one, "values": " ".join("stale" if k == 1199 else v for k, v in enumerate(one["values"].split()))}
              for one in twins._series(overlap.END, 0,
                                       readings={twins.ENERGY: lambda taken: f"{overlap.energy_at(taken):.0f}"})
              if "exporter-new" in one["series"]]
    assert len(series) == 1 and series[0]["values"].split()[1176] != "_", series
    series += targets_up(series)  # its `up` 0 at its failed scrape
    watts = overlap.WATTS * 1000
    _reads_within(rules, "panel_energy_late_then_failed.yaml", _panel("gpudash-all-metrics", twins.ENERGY[8:]), series,
                  0.999 * watts, 1.001 * watts)
