"""Every CloudWatch widget and alarm reads a (metric, dimension set) the agent publishes, in every setting.

For each combination of the settings that decide what is queried and what is published (alarms.per_pod,
agent.pipeline, agent.metric_selection, cloudwatch.dimensions / gpu_dimensions), with rules of cluster and
fleet scope, the mixed fleet (whole GPUs, GPUs split into MIG instances, a GPU no pod holds, time-slicing)
and kube-state-metrics are served through the model of the CloudWatch agent driven by the *generated* agent
config: every set a generated widget or alarm queries must come out of it. The build makes, and `gpudash cost`
counts, the alarms the settings call for, written out here.
"""

from __future__ import annotations

import itertools
import json
import shutil

import pytest

from generator.artifacts import build, notes
from generator.cost import Fleet, estimate, load_prices
from generator.output import encode
from generator.project import load_project
from generator.resources import bundled, default_counters
from tests.support import cloudwatch_eval, kube_state, mixed_fleet
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config, scrape_jobs
from tests.support.cloudwatch_widgets import widgets
from tests.support.dcgm_fleet import target_labels

AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
EXPORTER = {"namespace": "gpu-operator", "daemonset": "nvidia-dcgm-exporter"}
STATIC_PODS = ("team-a/infer-1", "team-c/mig-b")
FLEET_RULES = '''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("fleet-idle", "Pod idle anywhere", Condition(Query("DCGM_FI_DEV_GPU_UTIL", "avg", ("pod",)), "<", 5),
                scope="fleet")
    yield Alarm("fleet-hot", "GPU hot anywhere", Condition(Query("DCGM_FI_DEV_GPU_TEMP", "max", ("node", "gpu")), ">", 90),
                scope="fleet")
    yield Alarm("fleet-full", "Pod memory full anywhere", Condition(Query("DCGM_FI_DEV_FB_FREE", "min", ("pod",)), "<",
                1024), scope="fleet")
'''
SETTINGS = {
    "per_pod": ("", f"alarms:\n  per_pod: static\n  static_pods: [{', '.join(STATIC_PODS)}]\n"),
    "pipeline": ("", "agent:\n  pipeline: classic\n"),
    "selection": ("", "  metric_selection: all\n"),  # the default is used
    "dimensions": ("", "cloudwatch:\n  dimensions: [ClusterName, Service, namespace, pod]\n"
                       "  gpu_dimensions: [ClusterName, node, gpu, modelName]\n"),
}
COMBINATIONS = list(itertools.product(*SETTINGS.values()))
# The bundled rules whose fields the mixed fleet's counters file collects (no row-remap fields), in one cluster.
CLUSTER_RULES = ("gpu-data-missing-critical", "gpu-temp-critical-critical", "gpu-temp-high-warning",
                 "pcie-replays-warning", "xid-error-critical")
PER_POD_RULES = ("framebuffer-full-warning", "gpu-idle-warning")


def expected_alarms(static: bool, classic: bool = False) -> list[str]:
    """The alarm names the settings make. Fleet-scope rules stay GROUP BY alarms in either mode, and the idle
    rule's has its MIG second alarm; a per-pod rule is one GROUP BY alarm (the idle rule with its MIG second
    alarm), or with alarms.per_pod: static one alarm per listed pod (the idle rule's with its MIG second alarm per
    listed pod). The
    data-missing rule has a second alarm, per node (per GPU on agent.pipeline: classic, which drops up), and a third
    on the agent's own reads of kube-state-metrics. The GPU stopped reporting rule has its alarm per node on the OTel
    pipeline, none on classic (lint AL027)."""
    fleet = ["fleet-fleet-full-warning", "fleet-fleet-hot-warning", "fleet-fleet-idle-mig-warning",
             "fleet-fleet-idle-warning"]
    cluster = [f"gpu-cluster-{rule}" for rule in CLUSTER_RULES]
    cluster.append(f"gpu-cluster-gpu-data-missing-per-{'gpu' if classic else 'node'}-critical")
    cluster.append("gpu-cluster-gpu-data-missing-agent-critical")
    cluster += [] if classic else ["gpu-cluster-gpu-stopped-reporting-critical"]
    if static:
        pods = [f"gpu-cluster-{rule}-{pod.replace('/', '-')}" for rule in (*PER_POD_RULES, "gpu-idle-mig-warning")
                for pod in STATIC_PODS]
    else:
        pods = [f"gpu-cluster-{rule}" for rule in PER_POD_RULES] + ["gpu-cluster-gpu-idle-mig-warning"]
    return sorted(f"gpudash-{name}" for name in fleet + cluster + pods)


def _settings(per_pod: str, pipeline: str, selection: str, dimensions: str) -> str:
    agent = (pipeline or ("agent:\n" if selection else "")) + selection
    return per_pod + agent + dimensions + "definitions:\n  alarms: [alarms]\n"


