"""Settings are loaded once into typed, read-only sections; the code reads fields, not mapping keys."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

import generator
from generator.errors import InputError
from generator.settings import parse_settings

SECTIONS = ("grafana", "cloudwatch", "exporter", "scrape", "prometheus_stack", "agent", "kube_state_metrics", "alarms",
            "thresholds", "definitions")


def _settings(text: str = ""):
    return parse_settings(text, source="gpudash.yaml", base_dir=Path("."))


def test_every_section_is_a_frozen_dataclass_with_the_values_of_the_file():
    settings = _settings("alarms:\n  name_prefix: team-a\n  actions:\n    critical: [arn:aws:sns:us-east-1:123456789012:gpu-alerts]\n"
                         "grafana:\n  folder: {uid: gpus, title: GPUs}\ncloudwatch:\n  period: 60\n")
    for name in SECTIONS:
        section = getattr(settings, name)
        assert dataclasses.is_dataclass(section), name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(section, dataclasses.fields(section)[0].name, None)
    assert settings.alarms.name_prefix == "team-a"
    assert settings.alarms.actions.critical == ("arn:aws:sns:us-east-1:123456789012:gpu-alerts",) and settings.alarms.actions.warning == ()
    assert (settings.grafana.folder.uid, settings.grafana.folder.title) == ("gpus", "GPUs")
    assert settings.cloudwatch.period == 60 and settings.cloudwatch.dimensions == ("ClusterName", "namespace", "pod")
    assert settings.levels("gpu_temp_celsius").critical == 87.0 and settings.threshold("idle_minutes") == 30.0
    assert settings.thresholds.gpu_temp_celsius.warning == 80.0 and settings.thresholds.pcie_replays_per_minute == 10.0


def test_definitions_may_still_read_a_section_as_a_mapping():
    """dashboards/*.py and alarms/*.py get the settings through ctx; the mapping form they were written in works."""
    settings = _settings()
    assert settings.alarms["framebuffer_free_mib"] == settings.alarms.framebuffer_free_mib
    assert settings.grafana["folder"]["title"] == "GPU monitoring"
    assert settings.scrape.get("interval") == "30s" and settings.scrape.get("nothing", 1) == 1
    with pytest.raises(KeyError):
        settings.alarms["no_such_key"]
    assert dict(settings.grafana.folder) == {"uid": "gpudash", "title": "GPU monitoring"}


def test_the_code_reads_typed_fields_not_mapping_keys():
    package = Path(generator.__file__).parent
    mapping_read = re.compile(r"settings\.(?:%s)\s*(?:\[|\.get\()" % "|".join(SECTIONS))
    found = [f"{path.relative_to(package)}:{number}: {line.strip()}"
             for path in sorted(package.rglob("*.py"))
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if mapping_read.search(line) or re.search(r"settings\.raw\[", line)]
    assert not found, "read the typed field instead:\n" + "\n".join(found)


def test_a_period_that_is_not_a_whole_number_of_scrape_intervals_is_refused_at_the_line_that_sets_it(tmp_path):
    from generator.errors import InputError

    clusters = "clusters:\n  - {name: a, region: us-east-1}\n"
    with pytest.raises(InputError) as given:  # period written: its line
        parse_settings(clusters + "scrape:\n  interval: 7s\ncloudwatch:\n  period: 60\n", "s.yaml", tmp_path)
    assert "cloudwatch.period 60 s is not a whole number of scrape intervals (scrape.interval 7 s)" in str(given.value)
    assert given.value.where == "s.yaml:6"
    with pytest.raises(InputError) as default:  # the schema's default period (300): the interval's line
        parse_settings(clusters + "scrape:\n  interval: 7s\n", "s.yaml", tmp_path)
    assert "cloudwatch.period 300 s" in str(default.value) and default.value.where == "s.yaml:4"
    settings = parse_settings(clusters + "scrape:\n  interval: 1m\n", "s.yaml", tmp_path)
    assert settings.scrape.seconds == 60
    assert parse_settings(clusters + "cloudwatch:\n  source: container-insights\nscrape:\n  interval: 7s\n",
                          "s.yaml", tmp_path).scrape.seconds == 7


@pytest.mark.parametrize("value", ["ContainerInsights/Prometheus", "GPU/DCGM", "a", "x:y", "G" * 255, "G" * 256, "",
                                   "AWS/GPU", "aws/gpu", "AWS", ":GPU", "   ", " GPU", "GPU\tDCGM", "GPU\x7f",
                                   "GPU/Über", "GPU\n", "#GPU ~"])
def test_the_namespace_pattern_for_editors_says_what_the_message_says(value):
    """The schema's pattern and length (what an editor checks) refuse exactly the namespaces generate refuses."""
    from generator.settings import _anchored, _schema, namespace_problem

    node = _schema()["properties"]["cloudwatch"]["properties"]["namespace"]
    by_schema = node["minLength"] <= len(value) <= node["maxLength"] and \
        re.search(_anchored(node["pattern"]), value) is not None
    assert by_schema is (namespace_problem(value) is None)


def test_workload_labels_mixing_the_old_and_new_exporter_names_are_refused():
    """An exporter run with --use-old-namespace writes pod_name, pod_namespace and container_name, one without it
    pod, namespace and container: `labels.pod: pod_name` beside the default namespace and container labels reads a
    label no series carries (the agent's job would rename pod_name alone). Refused, naming the keys; the three old
    names, the three new and the operator's exported_* stay accepted."""
    with pytest.raises(InputError) as refused:
        parse_settings("labels:\n  pod: pod_name\n", "<test>", Path("."))
    assert str(refused.value).startswith(
        "<test>:2: labels.pod: pod_name is the name an exporter run with --use-old-namespace writes, but "
        "labels.namespace: namespace, labels.container: container are the names an exporter run without it writes")
    assert refused.value.hint == ("with --use-old-namespace write labels.namespace: pod_namespace, labels.container: "
                                  "container_name; without it, labels.pod: pod")
    for text in ("labels:\n  pod: pod_name\n  namespace: pod_namespace\n  container: container_name\n",
                 "labels:\n  pod: exported_pod\n  namespace: exported_namespace\n  container: exported_container\n", ""):
        assert parse_settings(text, "<test>", Path(".")).labels.pod in ("pod_name", "exported_pod", "pod")
