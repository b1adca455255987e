"""Dimension settings that would merge clusters, lose GPUs or pods, repeat a dimension or pass the agent's
10-dimension limit are refused at their settings line (generate and lint, exit 2). Each refusal guards a
real loss: forced past the refusal, the generated agent config run through the model of the agent
(tests/support/cloudwatch_agent.py, both pipelines) on the mixed fleet publishes the set without the GPUs
or pods the views read from it.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from generator.artifacts import build
from generator.errors import InputError
from generator.output import encode
from generator.project import load_project
from generator.settings import Cluster, parse_settings
from tests.support import mixed_fleet
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config, declared_sets
from tests.support.dcgm_fleet import target_labels

POD_SET, GPU_SET = ("ClusterName", "namespace", "pod"), ("ClusterName", "node", "gpu")
EVERY_GPU = {(node.name, str(gpu.index)) for node in mixed_fleet.FLEET for gpu in node.gpus}
WHOLE_GPU_PODS = {pod for node in mixed_fleet.FLEET for gpu in node.gpus if not gpu.mig
                  for instance in gpu.instances for pod in instance.pods()}
NINE = (*GPU_SET, "UUID", "device", "modelName", "Namespace", "Service", "job")


def _refusal(text: str) -> InputError:
    with pytest.raises(InputError) as caught:
        parse_settings(text, source="gpudash.yaml", base_dir=".")
    return caught.value


def _published(pipeline: str, clusters=None, alarms: bool = True, **cloudwatch) -> dict[str, list]:
    """What each cluster's agent publishes from the mixed fleet (three scrapes), with cloudwatch settings
    forced past the settings check (`alarms` False: the bundled dashboards' sets alone)."""
    project = load_project()
    project = project if alarms else replace(project, alarms=())
    settings = project.settings
    settings = replace(settings, cloudwatch=replace(settings.cloudwatch, **cloudwatch),
                       agent=replace(settings.agent, pipeline=pipeline), clusters=clusters or settings.clusters)
    files = encode(build(replace(project, settings=settings), grafana=False))  # the agents' ConfigMaps alone
    published = {}
    for cluster in settings.clusters:
        config, job = agent_config(files[f"k8s/cwagent-prometheus-config-{cluster.name}.yaml"])
        published[cluster.name] = Agent(config, job).run(
            [Scrape(k * 30, mixed_fleet.payload(node, k * 30), target_labels(job, node.name))
             for k in range(3) for node in mixed_fleet.FLEET])
    return published


def _under(datapoints, dims) -> list:
    return [d for d in datapoints if set(d.dims()) == set(dims)]


def _gpus(datapoints, dims) -> set[tuple[str, str]]:
    return {(d.dims()["node"], d.dims()["gpu"]) for d in _under(datapoints, dims)}


PIPELINES = pytest.mark.parametrize("pipeline", ["otel", "classic"])


@PIPELINES
def test_a_pod_set_without_the_cluster_merges_clusters(pipeline):
    error = _refusal("clusters:\n  - {name: a, region: us-east-1}\n  - {name: b, region: us-east-1}\n"
                     "cloudwatch:\n  dimensions: [namespace, pod]\n")
    assert error.where == "gpudash.yaml:5" and "lacks ClusterName" in error.what
    assert "write dimensions: [ClusterName, namespace, pod]" in error.hint
    # forced: the two clusters' agents publish one metric per pod, which every query reads as one
    clusters = (Cluster("a", "us-east-1"), Cluster("b", "us-east-1"))
    published = _published(pipeline, clusters, dimensions=("namespace", "pod"))
    series = [{d.dimensions for d in _under(published[name], ("namespace", "pod"))} for name in ("a", "b")]
    assert series[0] and series[0] == series[1]


@PIPELINES
@pytest.mark.parametrize("extra, says", [
    ("pod", "only a GPU that a pod holds carries it"),
    ("Hostname", "the exporter writes Hostname up to its current releases and hostname after them"),
])
def test_a_gpu_set_with_a_label_some_gpus_lack_loses_them(pipeline, extra, says):
    error = _refusal(f"cloudwatch:\n  gpu_dimensions:\n    - ClusterName\n    - node\n    - gpu\n    - {extra}\n")
    assert error.where == "gpudash.yaml:6" and says in error.what
    # forced: the GPUs without the label publish nothing under the set the fleet and health views read
    forced = (*GPU_SET, extra)
    (datapoints,) = _published(pipeline, gpu_dimensions=forced).values()
    seen = _gpus(datapoints, forced)
    assert seen and seen < EVERY_GPU
    assert _gpus(datapoints, GPU_SET) == set()  # the set the views read is the forced one: nothing else
    if extra == "pod":  # the GPU no pod holds on node a
        assert ("gpu-node-a", "1") not in seen
    else:  # nodes whose exporter writes hostname, or no host name at all
        assert {node for node, _ in EVERY_GPU - seen} == {
            node.name for node in mixed_fleet.FLEET if node.spelling != "Hostname"}


@PIPELINES
def test_a_pod_set_naming_the_mig_profile_loses_whole_gpu_pods(pipeline):
    error = _refusal("cloudwatch:\n  dimensions: [ClusterName, namespace, pod, GPU_I_PROFILE]\n")
    assert error.where == "gpudash.yaml:2" and "would name it twice" in error.what
    forced = (*POD_SET, "GPU_I_PROFILE")
    # forced past the refusal, the idle alarm's per-pod set names GPU_I_PROFILE (MIG instances only), where the agent's
    # job drops GPU utilization: generate refuses the alarm, which would read nothing (3a32da84); the dashboards' sets
    # show the loss
    with pytest.raises(InputError, match="DCGM does not measure DCGM_FI_DEV_GPU_UTIL on a MIG instance"):
        _published(pipeline, dimensions=forced)
    (datapoints,) = _published(pipeline, alarms=False, dimensions=forced).values()
    pods = {(d.dims()["namespace"], d.dims()["pod"]) for d in _under(datapoints, forced)}
    assert pods and not pods & WHOLE_GPU_PODS


@PIPELINES
def test_a_set_past_ten_dimensions_is_dropped_by_the_agent(pipeline):
    """Nine per-GPU names: the per-MIG-instance set gpudash derives has eleven, which the agent drops; eight
    are the most that keep it."""
    error = _refusal(f"agent: {{pipeline: classic}}\ncloudwatch:\n  gpu_dimensions: [{', '.join(NINE)}]\n")
    assert error.where == "gpudash.yaml:3" and "11 dimensions" in error.what, error
    assert "name at most 8 dimensions in cloudwatch.gpu_dimensions" in error.hint
    for names, kept in ((NINE, False), (NINE[:-1], True)):  # job: on every sample of the JSON path only
        (datapoints,) = _published("classic" if "job" in names else pipeline, gpu_dimensions=names).values()
        assert bool(_under(datapoints, (*names, "GPU_I_ID", "GPU_I_PROFILE"))) is kept
        assert _gpus(datapoints, names) == EVERY_GPU


EIGHT = (*POD_SET, "container", "UUID", "device", "modelName", "Service")
ONE_ALARM = """
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    return [Alarm("gpu-temp-critical", "GPU temperature critical",
                  Condition(Query("DCGM_FI_DEV_GPU_TEMP", "max", ("node", "gpu")), ">", 90))]
"""


def test_eight_per_pod_names_are_refused_only_by_a_build_with_an_alarm_per_mig_instance(project_dir, cli):
    """Eight per-pod names: the idle alarm's set of each MIG instance a pod holds adds gpu, GPU_I_ID and
    GPU_I_PROFILE (eleven names, which the agent drops): such a build is refused at the setting's line, naming the
    alarm. A build without such an alarm publishes no set past ten: built and lint-clean."""
    config = project_dir(f"cloudwatch:\n  dimensions: [{', '.join(EIGHT)}]\n")
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(config.parent / "refused"))
    assert code == 2 and f"error: {config}:2: alarm 'gpu-idle' (" in stderr and "11 dimensions" in stderr, stderr
    assert "fix: name at most 7 dimensions in cloudwatch.dimensions" in stderr
    (config.parent / "alarms").mkdir()
    (config.parent / "alarms" / "heat.py").write_text(ONE_ALARM)
    config.write_text(config.read_text() + "definitions:\n  alarms: [alarms]\n")
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(config.parent / "built"))
    assert code == 0, stderr
    code, stdout, stderr = cli("lint", "--config", str(config), "--from", str(config.parent / "built"))
    assert code == 0 and "0 errors" in stdout, stdout + stderr