def _name(combination) -> str:
    return "-".join(name if text else "default" for name, text in zip(SETTINGS, combination))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """The mixed fleet's fields, the bundled alarms and rules of fleet scope."""
    base = tmp_path_factory.mktemp("sets")
    wanted = set(mixed_fleet.FIELDS) | {"DCGM_FI_DRIVER_VERSION"}
    (base / "counters.csv").write_text("\n".join(
        line for line in default_counters().read_text().splitlines()
        if line and not line.startswith("#") and line.split(",")[0].strip() in wanted) + "\n")
    shutil.copytree(bundled("alarms"), base / "alarms")
    (base / "alarms" / "fleet.py").write_text(FLEET_RULES)
    return base


def _published(files) -> set[tuple[str, str, frozenset[str]]]:
    """(namespace, metric, dimension names) of every datapoint the agent sends from the fleet's scrapes."""
    config, job = agent_config(files[AGENT_FILE])
    ksm_job = scrape_jobs(files[AGENT_FILE])["gpudash-kube-state-metrics"]
    scrapes = [Scrape(float(t), mixed_fleet.payload(node, t), target_labels(job, node.name))
               for t in (0, 30, 60) for node in mixed_fleet.FLEET]
    scrapes += [kube_state.scrape(ksm_job, float(t), EXPORTER, 2, 2) for t in (0, 30, 60)]
    # and one failed scrape: the agent publishes a scrape that brought no DCGM sample per node
    scrapes.append(Scrape(90.0, "", target_labels(job, mixed_fleet.FLEET[0].name)))
    return {(p.namespace, p.metric, frozenset(name for name, _ in p.dimensions))
            for p in Agent(config, job, others=[ksm_job]).run(scrapes)}


def _queried(files) -> dict[tuple[str, str, frozenset[str]], str]:
    """{(namespace, metric, dimension names): where} of every query of the generated widgets and alarms."""
    found = {}

    def query(text: str, where: str) -> None:
        parsed = cloudwatch_eval.parse(text)
        found.setdefault((parsed.namespace, parsed.metric, frozenset(parsed.schema)), where)

    for path, properties in widgets(files):
        for line in properties["metrics"]:
            if line[-1].get("expression", "").startswith("SELECT"):
                query(line[-1]["expression"], f"{path} {properties['title']!r}")
            elif "expression" not in line[-1]:  # a metric line: PERIOD()'s, or a fleet mean's readings past 500
                found.setdefault((line[0], line[1], frozenset(line[2:-1:2])), f"{path} {properties['title']!r}")
    for item in json.loads(files["cloudwatch/alarms.json"])["alarms"]:
        request = item["Request"]
        if "MetricName" in request:  # a static per-pod alarm
            found.setdefault((request["Namespace"], request["MetricName"],
                              frozenset(d["Name"] for d in request["Dimensions"])), request["AlarmName"])
        for metric in request.get("Metrics", []):
            if "MetricStat" in metric:
                stat = metric["MetricStat"]["Metric"]
                found.setdefault((stat["Namespace"], stat["MetricName"],
                                  frozenset(d["Name"] for d in stat.get("Dimensions", []))), request["AlarmName"])
            elif metric["Expression"].startswith("SELECT"):
                query(metric["Expression"], request["AlarmName"])
    return found


@pytest.mark.parametrize("combination", COMBINATIONS, ids=_name)
def test_every_queried_set_is_published_by_the_agent(folder, combination, tmp_path):
    config = tmp_path / "gpudash.yaml"
    config.write_text(_settings(*combination))
    shutil.copytree(folder / "alarms", tmp_path / "alarms")
    project = load_project(config, folder / "counters.csv")
    files = encode(build(project, grafana=False))  # CloudWatch's widgets and alarms, the agents' ConfigMaps
    queried, published = _queried(files), _published(files)
    missing = {where: sorted(key[2]) for key, where in queried.items() if key not in published}
    assert not missing
    made = [item["Request"]["AlarmName"] for item in json.loads(files["cloudwatch/alarms.json"])["alarms"]]
    static = project.settings.alarms.per_pod == "static"
    assert sorted(made) == expected_alarms(static, project.settings.agent.pipeline == "classic")
    left_out = {note.message.split("'")[1] for note in notes(project) if note.rule == "AL012"}
    assert left_out == set()  # (a listed pod's idle alarm has its MIG second alarm, as the GROUP BY one)
    if project.settings.agent.metric_selection == "used":  # and nothing more is published (each pair is billed)
        dcgm = {key for key in published if key[1].startswith("DCGM_")}
        assert dcgm <= set(queried), sorted(dcgm - set(queried))
    # cost prices the alarms the settings make (one cluster, a pod per static alarm): 14 with GROUP BY alarms
    # per pod, 17 with a static alarm per listed pod (two per-pod rules x two pods, and the idle rule's MIG second
    # alarm per pod); and on the OTel pipeline the GPU stopped reporting rule's
    fleet = Fleet(clusters=1, pods=len(STATIC_PODS) if static else 10, churn=0)
    priced = estimate(project, fleet, load_prices(), project.settings.alarms.per_pod, ())
    assert priced["alarms"] == (17 if static else 14) + (project.settings.agent.pipeline == "otel")
