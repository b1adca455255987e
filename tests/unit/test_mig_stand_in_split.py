"""A MIG stand-in alarm (graphics engine activity for the GPU utilization MIG does not report) is made only where
it judges the same objects as the rule's first alarm: a GPU's or a pod's value. A count or a sum over GPUs, or a mean
over a node's, split in two alarms had each judge part of the GPUs against the whole threshold (11 GPUs read as 9
whole and 2 MIG, neither under "fewer than 11"), and the count's threshold was divided by the stand-in's factor as a
share (`count by node > 3` compared 0.3, firing on a MIG node's 4 instances x 10 scrapes). Such an alarm has no
MIG half: on the OTel pipeline it reads a GPU's reading once, which holds a MIG GPU's stand-in
(tests/unit/test_alarm_mig_stand_in_once.py); on agent.pipeline: classic a note (lint AL012) says its CloudWatch form
does not see MIG GPUs where it can only miss them, and generate refuses it where its whole GPUs alone can fire where
the rule does not (tests/unit/test_mig_half_alarms.py)."""

from __future__ import annotations

import pytest

from generator.artifacts import build
from tests.support.projects import defined_project

ALARMS = """
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    util = "DCGM_FI_DEV_GPU_UTIL"
    return [Alarm("node-count", "Busy nodes", Condition(Query(util, "count", ("node",)), ">", 3)),
            Alarm("fleet-count", "GPUs reporting", Condition(Query(util, "count", ()), "<", 11)),
            Alarm("node-sum", "Node load", Condition(Query(util, "sum", ("node",)), ">", 500)),
            Alarm("node-mean", "Node mean", Condition(Query(util, "avg", ("node",)), "<", 5)),
            Alarm("node-all-idle", "Node idle", Condition(Query(util, "max", ("node",)), "<", 5)),
            Alarm("node-any-busy", "Node busy", Condition(Query(util, "max", ("node",)), ">", 95)),
            Alarm("gpu-busy", "GPU busy", Condition(Query(util, "avg", ("node", "gpu")), ">", 90))]
"""


# on agent.pipeline: classic (nothing reads a GPU once) the whole GPUs' alarm alone can fire where the rule does not
# for these: fewer GPUs than 11 counting 9, a node's mean or its idlest part read without its MIG GPUs
HALF_ALARMS = {"fleet-count", "node-mean", "node-all-idle"}


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_only_an_alarm_of_one_gpu_s_value_gets_a_mig_half(tmp_path, pipeline):
    from generator.errors import InputError

    kept = ALARMS if pipeline == "otel" else "\n".join(
        line for line in ALARMS.splitlines() if not any(f'"{rule}"' in line for rule in HALF_ALARMS))
    project = defined_project(tmp_path, f"agent:\n  pipeline: {pipeline}\n", alarms=kept)
    artifacts = build(project)
    halves = {a.request["AlarmName"].removeprefix("gpudash-gpu-cluster-"): a.request for a in artifacts.alarms
              if "-mig-" in a.request["AlarmName"]}
    # on the OTel pipeline a GPU's mean too reads the GPU's reading once (a MIG GPU's its instances' mean): no half
    assert set(halves) == (set() if pipeline == "otel" else {"gpu-busy-mig-warning"})
    if pipeline == "classic":
        busy = halves["gpu-busy-mig-warning"]
        assert busy["Threshold"] == 0.9 and busy["ComparisonOperator"] == "GreaterThanThreshold"
        assert "DCGM_FI_PROF_GR_ENGINE_ACTIVE above 0.9" in busy["AlarmDescription"]
    noted = {note.message.split("'")[1] for note in artifacts.notes if note.rule == "AL012"}
    # a node's max or min has no MIG half either: a MIG GPU's stand-in is its instances' mean, held apart; on the OTel
    # pipeline the alarm reads every GPU once, MIG GPUs by their stand-in: nothing to note; on classic the whole GPUs'
    # alarm is made where it can only miss a MIG GPU (a count, a sum or a largest above a level), noted
    assert noted == (set() if pipeline == "otel" else {"node-count", "node-sum", "node-any-busy"})
    if pipeline == "classic":
        for rule in sorted(HALF_ALARMS):
            line = next(line for line in ALARMS.splitlines() if f'"{rule}"' in line).strip().rstrip(",]")
            folder = tmp_path / rule
            folder.mkdir()
            one = defined_project(folder, "agent:\n  pipeline: classic\n", alarms=(
                "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
                f"    util = 'DCGM_FI_DEV_GPU_UTIL'\n    return [{line.removeprefix('return [')}]\n"))
            with pytest.raises(InputError) as refused:
                build(one)
            assert f"alarm {rule!r}" in str(refused.value) and "fire where its Prometheus rule does not" in \
                str(refused.value) and "agent.pipeline: otel" in refused.value.hint