@PIPELINES
def test_seven_per_pod_names_keep_the_idle_alarms_set_per_mig_instance(pipeline):
    """Seven per-pod names and the idle alarm: the agent publishes the set per pod, GPU and MIG instance (ten)."""
    (datapoints,) = _published(pipeline, dimensions=EIGHT[:-1]).values()
    assert _under(datapoints, (*EIGHT[:-1], "gpu", "GPU_I_ID", "GPU_I_PROFILE"))


def test_the_agent_model_reads_dimension_sets_as_awsemf_does():
    """metric_declaration.go: a set of more than 10 names as written is dropped (repeats count), a repeated
    name is kept once, the same set in another order once."""
    eleven = [*"abcdefghij", "a"]
    assert declared_sets([eleven, ["b", "a", "b"], ["a", "b"], list("abcdefghij")]) == [("a", "b"), tuple("abcdefghij")]


@pytest.mark.parametrize("text, line, says", [
    ("cloudwatch:\n  gpu_dimensions: [ClusterName, gpu]\n", 2, "lacks node"),
    ("cloudwatch:\n  gpu_dimensions: [ClusterName, node, gpu, GPU_I_ID]\n", 2, "names GPU_I_ID"),
    ("cloudwatch:\n  gpu_dimensions: [ClusterName, node, gpu, pci_bus_id]\n", 2, "older exporter releases"),
    ("cloudwatch:\n  dimensions: [ClusterName, namespace, pod, job]\n", 2, "agent.pipeline otel moves it"),
    ("cloudwatch:\n  gpu_dimensions: [ClusterName, node, gpu, exporter_pod]\n", 2,
     "changes when the exporter pod is replaced"),
    ("cloudwatch:\n  source: container-insights\n  dimensions: [ClusterName, namespace, pod, container]\n", 3,
     "not read with cloudwatch.source: container-insights"),
    ("alarms: {per_pod: static, static_pods: [ml/a]}\ncloudwatch:\n  dimensions: [ClusterName, namespace, pod, gpu]\n",
     3, "alarms.per_pod: static"),
    ("cloudwatch:\n  dimensions: [ClusterName, namespace, pod, node, gpu]\n", 2,
     "cloudwatch.dimensions names node, gpu: with them it holds every name of the per-GPU set"),
])
def test_other_sets_the_agent_cannot_publish_as_read_are_refused(text, line, says):
    error = _refusal(text)
    assert error.where == f"gpudash.yaml:{line}" and says in error.what, error


