"""verify's kube group looks for live objects named as the build names its own (checks/kube: the PrometheusRules of
other settings, the dashboard ConfigMaps of other settings). It works the names out without writing the build: the
dashboards' ConfigMaps from the dashboards rendered (a dashboard too large for one ConfigMap is cut into parts, each a
ConfigMap of its own: dashboard_parts); the PrometheusRules from the rules (how many groups the alerts and the
counters' recordings take follows their size). Whatever the settings, they are the names the build writes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from generator.artifacts import build
from generator.checks import kube
from generator.output import PROMETHEUS_RULE_FILE, SIDECAR_FILE, encode
from generator.project import load_project
from tests.unit.test_rule_objects import _COPIES
from tests.unit.test_grafanalib_interop import GRAFANALIB_FILE

GOLDEN_BUILDS = Path(__file__).resolve().parent.parent / "golden" / "builds"
BUNDLED_ALARMS = Path(__file__).resolve().parent.parent.parent / "alarms" / "gpu_alarms.py"


def _settings(case: str, folder: Path) -> Path | None:
    """The settings file of `case` (None: the bundled defaults)."""
    if case == "defaults":
        return None
    if case in ("classic", "container-insights", "multi-region"):
        return GOLDEN_BUILDS / f"{case}.yaml"
    config = folder / "gpudash.yaml"
    if case == "alerts past three groups":  # the bundled alarms and three copies of each: gpudash-gpu-alerts-4 and on
        (folder / "alarms").mkdir()
        (folder / "alarms" / "copies.py").write_text(_COPIES.format(bundled=str(BUNDLED_ALARMS)))
        config.write_text((GOLDEN_BUILDS / "multi-region.yaml").read_text() + "definitions:\n  alarms: [alarms]\n")
    else:  # another uid prefix, and a grafanalib dashboard (its uid its own) beside the bundled dashboards
        (folder / "dashboards").mkdir()
        (folder / "dashboards" / "legacy.py").write_text(GRAFANALIB_FILE)
        bundled = Path(__file__).resolve().parent.parent.parent / "dashboards"
        config.write_text(f"grafana:\n  uid_prefix: team-a\ndefinitions:\n  dashboards: [{bundled}, dashboards]\n")
    return config


@pytest.mark.parametrize("case", ["defaults", "classic", "container-insights", "multi-region",
                                  "alerts past three groups", "uid prefix and grafanalib"])
def test_verify_looks_for_the_objects_the_build_writes(case, tmp_path):
    project = load_project(_settings(case, tmp_path))
    files = encode(build(project))
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    configmaps = [d["metadata"]["name"] for d in yaml.load_all(files[SIDECAR_FILE], Loader=loader)]
    rules = [d["metadata"]["name"] for d in yaml.load_all(files[PROMETHEUS_RULE_FILE], Loader=loader)]
    assert [f"{uid}-dashboard" for uid in kube._built_dashboards(project)[0]] == configmaps
    assert kube._rule_object_names(project) == frozenset(rules) and len(set(rules)) == len(rules)
    if case == "alerts past three groups":
        assert "gpudash-gpu-alerts-4" in rules
    if case == "uid prefix and grafanalib":
        assert "legacy-gpu-dashboard" in configmaps and any(name.startswith("team-a-") for name in configmaps)


def test_the_rule_groups_verify_reads_are_made_once_a_project_and_are_the_builds(tmp_path, monkeypatch):
    """The kube and prometheus groups both read the build's rule groups (checks.built): made once for a project, by
    artifacts.rule_groups, made anew for another project (never another project's), the counters' groups among them
    those render.alarms.counter_groups makes."""
    import generator.artifacts as artifacts
    from generator.checks import built
    from generator.names import is_counter_group
    from generator.render.alarms import counter_groups

    made = []
    monkeypatch.setattr(artifacts, "rule_groups", lambda project, real=artifacts.rule_groups: made.append(project)
                        or real(project))
    monkeypatch.setattr(built, "_KEPT", [])
    one, other = load_project(), load_project(_settings("classic", tmp_path))
    first = built.rule_groups(one)
    assert built.rule_groups(one) is first and made == [one]
    assert first == artifacts.rule_groups(one)
    assert built.rule_groups(other) == artifacts.rule_groups(other) != first
    assert built.rule_groups(one) == first and made[-1] is one  # made again, for the project asked about
    assert [g for g in first["groups"] if is_counter_group(g["name"])] == counter_groups(one.counted_fields(),
                                                                                        one.catalog, one.settings)
