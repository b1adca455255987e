"""Grafana's counter rate panels (a rate of the counter's recordings, promql.counted_rules) where two exporter copies of
one GPU hold the same reading: two DaemonSets' exporters on a node (one still labelling the node Hostname=<its pod>,
the other hostname=<node>) scraped at the same instants, each reading DCGM's value of the same collection, each
missing scrapes of its own (a staleness marker in the scrape's place).

Truth: the link replays 0.1 per second throughout (DCGM collecting every 30 s); each copy alone reads 0.1 at every
minute. The recordings pick the leading copy (the largest latest reading): where the copies' readings are equal,
step_increase and step_seconds picked one each with topk, whose pick among equals is arbitrary, and so could record
one copy's delta over the other copy's seconds (3 replays over 60 s, 6 over 30 s): the same data read 0.071 to 0.14
per second at some minutes, other minutes in another run."""

from __future__ import annotations

import functools
import math

import yaml

from tests.integration import test_cloudwatch_rollout_twins as twins
from tests.integration import test_counter_copies_hostile as hostile
from tests.integration.test_counter_copies_hostile import PANEL_MINUTES, _panel, _reads_within
from tests.support import exporter_overlap as overlap
from tests.support.promtool_rules import promtool_test, rules, stories_own  # noqa: F401 (a fixture)

RATE = 0.1  # replays per second
# each story's missed scrapes, by copy: the k-th scrape (k = 0, 1, ... from 20 s) is missed where k % n in the set
MISSED = ({"a": (3, {0}), "b": (2, {1})}, {"a": (4, {0, 1}), "b": (3, {2})}, {"a": (5, {1, 3}), "b": (2, {0})},
          {"a": (7, {0, 2, 5}), "b": (4, {1, 2})})
COPIES = {"a": ("nvidia-dcgm-exporter-a", "10.0.1.10", "5d8f7c9b6d", "Hostname", "nvidia-dcgm-exporter-a"),
          "b": ("nvidia-dcgm-exporter-b", "10.0.1.11", "7c9d6f5b48", "hostname", overlap.NODE)}