@pytest.mark.parametrize("text", [
    # eight names with GPU_I_ID: the idle alarm's set per pod and MIG instance adds gpu and GPU_I_PROFILE (ten)
    "cloudwatch:\n  dimensions: [ClusterName, namespace, pod, container, UUID, device, modelName, GPU_I_ID]\n",
    # nine, the most the MIG per-pod set (GPU_I_PROFILE added) allows, where no alarm judges each MIG instance
    "cloudwatch:\n  dimensions: [ClusterName, namespace, pod, container, UUID, device, modelName, Service, node]\n"
    "definitions:\n  alarms: []\n",
    "agent: {pipeline: classic}\ncloudwatch:\n  dimensions: [ClusterName, Namespace, Service, job, namespace, pod]\n",
    "agent: {pipeline: classic}\ncloudwatch:\n  gpu_dimensions: [ClusterName, node, gpu, UUID, device, modelName, "
    "Namespace, job]\n",
    "cloudwatch:\n  dimensions: [ClusterName, namespace, pod, node, gpu]\n  gpu_dimensions: [ClusterName, node, gpu, "
    "modelName]\n",  # a pod's copy of a counter lacks modelName: it stays out of the per-GPU sets
    "agent: {pipeline: classic}\ncloudwatch:\n  dimensions: [ClusterName, namespace, pod, node, gpu]\n",
])
def test_sets_of_labels_every_series_carries_are_accepted(text, project_dir):
    """Accepted, and built: the agent config publishes them (lint's AG001/AG002 hold in test_feed_configs)."""
    files = encode(build(load_project(project_dir(text))))
    assert "k8s/cwagent-prometheus-config-gpu-cluster.yaml" in files


