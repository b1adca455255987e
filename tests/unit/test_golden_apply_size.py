"""Every golden build's dashboard ConfigMaps and PrometheusRules fit what client-side `kubectl apply` takes (GF011's count, 262,144 bytes of
annotations): the golden builds are the generated examples (test_golden's byte_identical), so a change that grows an
example's dashboard past the limit fails here by name, not only as a lint warning nobody reads. 378d1347 (the moved-pod
filter of the per-pod panels) grew the multi-region example's by-pod ConfigMap 253,792 -> 272,350 bytes: refused by the
API server until the panels' PromQL was packed (promql_text.packed: plain strings single-quoted, a double quote being
four bytes of the annotation; no space after a comma): 255,279 with the idle-GPU filter beside it (docs/lint-rules.md
GF011). The rules were one PrometheusRule of every group until each group became an object of its own, cut at half the
limit (render.alarms.size_bounded): the multi-region example's was 313,669 bytes, refused; the counters' recordings
likewise, by counter (render.alarms.counter_groups)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from generator.dashboard_parts import PART_ROOM
from generator.last_applied import APPLY_LIMIT
from generator.lint.grafana_rules import CONFIGMAP_APPLY_LIMIT, last_applied_bytes

BUILDS = Path(__file__).resolve().parents[1] / "golden" / "builds"


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _objects(file: str) -> list[tuple[str, str, dict]]:
    found = []
    for path in sorted(BUILDS.glob(f"*/{file}")):
        build = path.parents[1].name
        # libyaml's safe loader: the same documents as PyYAML's Python one, which took 0.9 CPU-s for these 2 MB at the
        # import of this module, in every process that collects the suite (5 in `make test`)
        for document in yaml.load_all(path.read_text(), Loader=_LOADER):
            if document:
                found.append((build, document["metadata"]["name"], document))
    return found


CONFIGMAPS = _objects("k8s/grafana-dashboards.yaml")
RULE_OBJECTS = _objects("k8s/prometheusrule.yaml")
# what each PrometheusRule leaves free at least: a quarter of the limit, room for fixes that grow a rule
RULE_MARGIN = APPLY_LIMIT // 4


def test_the_golden_builds_hold_dashboard_configmaps():
    assert len({build for build, _, _ in CONFIGMAPS}) >= 3 and len(CONFIGMAPS) >= 12


@pytest.mark.parametrize("build,name,configmap", [pytest.param(build, name, configmap, id=f"{build}/{name}")
                                                 for build, name, configmap in CONFIGMAPS])
def test_each_dashboard_configmap_fits_client_side_kubectl_apply(build, name, configmap):
    """With the room dashboard_parts keeps (a dashboard past it is cut into parts: tests/unit/test_dashboard_parts.py;
    the multi-region all-metrics one is 256,527 bytes whole, 1.5 KB from being cut). The bundled all-metrics one, 257,128
    bytes as the cut counts it with a Grafana variable's strings double-quoted, is 247,918 with every string of its
    PromQL single-quoted (promql_text.packed)."""
    assert last_applied_bytes(configmap) <= CONFIGMAP_APPLY_LIMIT - PART_ROOM, (build, name)


def test_the_golden_builds_hold_prometheus_rules():
    assert {build for build, _, _ in RULE_OBJECTS} == {path.parent.name for path in BUILDS.glob("*/manifest.json")}
    assert {"multi-region", "defaults"} <= {build for build, name, _ in RULE_OBJECTS if name == "gpudash-gpu-alerts-2"}
    assert {"multi-region", "defaults"} <= {build for build, name, _ in RULE_OBJECTS if name == "gpudash-counters-3"}


# The counters' recordings were one rule group, so one object: the multi-region build's grew to 205,797 bytes with the
# counter fixes 494b059a and 1a1bc1a2, inside kubectl's 262,144 (lint PR007 warns past it) but past the room kept
# for growth. They are cut into COUNTER_GROUPS objects now, by counter (render.alarms.counter_groups): 87, 44 and 89
# KB since 66a1829d's counter fix (one object would be 220 KB).
@pytest.mark.parametrize("build,name,resource", [pytest.param(build, name, resource, id=f"{build}/{name}")
                                                 for build, name, resource in RULE_OBJECTS])
def test_each_prometheus_rule_fits_client_side_kubectl_apply_with_room(build, name, resource):
    assert resource["kind"] == "PrometheusRule" and len(resource["spec"]["groups"]) == 1, (build, name)
    assert last_applied_bytes(resource) <= APPLY_LIMIT - RULE_MARGIN, (build, name, last_applied_bytes(resource))


def test_every_prometheus_rule_fits_client_side_kubectl_apply():
    assert all(last_applied_bytes(resource) <= APPLY_LIMIT for _, _, resource in RULE_OBJECTS)


def _stored(build: str, file: str) -> str:
    """A golden build's file; a build other than the defaults keeps only the files that differ (regenerate.py)."""
    path = BUILDS / build / file
    return (path if path.exists() else BUILDS / "defaults" / file).read_text()


@pytest.mark.parametrize("build", sorted({build for build, _, _ in RULE_OBJECTS}))
def test_the_prometheus_rules_together_hold_the_rules_files_groups(build):
    """The objects, in the file's order, hold exactly the groups of prometheus/rules.yaml (the same rules, in the same
    order, each group once), the alerts' first group in gpudash-gpu-alerts, the one object of every group before."""
    objects = [resource for each, _, resource in RULE_OBJECTS if each == build]
    rules = yaml.load(_stored(build, "prometheus/rules.yaml"), Loader=_LOADER)
    assert [group for resource in objects for group in resource["spec"]["groups"]] == rules["groups"]
    assert objects[0]["metadata"]["name"] == "gpudash-gpu-alerts" and rules["groups"][0]["name"] == "gpudash-gpu"
    assert len({resource["metadata"]["name"] for resource in objects}) == len(objects)
    assert all(resource["metadata"] == {**objects[0]["metadata"], "name": resource["metadata"]["name"]}
               for resource in objects)
