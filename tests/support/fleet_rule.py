"""A definitions folder of the bundled alarms and one fleet-wide rule (scope='fleet'), and the utilization level
its alarm judges."""

from __future__ import annotations

from generator.resources import bundled


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
