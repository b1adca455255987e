"""test_exporter_overlap_long_and_unnamed.py's rollouts of a counter, as a scraping Prometheus stores them: three nodes
of 3 GPUs, each old exporter scraped at 0 s of each interval, each new one from ROLLOUT, 11 s into each interval,
numbering the GPUs apart (C, A, B for A, B, C at indexes 0, 1, 2). n1 and n3 with a `node` label (n1's exporters
overlapping 8 intervals, n3's 4), n2 through a scrape path without one, its old exporter writing its own pod's name
into `Hostname`, its new one the node into `hostname` (4 intervals). Both exporters read one device counter per GPU."""

from __future__ import annotations

from typing import Callable

from tests.support.prometheus_server import STALE

SPAN, STEP, ROLLOUT, NEW_PHASE = 3600, 30, 1800, 11
WATTS = {"A": 300, "B": 500, "C": 700, "D": 200, "E": 400, "F": 600, "G": 100, "H": 800, "I": 900}
EXPORTER_POD = "nvidia-dcgm-exporter-x7k2p"
# (node label, host label and value, address, phase, GPUs at 0, 1, 2, first scrape, last scrape)
EXPORTERS = (({"node": "n1"}, ("Hostname", "n1"), "10.0.1.5", 0, "ABC", 0, ROLLOUT + 7 * STEP),
             ({"node": "n1"}, ("Hostname", "n1"), "10.0.1.6", NEW_PHASE, "CAB", ROLLOUT, SPAN),
             ({}, ("Hostname", EXPORTER_POD), "10.0.2.5", 0, "DEF", 0, ROLLOUT + 3 * STEP),
             ({}, ("hostname", "n2"), "10.0.2.6", NEW_PHASE, "FDE", ROLLOUT, SPAN),
             ({"node": "n3"}, ("Hostname", "n3"), "10.0.3.5", 0, "GHI", 0, ROLLOUT + 3 * STEP),
             ({"node": "n3"}, ("Hostname", "n3"), "10.0.3.6", NEW_PHASE, "IGH", ROLLOUT, SPAN))


def _uuid(name: str) -> str:
    """The UUID of the GPU `name` as NVIDIA writes it (nvidia-smi -L)."""
    return f"GPU-{ord(name):08x}-5d3e-0a2f-91c4-7e20b6{ord(name):06x}"


# the same exporters, the new ones numbering the GPUs as the old ones do
ALIKE = tuple((node, host, address, phase, EXPORTERS[k - 1][4] if k % 2 else order, first, last)
              for k, (node, host, address, phase, order, first, last) in enumerate(EXPORTERS))


def pod_of(name: str) -> str:
    """The workload pod (in namespace `ml`) holding the GPU `name` when counters_scraped writes pods: train-<name>."""
    return f"train-{name.lower()}"


def counters_scraped(start: int, counters: dict[str, float], exporters: tuple = EXPORTERS,
                     unnamed: frozenset[str] = frozenset(), pods: bool = False, lag: int = 0,
                     gauges: dict[str, float | Callable[[int, int], float]] | None = None,
                     holder: Callable[[str], str] = pod_of) -> dict[tuple, list[tuple[float, str]]]:
    """Each exporter's series of `counters` ({metric: growth a second per watt of the GPU}) from its first scrape to
    its last, then a staleness marker for each: each GPU's counter reads its growth times (seconds from `start` +
    100,000), whichever exporter reads it. `exporters`: EXPORTERS, or ALIKE (or any of their shape); those whose address
    is in `unnamed` write no UUID. `pods`: each GPU's series name the pod holding it (namespace `ml`, `holder`: pod_of, or
one naming a pod for several GPUs). `lag`:
    a new exporter's (one first scraped after 0 s) served value was read by DCGM `lag` seconds before its scrape (the
    exporter collects on its own clock: a new copy's reading older than the old copy's of the same moment). `gauges`
    ({metric: reading a watt, or a function of the GPU's watts and the reading's seconds from `start`}): each GPU's gauge
    reads its watts times that (or the function's value), whichever exporter reads it."""
    series: dict[tuple, list[tuple[float, str]]] = {}
    for node, host, address, phase, order, first, last in exporters:
        before: set[tuple] = set()
        late = lag if first > 0 else 0
        for t in range(0, SPAN + 1, STEP):
            at, now = start + t + phase, set()
            for index, name in enumerate(order if first <= t <= last else ()):
                for metric, per_watt in {**counters, **(gauges or {})}.items():
                    labels = tuple(sorted({"__name__": metric, "device": f"nvidia{index}", "modelName": "NVIDIA L4",
                                           "instance": f"{address}:9400", "job": "gpu-metrics", "gpu": str(index),
                                           **({} if address in unnamed else {"UUID": _uuid(name)}),
                                           **({"namespace": "ml", "pod": holder(name)} if pods else {}),
                                           host[0]: host[1], **node}.items()))
                    grown = 1 if gauges and metric in gauges else at - late - start + 100_000
                    value = per_watt(WATTS[name], at - late - start) if callable(per_watt) \
                        else WATTS[name] * per_watt * grown
                    series.setdefault(labels, []).append((at, str(value)))
                    now.add(labels)
            for labels in before - now:
                series[labels].append((at, STALE))
            before = now
    return series


FLEET_COUNTER_ALARMS = """\
from generator.model import Alarm, Condition, Query

ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"


def alarms(ctx):
    yield Alarm("fleet-energy-1m", "Fleet energy", Condition(Query(ENERGY, "sum", (), as_increase=True), ">", 1),
                severity="warning", scope="fleet", period_seconds=60, description="d.", runbook="r.")
    yield Alarm("fleet-energy-5m", "Fleet energy", Condition(Query(ENERGY, "sum", (), as_increase=True), ">", 1),
                severity="warning", scope="fleet", period_seconds=300, description="d.", runbook="r.")
    yield Alarm("fleet-energy-rate", "Fleet energy rate", Condition(Query(ENERGY, "sum", ()), ">", 1),
                severity="warning", scope="fleet", period_seconds=300, description="d.", runbook="r.")
"""


def fleet_counter_rules(folder) -> dict[str, str]:
    """{alarm id: the Prometheus expression of its period's value} of FLEET_COUNTER_ALARMS (the energy counter's 1- and
    5-minute increase and 5-minute rate summed over the fleet) in a project made in `folder`."""
    from generator.render.alarms import period_value
    from tests.support.projects import defined_project

    project = defined_project(folder, alarms=FLEET_COUNTER_ALARMS)
    return {alarm.id: period_value(alarm, project.catalog, project.settings) for alarm in project.alarms}
