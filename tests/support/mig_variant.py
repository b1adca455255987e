"""The mixed fleet with what tells a MIG-blind CloudWatch apart (VARIANT), a project of its fields, its datapoints
through the build's agent model, and the contributors its alarms hold in ALARM."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from generator.project import load_project
from generator.resources import default_counters
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels
from tests.support.mixed_fleet import FIELDS, FLEET, Instance


STEP, START, END = 30, 0, 2100  # seven 5-minute periods; the agent saw two scrapes before START (one per pod the
# moving time-sliced GPU names in turn: each pod's counter has its first reading before START)
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"


def _variant() -> tuple:
    """The fleet with what tells a MIG-blind CloudWatch apart: the MIG instance no pod held is held by a pod
    that leaves it idle (1 % engine activity), and a MIG GPU's PCIe link replays 30 times per 5 minutes,
    below the alarm's 50 (a sum over its two instances' repeated deltas would read 60)."""
    nodes = []
    for node in FLEET:
        if node.name == "gpu-node-mig":
            first, second = node.gpus
            idle = Instance(id="2", profile="3g.20gb", pod=("team-c", "mig-idle"), fb_used=1000, fb_free=19000,
                            engine=0.01)
            node = replace(node, gpus=(replace(first, replays_per_s=0.1),
                                       replace(second, instances=(second.instances[0], idle))))
        nodes.append(node)
    return tuple(nodes)


VARIANT = _variant()


def variant_project(folder: Path, settings: str = "", dashboards: dict[str, str] | None = None):
    wanted = set(FIELDS) | {"DCGM_FI_DRIVER_VERSION"}
    csv = folder / "counters.csv"
    csv.write_text("\n".join(line for line in default_counters().read_text().splitlines()
                             if line and not line.startswith("#") and line.split(",")[0].strip() in wanted) + "\n")
    config = folder / "gpudash.yaml"
    config.write_text(settings)
    if dashboards:
        (folder / "dashboards").mkdir()
        for name, text in dashboards.items():
            (folder / "dashboards" / name).write_text(text)
        with config.open("a") as handle:
            handle.write("\ndefinitions:\n  dashboards: [dashboards]\n")
    return load_project(config, csv)


def variant_datapoints(files, fleet=VARIANT, only=None):
    """`fleet`'s datapoints through the build's agent model (`only`: those the widgets or alarms given read)."""
    config, job = agent_config(files[AGENT_FILE])
    scrapes = [Scrape(k * STEP, mixed_fleet.payload(node, k * STEP, STEP), target_labels(job, node.name))
               for k in range(-2, END // STEP) for node in fleet]
    return Agent(config, job, only=None if only is None else cloudwatch_eval.reads(*only)).run(scrapes)


def firing_contributors(requests: list[dict], datapoints, end=END) -> set[str]:
    """Every contributor in ALARM over the rule's CloudWatch alarms, named as the Prometheus rule names it (an alarm on
    one metric, a listed pod's with alarms.per_pod: static, by the dimensions it names)."""
    fired = set()
    for request in requests:
        named = {d["Name"]: d["Value"] for d in request.get("Dimensions", [])}
        for key, state in cloudwatch_eval.alarm(request, datapoints, end).items():
            dims = {**named, **dict(key)}
            if state == "ALARM":
                fired.add(f"Pod {dims['namespace']}/{dims['pod']}" if "pod" in dims
                          else f"{dims['node']} GPU {dims['gpu']}" if "gpu" in dims else "")
    return fired