def _series(story: int) -> list[dict]:
    """Story `story`'s two copies, one sample per scrape at 10 s steps: scraped at 20 and 50 s past each minute, the
    reading taken 23 s past each half minute (the same collection for both copies)."""
    files = overlap.overlap_build("otel")
    (job,) = [j for j in yaml.safe_load(files["prometheus/additional-scrape-configs.yaml"])["prometheus"][
        "prometheusSpec"]["additionalScrapeConfigs"] if j["job_name"] == "dcgm-exporter"]
    series = []
    for who, (pod, address, revision, host, named) in COPIES.items():
        every, missed = MISSED[story][who]
        values = ["_"] * (overlap.END // twins.STEP + 1)
        for k, scraped in enumerate(range(20, overlap.END, 30)):
            taken = math.floor((scraped - 23) / 30) * 30 + 23
            values[scraped // twins.STEP] = "stale" if k % every in missed else str(math.floor(RATE * taken))
        labels = {**overlap.revision_target(job, pod, address, revision), "gpu": "0", "UUID": "GPU-0", "device": "nvidia0",
                  "modelName": "NVIDIA A10G", host: named, "pod": "train-0", "namespace": "ml", "container": "main"}
        text = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        series.append({"series": stories_own(f"{twins.REPLAYS}{{{text}}}", story), "values": " ".join(values)})
    return series


def _reads_the_rate() -> str:
    """The health dashboard's "PCIe replays" (every variable at All): 1 for a line reading RATE, 0 above, none below."""
    return f"(({_panel('gpudash-health', 'PCIe replays')}) >= {RATE!r}) <= bool {RATE!r}"


def test_grafanas_replays_rate_reads_the_links_rate_where_two_copies_hold_the_same_reading(rules):
    # every story in one promtool run (each its own namespace, node and UUID); a line off 0.1 reads 0 (or none)
    lines = [{"labels": stories_own(f'{{gpu="0", node="{overlap.NODE}"}}', k), "value": 1}
             for k in range(len(MISSED))]
    promtool_test(rules, "tied_copies.yaml", [{
        "interval": f"{twins.STEP}s", "input_series": [one for k in range(len(MISSED)) for one in _series(k)],
        "promql_expr_test": [{"expr": _reads_the_rate(), "eval_time": f"{m}m", "exp_samples": lines}
                             for m in PANEL_MINUTES]}])


def test_each_copy_alone_reads_the_links_rate(rules):
    # the stories' truth as one exporter reads it: no copy's pattern of missed scrapes alone moves the rate off 0.1
    alone = [[one] for k in range(len(MISSED)) for one in _series(k)]
    series = [{**one, "series": stories_own(one["series"], j)} for j, (one,) in enumerate(alone)]
    lines = [{"labels": stories_own(stories_own(f'{{gpu="0", node="{overlap.NODE}"}}', j // 2), j), "value": 1}
             for j in range(len(alone))]
    promtool_test(rules, "tied_copies_alone.yaml", [{
        "interval": f"{twins.STEP}s", "input_series": series,
        "promql_expr_test": [{"expr": _reads_the_rate(), "eval_time": f"{m}m", "exp_samples": lines}
                             for m in PANEL_MINUTES]}])


def _one_of_two_tied_copies_stamped_late(old_until: int, new_from: int) -> list[tuple[str, float, float]]:
    """Two exporters serving one nv-hostengine's collections (every 30 s, at 3 s past each half minute: their
    readings tie), scraped at 10 and 20 s past each half minute, the first one's scrape due at 640 s stamped 5 s late
    (a loaded Prometheus starting it late, still inside the recording's step (630, 660])."""
    def collection(t: float) -> float:
        return math.floor((t - 3) / 30) * 30 + 3

    old = [t + 10 + 5 * (t + 10 == 640) for t in range(0, overlap.END, 30)]
    return sorted([*(("old", t, collection(t)) for t in old),
                   *(("new", t + 20, collection(t + 20)) for t in range(0, overlap.END, 30))], key=lambda s: s[1])


def test_grafanas_energy_rate_reads_the_gpus_power_where_tied_copies_scrape_apart_and_one_is_stamped_late(
        rules, monkeypatch):
    # "Energy use rate" with two exporters whose readings tie (one hostengine's collections), one scrape of the
    # first stamped 5 s late: 200,000 mW at every minute (the collections are 30 s apart, as the other copy's scrapes
    # are). The seconds recording took the most either copy grew in at each step since its own scrape before: the
    # late copy's 35 s at 660 s, the other's 30 s at 690 s (the late copy's 25 s), 65 s for 60 s of collections:
    # 0.968 of it at 11 to 13 minutes. Each tied copy's seconds now count from the latest scrape of the reading before
    # (at 660 s the other copy's of 620 s), the same for both
    monkeypatch.setattr(overlap, "scrapes", _one_of_two_tied_copies_stamped_late)
    monkeypatch.setattr(twins, "STEP", 1)
    series = twins._series(overlap.END, 0, readings={twins.ENERGY: lambda taken: f"{overlap.energy_at(taken):.0f}"})
    _reads_within(rules, "panel_energy_tied_stamped_late.yaml", _panel("gpudash-all-metrics", twins.ENERGY[8:]),
                  series, 0.999 * overlap.WATTS * 1000, 1.001 * overlap.WATTS * 1000)



Copies = dict[str, tuple[int, int, int, tuple[int, ...]]]


def _hostengine_copies(copies: Copies) -> list[dict]:
    """Exporters reading one nv-hostengine's samples of the GPU's energy, each its own pod (a DaemonSet of its own), by
    name: (its scrapes' seconds past each half minute, how often it polls the hostengine (dcgm-exporter -c) and at how
    many seconds past (its reading the hostengine's sample of that instant), the seconds its scrapes failed at (a
    staleness marker in the sample's place)); one sample per scrape at 5 s steps (twins.STEP, set by the caller)."""
    files = overlap.overlap_build("otel")
    (job,) = [j for j in yaml.safe_load(files["prometheus/additional-scrape-configs.yaml"])["prometheus"][
        "prometheusSpec"]["additionalScrapeConfigs"] if j["job_name"] == "dcgm-exporter"]
    step, series = twins.STEP, []
    assert step == 5
    for k, (name, (phase, every, polled, failed)) in enumerate(copies.items()):
        values = ["_"] * (overlap.END // step + 1)
        for scraped in range(phase, overlap.END, 30):
            taken = math.floor((scraped - polled) / every) * every + polled
            values[scraped // step] = "stale" if scraped in failed else f"{overlap.energy_at(taken):.0f}"
        pod = f"nvidia-dcgm-exporter-{name}"
        labels = {**overlap.revision_target(job, pod, f"10.0.1.{20 + k}", f"7c9d6f5b{k}0"), "gpu": "0",
                  "UUID": "GPU-0", "device": "nvidia0", "modelName": "NVIDIA A10G", "hostname": overlap.NODE,
                  "pod": "train-0", "namespace": "ml", "container": "main"}
        text = ",".join(f'{key}="{v}"' for key, v in sorted(labels.items()))
        series.append({"series": f"{twins.ENERGY}{{{text}}}", "values": " ".join(values)})
    return series


def _reads_the_power(rules, monkeypatch, name: str, copies: Copies) -> None:
    """Pass when "Energy use rate" reads the GPU's 200,000 mW within 0.1 % at every minute of PANEL_MINUTES, read
    from _hostengine_copies(copies)."""
    monkeypatch.setattr(twins, "STEP", 5)
    series = _hostengine_copies(copies)
    _reads_within(rules, name, _panel("gpudash-all-metrics", twins.ENERGY[8:]), series,
                  0.999 * overlap.WATTS * 1000, 1.001 * overlap.WATTS * 1000)


# Stories of copies reading one hostengine, read in one promtool run (_reads_the_power_together), by name
POWER_STORIES: dict[str, Copies] = {
    "tied-after-both-missed": {"a": (20, 90, 10, (710,)), "b": (25, 30, 10, (715,))},
    "third-copy-late": {"a": (20, 30, 10, (680, 710)), "b": (25, 30, 10, (715,)), "c": (15, 90, 10, ())},
    "longest-above-lagging": {"a": (20, 30, 10, (680, 710)), "b": (25, 30, 10, (715,)), "c": (15, 90, 30, ())},
}


def _reads_the_power_together(rules, monkeypatch, name: str) -> None:
    """Pass as _reads_the_power(POWER_STORIES[name]) would, every story of POWER_STORIES read in one promtool run
    (hostile._read_together: each story under its own namespace, node and GPU UUID, the panel and its recordings
    joining no story's series with another's)."""
    monkeypatch.setattr(twins, "STEP", 5)
    watts = overlap.WATTS * 1000
    stories = {story: functools.partial(_hostengine_copies, copies) for story, copies in POWER_STORIES.items()}
    hostile._read_together(rules, "tied_power", stories, name, _panel("gpudash-all-metrics", twins.ENERGY[8:]),
                           0.999 * watts, 1.001 * watts)


def test_grafanas_energy_rate_reads_the_gpus_power_where_tied_copies_return_from_a_scrape_both_missed(rules, monkeypatch):
    # two exporters reading the hostengine's samples of 10 s past each half minute, one polling it every 90 s (its reading one or two samples behind at two scrapes of
    # three), the other every 30 s, both scrapes of the step (690, 720] failed (a network blip); at the step after,
    # their readings tie (the 730 s sample) and both copies' own steps are equally long: 200,000 mW at every minute.
    # The larger of their deltas counted: the lagging copy's, from its reading of the 640 s sample, where the other
    # copy's reading of the 670 s one had counted up to it at the step before the miss: 90 s of growth over 60 s, 1.2
    # of the GPU's power at 12m30s to 14m30s. The smaller counts now (none of the growth counted twice)
    _reads_the_power_together(rules, monkeypatch, "tied-after-both-missed")


def test_grafanas_energy_rate_reads_the_gpus_power_where_a_third_copy_scraped_the_tied_reading_late(rules, monkeypatch):
    # three exporters reading the hostengine's samples of 10 s past each half minute: a and b polling it every 30 s (a's scrapes at 680 and 710 s failed, b's at 715 s),
    # c every 90 s (its reading of the 640 s sample scraped at 705 s, the step before the one where a and b tie, the
    # 730 s sample). a's own step is the longest (from its reading of the 640 s sample at 650 s): 90 s of growth,
    # over its 90 s. Counted from c's late scrape of that sample (35 s; the seconds recording took b's 60 s), the step
    # read 1.2 of the GPU's power at 12m30s to 14m30s (4e89c27a). 200,000 mW at every minute
    _reads_the_power_together(rules, monkeypatch, "third-copy-late")


def test_grafanas_energy_rate_reads_the_gpus_power_where_the_longest_copy_counts_above_a_lagging_third_copy(
        rules, monkeypatch):
    # the third-copy story with a hostengine sampling every 10 s, c's poll at 30 s past each 90 s: c's reading of the
    # 660 s sample (scraped at 705 s) is the step before's largest, above a's own reading before (the 640 s sample)
    # and below b's of the step before that (the 670 s sample, counted at 690 s). a's own step was the longest, and
    # the delta recording took its growth above c's reading (70 s of it) where the seconds recording took b's 60 s
    # (the most of the copies'): 1.067 of the GPU's power at 12m30s to 14m. Both recordings now read the copies of
    # the smallest delta (b: 60 s of growth since its own 670 s sample, over its own 60 s)
    _reads_the_power_together(rules, monkeypatch, "longest-above-lagging")


def test_grafanas_energy_rate_reads_the_gpus_power_where_tied_copies_of_different_lags_miss_a_scrape_in_turn(
        rules, monkeypatch):
    # two exporters reading one hostengine's samples of 10 s past each half minute, scraped at 15 and 20 s past (their
    # readings tie, 5 and 10 s after the sample), b's scrape at 680 s failed. At 690 s a alone read the 670 s sample:
    # 30 s of growth, counted from the latest scrape of the 640 s sample (b's, 650 s) where a's own was at 645 s:
    # over 25 s. At 720 s b counted from a's 675 s scrape over 35 s: the two steps added up (60 s over 60 s), but a
    # window holding one of them read 1.034 or 0.968 of the power (11m30s, 14m). Each copy whose reading before is
    # the base now counts on its own clock (a: 30 s at 690 s), and at 720 s a (its own clock) is chosen over b
    # (counted from a's scrape). Truth: 200,000 mW at every minute
    _reads_the_power(rules, monkeypatch, "panel_energy_tied_lags_in_turn.yaml",
                     {"a": (15, 30, 10, ()), "b": (20, 30, 10, (680,))})


def test_grafanas_energy_rate_reads_the_gpus_power_where_a_copy_polling_every_other_sample_ties_every_other_step(
        rules, monkeypatch):
    # two exporters reading one hostengine's samples of 1 s past each half minute for as long as both run: a polls it
    # every 30 s and is scraped 5 s past each half minute (its readings 4 s old: alone it reads the power), b polls
    # every 60 s (dcgm-exporter -c 60000) and is scraped 20 s past: at the step holding a minute's first half their
    # readings tie (the sample of 1 s past the minute), at the other b's reading lags a's by a sample and adds
    # nothing. The GPU's readings merged are a's: 200,000 mW at every minute (b alone reads 160,000 and 240,000 in
    # turn, its 60 s polls' own blur). The tie's step counted 30 s of growth (above a's reading before) over the most
    # of the two copies' seconds: b's, from a's scrape before to b's later scrape of the tied sample (45 s); the next
    # step a's growth from that late scrape (15 s): the two steps added up, but a 2-minute window holds three of one
    # and two of the other: 222,222 mW at every minute (181,818 at every half minute), as long as b ran beside a.
    # Found by random two-copy scenes through the rules on promtool; no failed scrape involved. Now a, whose reading
    # before is the base, counts on its own clock at both steps (30 s each)
    _reads_the_power(rules, monkeypatch, "panel_energy_tied_every_other_step.yaml",
                     {"a": (5, 30, 1, ()), "b": (20, 60, 1, ())})


def test_grafanas_energy_rate_counts_back_the_seconds_a_missed_scrape_moved_to_another_copys_clock(
        rules, monkeypatch):
    # three exporters reading one hostengine's samples of 5 s past each half minute, scraped 0, 10 and 25 s after
    # each (at 5, 15 and 0 s past): their readings tie. The one 25 s behind, the latest scrape of each sample, misses
    # its scrape at 750 s: that step counts from its 720 s scrape of the 695 s sample on the next copy's clock (15 s
    # for 30 s of growth), and the step after, where it is back, from that copy's 735 s scrape of the 725 s sample
    # (45 s): the chain of latest scrapes added up at 13 and 14 minutes, whose windows hold both steps, but the
    # 15-minute window starts on the 780 s step, holding one of the two: 0.909 of the power. Choosing for both
    # recordings the copies whose own reading before is the highest (cheaper than the smallest delta) counted 30 s at
    # 780 s (the copies that had read the 725 s sample): 1.111 of the power at 12m30s to 14m. Each step now counts on
    # the clock of a copy whose reading before is the base (30 s each): 200,000 mW at every minute
    _reads_the_power(rules, monkeypatch, "panel_energy_chain_counts_back.yaml",
                     {"a": (5, 30, 5, ()), "b": (15, 30, 5, ()), "c": (0, 30, 5, (750,))})
