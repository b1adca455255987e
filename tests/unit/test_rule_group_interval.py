"""The generated rule group is evaluated at the interval the user's Prometheus sets (its global
evaluation_interval, kube-prometheus-stack's 30 s), not at one the group forces on every rule; and an alert reads a
recording rule's samples only as written at its own evaluation, never an earlier evaluation's (which a server that
just loaded the rules, or missed an evaluation, does not hold: tests/integration/test_recorded_periods_load.py,
test_recorded_periods_missed.py). The one recording read at earlier evaluations is read by itself: the GPUs a stopped
alarm judged stopped, kept past the hour (generator/stopped_gpus.py), over HOLD, which a restart keeps."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from generator.project import load_project
from generator.render.alarms import prometheus_rules, recorded_name
from generator.stopped_gpus import HOLD, OUTAGE_SECONDS


@pytest.fixture(scope="module")
def project():
    return load_project()


def _alarms(project, variant: bool):
    if not variant:
        return project.alarms
    # an M of N alarm reading each period more than once: its periods are recorded at each evaluation
    return tuple(replace(a, evaluation_periods=3, datapoints_to_alarm=2, missing_data="missing")
                 if a.id in ("gpu-temp-critical", "pcie-replays") else a for a in project.alarms)


@pytest.mark.parametrize("variant", [False, True], ids=["shipped", "recorded"])
def test_the_group_sets_no_interval_and_alerts_read_recordings_at_their_own_instant(project, variant):
    groups = [group for group in prometheus_rules(_alarms(project, variant), project.catalog, project.settings)["groups"]
              if group["rules"]]  # no counter panel: the counters' group is written empty (render/alarms)
    assert groups and all(set(group) == {"name", "rules"} for group in groups)  # the alerts' groups (size_bounded)
    recorded = {r["record"] for group in groups for r in group["rules"] if "record" in r}
    # the GPUs a stopped alarm judged stopped, recorded in every build (it reads what it wrote before: stopped_gpus)
    assert recorded - {recorded_name(a.id) for a in project.alarms} == {recorded_name("gpu-stopped-reporting", "lost")}
    assert bool(recorded - {recorded_name("gpu-stopped-reporting", "lost")}) == variant
    for group in groups:
        written: set[str] = set()  # the recordings written earlier in the same evaluation: those an alert may read
        for rule in group["rules"]:
            for name in recorded:
                reads = re.findall(re.escape(name) + r"(?:\{[^}]*\})?(\[[^]]*\](?: offset \S+)?)", rule["expr"])
                if name == rule.get("record"):  # a stopped alarm's: its own samples of the evaluations before
                    # (three reads: with a UUID, without one, see stopped_gpus._judged; each over HOLD; and past an
                    # outage, what it wrote up to Prometheus' last reading before: OUTAGE_SECONDS)
                    assert (set(reads), bool(reads)) == (({f"[{HOLD}]", f"[{OUTAGE_SECONDS}s]"}, True)
                                                         if name.endswith(":lost")
                                                         else (set(), False)), (name, reads)
                    continue
                assert not reads or name in written, (group["name"], rule.get("alert"), name)
                for read in reads:
                    assert read == "[1ms]", (rule.get("alert") or rule.get("record"), read)
            written.add(rule.get("record", ""))
