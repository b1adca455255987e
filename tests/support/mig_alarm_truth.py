"""The mixed fleet with no pod moving between scrapes (FLEET) and its nodes of whole GPUs (WHOLE), the truth an
alarm's aggregation of GPU utilization states per group (alarm_truth), and alarms and settings of two clusters, one of
MIG GPUs (per_cluster_alarms, two_cluster_settings)."""

from __future__ import annotations

from dataclasses import replace
from statistics import mean

from tests.support import mixed_fleet


UTIL = "DCGM_FI_DEV_GPU_UTIL"
# the mixed fleet with its time-sliced GPU named under one pod at every scrape: a pod named every other scrape reads
# half its GPU's sum on CloudWatch (a matter of time-slicing, not MIG: docs/cloudwatch.md, "A GPU's counters when pods
# share it")
FLEET = tuple(replace(node, moves=0) for node in mixed_fleet.FLEET)
HOW = {"count": len, "sum": sum, "avg": mean, "max": max, "min": min}
TESTED = {">": lambda value, level: value > level, "<": lambda value, level: value < level}


def group_keys(by: tuple[str, ...]) -> tuple[str, ...]:
    """The dimensions a group of `by` is told apart by (a pod with its namespace)."""
    return ("namespace", *by) if "pod" in by else by


def alarm_truth(aggregation: str, by: tuple[str, ...], fleet=FLEET) -> dict[tuple, float]:
    """{group: value} as the rule reads it: per group and GPU one value (a MIG GPU's, the mean engine activity x 100 of
    the instances the group holds on it), then the aggregation over the group's GPUs."""
    keys = group_keys(by)
    groups: dict[tuple, list[float]] = {}
    for node in fleet:
        for gpu in node.gpus:
            held: dict[tuple, list] = {}
            for instance in gpu.instances:
                for pod in (node.labelled(instance) if {"pod", "namespace"} & set(keys) else (None,)):
                    facts = {"node": node.name, "gpu": str(gpu.index), "pod": pod and pod[1],
                             "namespace": pod and pod[0]}
                    held.setdefault(tuple((key, facts[key]) for key in keys), []).append(instance)
            for key, instances in held.items():
                value = 1.0 if aggregation == "count" else \
                    mean(i.engine * 100 for i in instances) if gpu.mig else gpu.util
                groups.setdefault(key, []).append(value)
    return {key: HOW[aggregation](values) for key, values in groups.items()}


# The fleet without MIG GPUs (its MIG node left out): every GPU reports GPU utilization, as exporter.mig: none says
WHOLE = tuple(node for node in FLEET if not any(gpu.mig for gpu in node.gpus))


def two_cluster_settings(pipeline: str, fleet_none: bool) -> str:
    """Two clusters, `whole` of whole GPUs and `split` with MIG GPUs, said either way: the fleet's exporter.mig: none
    with the split cluster's own `some`, or the whole cluster's own none."""
    head = f"agent:\n  pipeline: {pipeline}\n" + ("exporter:\n  mig: none\n" if fleet_none else "")
    whole = "" if fleet_none else "    exporter:\n      mig: none\n"
    split = "    exporter:\n      mig: some\n" if fleet_none else ""
    return (head + "clusters:\n  - name: whole\n    region: us-east-1\n" + whole
            + "  - name: split\n    region: us-east-1\n" + split)


def per_cluster_alarms(*cases: tuple[str, str, tuple, str, float, str]) -> str:
    return "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
        f"    yield Alarm({rule!r}, 'X', Condition(Query({UTIL!r}, {aggregation!r}, {by!r}), {comparison!r}, "
        f"{threshold!r}), scope={scope!r}, description='x', runbook='y')\n"
        for rule, aggregation, by, comparison, threshold, scope in cases)
