"""A definitions folder of the bundled alarms and one fleet-wide rule (scope='fleet'), and the utilization level
its alarm judges; fleet rules of gauges (grouped by nothing or by cluster) and their period values."""

from __future__ import annotations

from generator.render.alarms import period_value
from generator.resources import bundled
from tests.support.projects import defined_project


def fleet_rule_definitions(folder, threshold):
    """A definitions folder: the bundled alarms and a scope='fleet' rule (its alarm's name holds no cluster)."""
    folder.mkdir(exist_ok=True)
    bundled_alarms = (bundled("alarms") / "gpu_alarms.py").read_text()
    rule = ('        Alarm("fleet-idle", "GPUs idle across the fleet",\n'
            f'              Condition(Query("DCGM_FI_DEV_GPU_UTIL", "avg", POD), "<", {threshold}),\n'
            '              severity="warning", scope="fleet", missing_data="notBreaching",\n'
            '              description="A pod holds an idle GPU somewhere in the fleet.", runbook="Ask its owner."),\n'
            '    ]\n    # An alarm on a field')
    assert bundled_alarms.count("    ]\n    # An alarm on a field") == 1
    (folder / "gpu_alarms.py").write_text(bundled_alarms.replace("    ]\n    # An alarm on a field", rule))
    return folder


def judged_level(alarm) -> float:
    """The utilization level the fleet rule judges: its alarm reads the unused share (100 less each reading) above
    100 less the level (cloudwatch_query.unused_plan)."""
    unused = '"share")' in alarm["Metrics"][0]["Expression"]
    return 100 - alarm["Threshold"] if unused else alarm["Threshold"]


# fleet rules of gauges: a count of GPUs, a total and a mean, grouped by nothing or by cluster, over 1 and 5 minutes
FLEET_GAUGE_ALARMS = """\
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("fleet-power", "Fleet power", Condition(Query("DCGM_FI_DEV_POWER_USAGE", "sum", ()), ">", 5000),
                severity="warning", scope="fleet", period_seconds=60, description="The fleet draws over 5 kW.",
                runbook="Shed load.")
    yield Alarm("fleet-gpus", "Fleet GPUs", Condition(Query("DCGM_FI_DEV_GPU_TEMP", "count", ()), ">", 9),
                severity="warning", scope="fleet", period_seconds=60, description="More GPUs than bought.",
                runbook="Count them.")
    yield Alarm("fleet-mean", "Fleet mean power", Condition(Query("DCGM_FI_DEV_POWER_USAGE", "avg", ()), "<", 450),
                severity="warning", scope="fleet", period_seconds=60, description="The fleet idles.",
                runbook="Find work.")
    yield Alarm("cluster-power-5m", "Cluster power", Condition(Query("DCGM_FI_DEV_POWER_USAGE", "sum", ("cluster",)),
                ">", 5000), severity="warning", scope="fleet", period_seconds=300,
                description="A cluster draws over 5 kW.", runbook="Shed load.")
    yield Alarm("fleet-gpus-5m", "Fleet GPUs", Condition(Query("DCGM_FI_DEV_GPU_TEMP", "count", ()), ">", 9),
                severity="warning", scope="fleet", period_seconds=300, description="More GPUs than bought.",
                runbook="Count them.")
"""


def fleet_period_values(folder) -> dict[str, str]:
    """Each of FLEET_GAUGE_ALARMS' rules' latest period value (period_value: its statistic, as the rule evaluates it),
    by alarm id, in a project of the settings' defaults (a Prometheus of one cluster)."""
    project = defined_project(folder, alarms=FLEET_GAUGE_ALARMS)
    return {alarm.id: period_value(alarm, project.catalog, project.settings) for alarm in project.alarms}


def wrong_reads(prometheus, zero: int, rules: dict[str, str], afters, truth: dict[str, list[float]]) -> dict:
    """{seconds after `zero`: each rule's values} at each of `afters` where a rule named in `truth` (an instant query
    of its period value, its values rounded to 0.01 and sorted) reads other than `truth` names."""
    wrong = {}
    for after in afters:
        read = {name: sorted(round(float(sample["value"][1]), 2)
                             for sample in prometheus.query(rules[name], at=zero + after)) for name in truth}
        if read != truth:
            wrong[after] = read
    return wrong
