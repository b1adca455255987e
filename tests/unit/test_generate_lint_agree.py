"""What generate writes passes its own lint: for the bundled definitions under every combination of the settings
that change what CloudWatch and Prometheus read (the agent's pipeline, exporter.virtual_gpus, alarms.per_pod, the workload labels' renames, more per-GPU dimensions, the source and the agent's selection; every build holds
the MIG views gpudash derives from the per-GPU set),
either lint finds no error in the build generate would write, or generate refuses the settings (one message).
A build that generate writes and lint then fails reaches a user only at lint, and its artifacts show a wrong
number (or lint refuses a valid configuration)."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import pytest

from generator.errors import GpudashError
from generator.lint.runner import lint
from generator.limits import checked_build
from generator.project import load_project
from generator.resources import bundled

AXES = {
    "pipeline": ("otel", "classic"),
    "virtual_gpus": (False, True),
    "per_pod": ("group_by", "static"),
    "labels": ("plain", "exported"),
}
# Settings crossed with the first combination of AXES only (each its own kind of build; the product would cost
# many seconds more): the Container Insights add-on, the agent publishing only what is queried, more per-GPU
# dimensions, the workload labels of an exporter run with --use-old-namespace (pod_name, ...; the GPU's `uuid`).
SINGLES = ({"source": "container-insights"}, {"selection": "used"}, {"gpu_dimensions": True}, {"labels": "old"},
           {"labels": "old", "pipeline": "classic", "per_pod": "static"},
           {"source": "container-insights", "pipeline": "classic", "virtual_gpus": True},
           {"selection": "used", "pipeline": "classic", "virtual_gpus": True, "gpu_dimensions": True})


def _settings(pipeline="otel", virtual_gpus=False, gpu_dimensions=False, per_pod="group_by", labels="plain",
              source="prometheus-emf", selection="all") -> str:
    text = (f"definitions:\n  dashboards: [dashboards]\n  alarms: [alarms]\n"
            f"agent:\n  pipeline: {pipeline}\n  metric_selection: {selection}\n"
            f"alarms:\n  per_pod: {per_pod}\n")
    if per_pod == "static":
        text += "  static_pods: [team-a/train-0]\n"
    text += f"cloudwatch:\n  source: {source}\n"
    if gpu_dimensions:
        text += "  gpu_dimensions: [ClusterName, node, gpu, UUID, modelName]\n"
    if virtual_gpus:
        text += "exporter:\n  virtual_gpus: true\n"
    if labels == "exported":
        text += "labels:\n  pod: exported_pod\n  namespace: exported_namespace\n  container: exported_container\n"
    if labels == "old":
        text += "labels:\n  pod: pod_name\n  namespace: pod_namespace\n  container: container_name\n"
    return text


COMBINATIONS = [dict(zip(AXES, values)) for values in itertools.product(*AXES.values())] + list(SINGLES)


@pytest.fixture(scope="module")
def project_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("examples")
    for kind in ("dashboards", "alarms"):
        shutil.copytree(bundled(kind), folder / kind)
    return folder


def _verdict(folder, settings: str) -> tuple[str, list[str]]:
    """("refused", [message]) when generate refuses the settings, else ("written", [lint errors of its build])."""
    (folder / "gpudash.yaml").write_text(settings)
    try:
        project = load_project(folder / "gpudash.yaml")
        artifacts = checked_build(project)
    except GpudashError as error:
        return "refused", [str(error)]
    return "written", [f"{f.rule} {f.where}" for f in lint(project, artifacts) if f.severity == "error"]


def test_every_build_generate_writes_passes_its_own_lint(project_folder):
    disagreements = {}
    refused = []
    for combination in COMBINATIONS:
        verdict, details = _verdict(project_folder, _settings(**combination))
        if verdict == "written" and details:
            disagreements[str(combination)] = details
        elif verdict == "refused":
            refused.append(combination)
    assert disagreements == {}
    # the classic agent with per-process copies is refused with the bundled definitions (their per-GPU utilization
    # widgets cannot be true there; the Container Insights add-on reads none of the agent's series); every other
    # combination, of AXES and SINGLES, is written
    assert [c for c in refused if not (c.get("pipeline") == "classic" and c.get("virtual_gpus")
                                       and c.get("source") != "container-insights")] == []


def test_the_classic_agent_with_virtual_gpus_is_refused_where_the_setting_is_written(project_folder):
    """One message at agent.pipeline's line: what (the widgets and alarms that would show a wrong number), why,
    and what to do; the same settings with definitions reading utilization per pod only are written."""
    verdict, (message,) = _verdict(project_folder, _settings(pipeline="classic", virtual_gpus=True))
    assert verdict == "refused"
    assert "gpudash.yaml:5" in message and "agent.pipeline: classic with exporter.virtual_gpus: true" in message
    assert "cloudwatch/dashboards/gpudash-gpu-cluster-overview.json widget 3 (Average GPU utilization)" in message
    assert "gpudash-gpu-cluster-pcie-replays-warning" in message and "set agent.pipeline: otel" in message
    # per-pod views are true there: definitions with only those, and a PCIe replay alarm on any increase, are written
    (project_folder / "by_pod").mkdir()
    shutil.copy(project_folder / "dashboards" / "gpu_by_pod.py", project_folder / "by_pod")
    settings = _settings(pipeline="classic", virtual_gpus=True).replace("[dashboards]", "[by_pod]")
    assert _verdict(project_folder, settings + "thresholds:\n  pcie_replays_per_minute: 0\n") == ("written", [])


def test_the_example_settings_build_what_lint_passes_with_and_without_virtual_gpus(project_folder):
    """The settings of the golden builds (tests/golden/builds/*.yaml: the agent's JSON path, the Container Insights
    add-on, three clusters with renamed workload labels), as given and with exporter.virtual_gpus: true."""
    examples = sorted((Path(__file__).parent.parent / "golden" / "builds").glob("*.yaml"))
    assert examples
    for example in examples:
        text = "definitions:\n  dashboards: [dashboards]\n  alarms: [alarms]\n" + example.read_text()
        virtual = text.replace("\nexporter:\n", "\nexporter:\n  virtual_gpus: true\n") if "\nexporter:\n" in text \
            else text + "exporter:\n  virtual_gpus: true\n"
        for settings in (text, virtual):
            verdict, details = _verdict(project_folder, settings)
            assert verdict == "refused" or details == [], (example.name, settings, details)
            # refused only where the classic agent meets per-process copies (its per-GPU utilization widgets)
            classic = "pipeline: classic" in settings and settings is virtual
            assert verdict == ("refused" if classic else "written"), (example.name, settings, details)