def test_lint_refuses_the_settings_as_generate_does(project_dir, cli):
    config = project_dir("cloudwatch:\n  gpu_dimensions: [ClusterName, node, gpu, hostname]\n")
    for command in ("generate", "lint"):
        code, _, stderr = cli(command, "--config", str(config), *(("--out", str(config.parent / "b"))
                                                                   if command == "generate" else ()))
        assert code == 2 and f"error: {config}:2: cloudwatch.gpu_dimensions (the per-GPU set) names 'hostname'" \
            in stderr, stderr


def test_the_labels_every_series_carries_are_on_every_series_of_the_real_payloads(reference):
    """The exporter's real payloads (one with pod labels, the exporter's own test expectation) carry the
    labels the settings accept on every series; the node's spelling and pci_bus_id differ between them."""
    from generator.series_labels import EVERY_GPU
    from tests.support.cloudwatch_agent import exposition

    seen = []
    for name in ("blog-a10g-k8s.prom", "dcgm-exporter-server-test.prom"):
        series = [set(labels) for _, _, labels, _ in exposition((reference / "exporter" / name).read_text())]
        assert series and all(set(EVERY_GPU) <= labels for labels in series), name
        seen.append(set.union(*series))
    assert {"Hostname"} <= seen[0] - seen[1] and {"hostname", "pci_bus_id"} <= seen[1] - seen[0]


def test_the_derived_sets_add_what_the_check_counts():
    """What the settings check counts as added (derived_sets.added_to) is what the published sets add to the two
    settings: the per-pod set GPU_I_PROFILE, the per-GPU set GPU_I_ID and GPU_I_PROFILE."""
    from generator.catalog import MIG_INSTANCE_LABEL, MIG_PROFILE_LABEL
    from generator.cloudwatch_query import dimension_sets, pod_total_kind
    from generator.derived_sets import added_to

    DERIVED = {key: added_to(key) for key in ("dimensions", "gpu_dimensions")}
    assert DERIVED == {"dimensions": (MIG_PROFILE_LABEL,), "gpu_dimensions": (MIG_INSTANCE_LABEL, MIG_PROFILE_LABEL)}

    settings = load_project().settings
    # (the OTel pipeline's sets of a pod's totals name the cluster, the pod and a mark, whatever the settings)
    derived = [s for s in dimension_sets(settings) if s not in (list(POD_SET), list(GPU_SET)) and not pod_total_kind(s)]
    for key, base in (("dimensions", POD_SET), ("gpu_dimensions", GPU_SET)):
        grown = [s for s in derived if s[:len(base)] == list(base)]
        assert max(len(s) for s in grown) == len(base) + len(DERIVED[key])
        assert {n for s in grown for n in s[len(base):]} == set(DERIVED[key])
