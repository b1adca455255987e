"""Every dashboard ConfigMap a build writes (k8s/grafana-dashboards.yaml) fits client-side `kubectl apply` whatever the
settings, with room left (dashboard_parts.PART_ROOM): a dashboard that would not fit is cut into dashboards that do,
each with every panel as it was. Before, the multi-region example's settings with `labels.cluster: k8s_cluster` wrote
the all-metrics ConfigMap at 265,758 bytes of annotations: `generate` exited 0, lint warned (GF011),
and `kubectl apply -f` was refused by the API server. Long label names (written in every selector), many clusters, the
per-pod views on a shared Prometheus and a counters CSV of every field each grow a dashboard: the all-metrics one has a
panel per field of the CSV, so no shrinking of panels could bound it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from generator import dashboard_parts
from generator.artifacts import build, grafana_dashboards
from generator.checks import kube
from generator.last_applied import APPLY_LIMIT, last_applied_bytes
from generator.output import SIDECAR_FILE, encode, grafana_dashboard_file
from generator.project import load_project

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "builds"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

LONG_LABELS = """labels:
  pod: exported_pod_name
  namespace: exported_pod_namespace
  container: exported_container_name
  cluster: kubernetes_cluster_name_label
  node: [kubernetes_node_name_label, Hostname, hostname, instance]
"""
REGIONS = ("us-east-1", "us-west-2", "eu-west-1", "ap-southeast-2")


def _clusters(count: int) -> str:
    return "clusters:\n" + "".join(
        f"  - {{name: gpu-cluster-production-{n}, region: {REGIONS[n % 4]}, prometheus_label: gpu-cluster-{n}}}\n"
        for n in range(1, count + 1))


def _every_field(folder: Path, reference: Path) -> str:
    """A counters CSV of every field the reference CSVs hold (46: DCGM's and the 1.x names), the first line of each."""
    lines: dict[str, str] = {}
    for csv in sorted((reference / "dcgm").glob("*.csv")):
        for line in csv.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                lines.setdefault(line.split(",")[0].strip(), line)
    (folder / "every-field.csv").write_text("\n".join(lines.values()) + "\n")
    return "counters: every-field.csv\n"


MULTI_REGION = (GOLDEN / "multi-region.yaml").read_text()
# settings name -> (settings text, whether it needs the CSV of every field)
CASES = {
    "multi-region, cluster label k8s_cluster": (
        MULTI_REGION.replace("labels:\n", "labels:\n  cluster: k8s_cluster\n"), False),
    "long label names": (_clusters(3) + LONG_LABELS, False),
    "sixteen clusters": (_clusters(16) + MULTI_REGION[MULTI_REGION.index("labels:"):], False),
    "every field, metric selection all": (MULTI_REGION.replace("used", "all"), True),
    "all of them": (_clusters(16) + LONG_LABELS + "agent:\n  metric_selection: all\n", True),
}


def _project(case: str, folder: Path, reference: Path):
    text, every = CASES[case]
    (folder / "gpudash.yaml").write_text((_every_field(folder, reference) if every else "") + text)
    return load_project(folder / "gpudash.yaml")


@pytest.fixture(scope="module", params=list(CASES))
def built(request, tmp_path_factory, reference):
    folder = tmp_path_factory.mktemp("parts")
    project = _project(request.param, folder, reference)
    files = encode(build(project))
    configmaps = [d for d in yaml.load_all(files[SIDECAR_FILE], Loader=_LOADER) if d]
    return request.param, project, files, configmaps


def test_every_dashboard_configmap_fits_client_side_kubectl_apply_with_room(built):
    case, _, _, configmaps = built
    sizes = {c["metadata"]["name"]: last_applied_bytes(c) for c in configmaps}
    assert all(size <= APPLY_LIMIT - dashboard_parts.PART_ROOM for size in sizes.values()), (case, sizes)
    # each case passed the limit with one ConfigMap per dashboard: the cut is what makes them fit
    assert any(re.fullmatch(r".+-[0-9]-dashboard", name) for name in sizes), (case, sizes)


def test_the_parts_show_every_panel_of_the_dashboard_as_it_was(built, monkeypatch):
    """The parts' panels, in their order, are the whole dashboard's (a row copied where a part begins inside it); only
    their place on the grid differs. Every part has the whole's variables, time and refresh; titles and uids are unique,
    each uid a Grafana uid (at most 40 characters), each part links to the others with the variables and the time."""
    case, project, _, _ = built
    parts = grafana_dashboards(project)
    monkeypatch.setattr(dashboard_parts, "PART_BYTES", 10**9)
    wholes = grafana_dashboards(project)
    assert len(parts) > len(wholes)
    for whole in wholes:
        own = [d for d in parts if re.fullmatch(rf"{re.escape(whole.uid)}(-[0-9]+)?", d.uid)]
        assert own[0].uid == whole.uid, case
        if len(own) == 1:
            assert own[0].model == whole.model
            continue
        assert [d.uid for d in own] == [whole.uid] + [f"{whole.uid}-{n}" for n in range(2, len(own) + 1)]
        shown = [_placeless(p) for d in own for p in d.model["panels"] if p["type"] != "row"]
        assert shown == [_placeless(p) for p in whole.model["panels"] if p["type"] != "row"], (case, whole.uid)
        rows = [p["title"] for p in whole.model["panels"] if p["type"] == "row"]
        assert [p["title"] for d in own for p in d.model["panels"] if p["type"] == "row"][:1] == rows[:1]
        for number, part in enumerate(own, start=1):
            assert part.title == part.model["title"] == f"{whole.title}, part {number} of {len(own)}"
            for key in ("templating", "time", "refresh", "tags", "schemaVersion", "graphTooltip"):
                assert part.model[key] == whole.model[key], (case, part.uid, key)
            links = part.model["links"]
            assert [link["url"] for link in links] == [f"/d/{other.uid}" for other in own if other is not part]
            assert all(link["keepTime"] and link["includeVars"] for link in links)
            tops = [p["gridPos"]["y"] for p in part.model["panels"]]
            assert min(tops) == 0 and part.model["panels"][0]["type"] == "row"
    assert len({d.uid for d in parts}) == len(parts) and all(len(d.uid) <= 40 for d in parts)
    assert len({d.title for d in parts}) == len(parts)


def _placeless(panel: dict) -> dict:
    return {key: value for key, value in panel.items() if key != "gridPos"}


def test_the_build_writes_each_part_and_verify_looks_for_their_configmaps(built):
    """A part is a dashboard of the build: its file, its ConfigMap (named for its uid), and the names verify's kube
    group looks for (the ConfigMaps a build owns, checks/kube._dashboard_configmaps)."""
    case, project, files, configmaps = built
    names = [c["metadata"]["name"] for c in configmaps]
    uids = [d.uid for d in grafana_dashboards(project)]
    assert names == [f"{uid}-dashboard" for uid in uids], case
    assert kube._built_dashboards(project)[0] == uids, case
    assert all(grafana_dashboard_file(uid) in files for uid in uids)
    for configmap in configmaps:
        (text,) = configmap["data"].values()
        assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert yaml.safe_load(text)["uid"] + "-dashboard" == configmap["metadata"]["name"]


def test_a_dashboard_that_fits_is_not_cut(tmp_path):
    """The bundled settings' dashboards fit (the largest, all-metrics, at 227,955 bytes): none is cut, none has
    links."""
    dashboards = grafana_dashboards(load_project(None))
    assert [d.uid for d in dashboards] == ["gpudash-by-pod", "gpudash-health", "gpudash-all-metrics",
                                          "gpudash-overview"]
    assert not any(d.model.get("links") for d in dashboards)


def test_a_part_whose_uid_is_another_dashboards_is_refused(tmp_path, reference):
    """A definition whose id is `all-metrics-2` beside an all-metrics dashboard cut in two: refused, saying why."""
    from generator.errors import InputError

    (tmp_path / "dashboards").mkdir()
    (tmp_path / "dashboards" / "other.py").write_text(
        "from generator.model import Dashboard, Row\nfrom generator.panels import per_gpu\n"
        "dashboard = Dashboard(id='all-metrics-2', title='Other', description='d', "
        "rows=[Row('r', [per_gpu('DCGM_FI_DEV_GPU_UTIL', 'Util')])])\n")
    bundled = Path(__file__).resolve().parents[2] / "dashboards"
    text, _ = CASES["every field, metric selection all"]
    (tmp_path / "gpudash.yaml").write_text(_every_field(tmp_path, reference) + text
                                           + f"definitions:\n  dashboards: [{bundled}, dashboards]\n")
    with pytest.raises(InputError, match="part 2 takes the uid 'gpudash-all-metrics-2' of another dashboard"):
        grafana_dashboards(load_project(tmp_path / "gpudash.yaml"))


def test_generate_names_the_configmap_of_a_part_the_build_no_longer_writes(tmp_path, reference, cli):
    """A dashboard cut in two, then whole again (fewer fields): generate over the build before names the second
    part's ConfigMap, which kubectl apply leaves (and Grafana's sidecar goes on loading)."""
    text = "grafana:\n  refresh: 5m\n"
    config = tmp_path / "gpudash.yaml"
    config.write_text(_every_field(tmp_path, reference) + text)
    out = tmp_path / "build"
    code, stdout, stderr = cli("generate", "--out", str(out), "--config", str(config))
    assert code == 0, stderr
    assert "gpudash-all-metrics-2-dashboard" in (out / SIDECAR_FILE).read_text()
    # the summary counts the dashboards written (before, the 4 defined, for 5 written)
    assert "(5 Grafana dashboards: 4 defined, those too large for one ConfigMap cut into parts)" in stdout, stdout
    config.write_text(text)  # the bundled CSV: all-metrics fits one ConfigMap again
    code, stdout, stderr = cli("generate", "--out", str(out), "--config", str(config))
    assert code == 0 and "gpudash-all-metrics-2-dashboard" not in (out / SIDECAR_FILE).read_text()
    assert "(4 Grafana dashboards)" in stdout, stdout
    assert re.search(r"previous build's dashboard ConfigMaps gpudash-all-metrics-2-dashboard are no longer written",
                     stderr), stderr


@pytest.mark.parametrize("prefix,definition", [("gpudash", "all-metrics"), ("gpudash", "a" * 31),
                                               ("team-a-inference", "b" * 23), ("p", "c-" * 15 + "c"),
                                               ("gpudash", "d" * 29 + "-2"), ("team-a-inference", "e" * 21 + "-2")])
def test_a_parts_uid_is_one_gpudash_makes_under_the_prefix(prefix, definition):
    """Within Grafana's 40 characters and, after the prefix, a definition id (31 at most): a part no longer defined is
    gpudash's to prune (names.is_grafana_uid), as the dashboard is; a part's uid is never the dashboard's."""
    from generator.names import grafana_uid, is_grafana_uid

    uid = grafana_uid(prefix, definition)
    for number in (2, 3, 12):
        part = dashboard_parts.part_uid(uid, number, prefix)
        assert len(part) <= 40 and part.endswith(f"-{number}") and part != uid
        assert is_grafana_uid(part, prefix), part
    assert dashboard_parts.part_uid("legacy-gpu-dashboard", 2, "gpudash") == "legacy-gpu-dashboard-2"
    # a uid of 40 characters ending in `-2` (a grafanalib dashboard's): its part 2 is not the uid itself
    assert dashboard_parts.part_uid("f" * 38 + "-2", 2, "gpudash") == "f" * 37 + "-2"


def _chart(number: int, y: int, x: int) -> dict:
    return {"id": number, "type": "timeseries", "title": f"chart {number}", "targets": [{"expr": "x" * 3000}],
            "gridPos": {"h": 8, "w": 8, "x": x, "y": y}}


def test_a_dashboard_without_rows_is_cut_between_lines_of_panels(monkeypatch):
    """30 panels, three a line, no row: cut between lines (never inside one), each part from the top of the grid."""
    monkeypatch.setattr(dashboard_parts, "PART_BYTES", 40_000)
    model = {"uid": "u", "title": "T", "panels": [_chart(n, n // 3 * 8, n % 3 * 8) for n in range(30)]}
    parts = dashboard_parts.parts("u", model, "F", {}, "gpudash")
    assert len(parts) == 3 and [p["id"] for part in parts for p in part["panels"]] == list(range(30))
    assert all(len(part["panels"]) % 3 == 0 and min(p["gridPos"]["y"] for p in part["panels"]) == 0
               for part in parts)
    assert all(dashboard_parts.configmap_bytes(part["uid"], part, "F", {}) <= 40_000 for part in parts)


@pytest.mark.xfail(strict=True, reason="a dashboard cut into parts puts each panel in the part its place in the layout "
                                       "gives it: a line of panels added at the top (fields the counters CSV adds to "
                                       "the all-metrics dashboard's first family) moves the last line of the first "
                                       "part (charts 9-11 of 30) into the next, another dashboard (uid-2): links to "
                                       "those panels "
                                       "(viewPanel, d-solo) lead to a part that no longer holds them, and annotations "
                                       "made on them stay on the part they left, drawn on no panel")
def test_a_panel_stays_in_its_part_when_a_line_of_panels_is_added_at_the_top(monkeypatch):
    monkeypatch.setattr(dashboard_parts, "PART_BYTES", 40_000)

    def part_of(count: int) -> dict[str, str]:
        charts = [_chart(n, n // 3 * 8, n % 3 * 8) for n in range(count)]
        for chart in charts:
            chart["title"] = f"chart {chart['id'] - (count - 30)}"  # the 30 first ones keep their titles
        parts = dashboard_parts.parts("u", {"uid": "u", "title": "T", "panels": charts}, "F", {}, "gpudash")
        return {p["title"]: part["uid"] for part in parts for p in part["panels"]}

    before, after = part_of(30), part_of(33)
    assert {title: after[title] for title in before} == before


def test_collapsed_rows_are_cut_with_their_panels_inside(monkeypatch):
    """Collapsed rows (their panels nested, as a grafanalib dashboard may have them): each nested panel stays inside
    its row; a part that begins inside one begins with a copy of it."""
    monkeypatch.setattr(dashboard_parts, "PART_BYTES", 40_000)
    rows = [{"id": r, "type": "row", "title": f"row {r}", "collapsed": True,
             "gridPos": {"h": 1, "w": 24, "x": 0, "y": r},
             "panels": [_chart(100 + 7 * r + j, r * 30 + 1 + j // 3 * 8, j % 3 * 8) for j in range(7)]}
            for r in range(4)]
    parts = dashboard_parts.parts("u", {"uid": "u", "title": "T", "panels": rows}, "F", {}, "gpudash")
    assert len(parts) == 3
    assert all(p["type"] == "row" and p["collapsed"] for part in parts for p in part["panels"])
    assert [(p["title"], q["id"]) for part in parts for p in part["panels"] for q in p["panels"]] == \
        [(f"row {n // 7}", 100 + n) for n in range(28)]
    assert all(dashboard_parts.configmap_bytes(part["uid"], part, "F", {}) <= 40_000 for part in parts)


def test_two_dashboards_whose_parts_uids_are_cut_alike_are_refused(monkeypatch):
    """Two long ids that begin alike (31 characters, the first 29 the same): part_uid cuts both dashboards' part 2 to
    one uid. Before, the build wrote both under it (the second's file over the first's, two ConfigMaps of one name:
    kubectl apply kept the second, and the first's links led to the other dashboard's panels; generate exit 0)."""
    from generator.artifacts import GrafanaDashboard
    from generator.errors import InputError

    monkeypatch.setattr(dashboard_parts, "PART_BYTES", 40_000)
    dashboards = []
    for tail in ("b1", "c2"):
        uid = f"gpudash-{'a' * 29}{tail}"
        model = {"uid": uid, "title": tail, "panels": [_chart(n, n // 3 * 8, n % 3 * 8) for n in range(30)]}
        dashboards.append(GrafanaDashboard(uid, tail, f"{tail}.py:1", model))
    assert dashboard_parts.part_uid(dashboards[0].uid, 2, "gpudash") == \
        dashboard_parts.part_uid(dashboards[1].uid, 2, "gpudash")
    with pytest.raises(InputError, match=f"part 2 takes the uid 'gpudash-{'a' * 29}-2' of another dashboard "
                                         r"\(defined at b1.py:1\)"):
        dashboard_parts.cut(dashboards, "F", {}, "gpudash")
    # one of them alone is cut, its parts' uids unique
    made = dashboard_parts.cut(dashboards[:1], "F", {}, "gpudash")
    assert len(made) == 3 and len({d.uid for d in made}) == 3


def test_a_panel_reading_another_panels_data_stays_in_its_part(monkeypatch):
    """Grafana's Dashboard data source (`-- Dashboard --`, a target's panelId) draws another panel's query result: only
    from a panel of the same dashboard. A cut between the two left the reading panel with nothing to draw (a grafanalib
    dashboard may use it to run a query once for several panels). The two stay in one part."""
    monkeypatch.setattr(dashboard_parts, "PART_BYTES", 40_000)
    panels = [_chart(n, n // 3 * 8, n % 3 * 8) for n in range(30)]
    source = {"type": "datasource", "uid": "-- Dashboard --"}
    panels[14] = {**panels[14], "datasource": source, "targets": [{"datasource": source, "panelId": 8, "refId": "A",
                                                                    "padding": "x" * 3000}]}
    parts = dashboard_parts.parts("u", {"uid": "u", "title": "T", "panels": panels}, "F", {}, "gpudash")
    assert len(parts) >= 2
    assert [p["id"] for part in parts for p in part["panels"]] == list(range(30))
    (holding,) = [part for part in parts if any(p["id"] == 14 for p in part["panels"])]
    assert 8 in [p["id"] for p in holding["panels"]]
    assert all(dashboard_parts.configmap_bytes(part["uid"], part, "F", {}) <= 40_000 for part in parts)


def test_a_dashboard_whose_referring_panels_cannot_be_kept_together_is_left_whole(monkeypatch):
    """Where no cut keeps every panel beside the panel whose data it reads within a part, the dashboard is left whole
    (lint GF011 says it does not fit), never cut so that a panel draws nothing."""
    monkeypatch.setattr(dashboard_parts, "PART_BYTES", 40_000)
    panels = [_chart(n, n // 3 * 8, n % 3 * 8) for n in range(30)]
    source = {"type": "datasource", "uid": "-- Dashboard --"}
    panels[29] = {**panels[29], "datasource": source, "targets": [{"datasource": source, "panelId": 0, "refId": "A"}]}
    model = {"uid": "u", "title": "T", "panels": panels}
    assert dashboard_parts.parts("u", model, "F", {}, "gpudash") == [model]


def test_a_part_no_longer_made_is_told_by_the_dashboards_the_build_makes_and_their_parts():
    """verify names a live part of these settings that the build no longer makes (checks/kube): `<uid>-k` of a
    dashboard the build cuts into fewer than k parts, a grafanalib dashboard's too (cut alike, `<uid>-k`), a long uid's
    as part_uid cuts it; never a part the build makes, nor the uid of a dashboard it does not make (a removed
    definition's, another settings file's: whose part it would be is not known)."""
    long = "gpudash-" + "a" * 31
    uids = ["gpudash-all-metrics", "gpudash-health", "gpudash-health-2", "legacy-gpu-dashboard", long]
    counts = dashboard_parts.part_counts(["gpudash-all-metrics", "gpudash-health", "legacy-gpu-dashboard", long],
                                         set(uids), "gpudash")
    assert counts == {"gpudash-all-metrics": 1, "gpudash-health": 2, "legacy-gpu-dashboard": 1, long: 1}
    told = {uid: dashboard_parts.part_no_longer_made(uid, counts, "gpudash") for uid in [
        "gpudash-all-metrics-2", "gpudash-health-3", "gpudash-health-12", "legacy-gpu-dashboard-2",
        dashboard_parts.part_uid(long, 2, "gpudash"), "gpudash-overview-2", "gpudash-all-metrics-1",
        "gpudash-all-metrics-02", "gpudash-all-metrics"]}
    assert told == {"gpudash-all-metrics-2": ("gpudash-all-metrics", 2), "gpudash-health-3": ("gpudash-health", 3),
                    "gpudash-health-12": ("gpudash-health", 12), "legacy-gpu-dashboard-2": ("legacy-gpu-dashboard", 2),
                    dashboard_parts.part_uid(long, 2, "gpudash"): (long, 2), "gpudash-overview-2": None,
                    "gpudash-all-metrics-1": None, "gpudash-all-metrics-02": None, "gpudash-all-metrics": None}


def test_verify_reads_the_uids_of_a_build_made_from_these_inputs_and_renders_them_otherwise(tmp_path, reference, cli,
                                                                                            monkeypatch):
    """verify's kube group rendered every dashboard to know their ConfigMaps' names (a part's uid follows its size):
    0.18 s of CPU at idle. The build in the default output folder (./build) records what its dashboards were made
    from (grafana_inputs.made_from): where it is what these settings make, the uids are read from its manifest, none
    rendered; where anything differs (the counters CSV, a definition, the settings, another gpudash's build, an older
    build recording none), they are rendered, as before."""
    import json

    from generator import artifacts
    from generator.grafana_inputs import made_from

    rendered = []
    render = artifacts.grafana_uids
    monkeypatch.setattr(artifacts, "grafana_uids", lambda project: rendered.append(1) or render(project))
    config = tmp_path / "gpudash.yaml"
    every = _every_field(tmp_path, reference)
    config.write_text(every)
    code, _, stderr = cli("generate", "--out", str(tmp_path / "build"), "--config", str(config))
    assert code == 0, stderr
    monkeypatch.chdir(tmp_path)
    cut = (["gpudash-by-pod", "gpudash-health", "gpudash-all-metrics", "gpudash-all-metrics-2", "gpudash-overview"],
           {"gpudash-by-pod": 1, "gpudash-health": 1, "gpudash-all-metrics": 2, "gpudash-overview": 1})
    assert kube._built_dashboards(load_project(config)) == cut and rendered == []
    config.write_text("")  # the bundled CSV since: all-metrics whole, the build's record not read
    assert kube._built_dashboards(load_project(config))[1]["gpudash-all-metrics"] == 1 and rendered == [1]
    config.write_text(every + "grafana:\n  refresh: 5m\n")  # other settings
    assert kube._built_dashboards(load_project(config)) == cut and rendered == [1, 1]
    config.write_text(every)
    (tmp_path / "dashboards").mkdir()  # a definition more (the bundled ones, and one of its own)
    (tmp_path / "dashboards" / "mine.py").write_text(
        "from generator.model import Dashboard, Row\nfrom generator.panels import per_gpu\n"
        "dashboard = Dashboard(id='mine', title='Mine', description='d', "
        "rows=[Row('r', [per_gpu('DCGM_FI_DEV_GPU_UTIL', 'Util')])])\n")
    bundled = Path(__file__).resolve().parents[2] / "dashboards"
    config.write_text(every + f"definitions:\n  dashboards: [{bundled}, dashboards]\n")
    uids, counts = kube._built_dashboards(load_project(config))
    assert "gpudash-mine" in uids and rendered == [1, 1, 1]
    config.write_text(every)
    manifest = tmp_path / "build" / "manifest.json"
    written = json.loads(manifest.read_text())
    assert written["artifacts"]["grafana_made_from"] == made_from(load_project(config))
    for edit in ({"generator": "gpudash 0.0.9"}, {"artifacts": {**written["artifacts"], "grafana_made_from": None}}):
        manifest.write_text(json.dumps({**written, **edit}))
        assert kube._built_dashboards(load_project(config)) == cut
    assert rendered == [1] * 5


def test_settings_files_of_one_project_split_by_clusters_cut_a_dashboard_alike_near_the_limit(tmp_path, monkeypatch):
    """Two settings files of one project split by clusters (one uid prefix and folder) make the same dashboards, and
    their pushes record each other's claim on them (grafana_sync). The cut counted the ConfigMap's annotations as
    written, whose gpudash.io/clusters differs between the files: near the limit one file cut all-metrics and the other
    did not (read from the code), so the two builds' gpudash-all-metrics differed (part 1 of 2, and whole) and
    each push found the other's save changed. Measured: a shared Prometheus of one cluster each, `gpu-a` and a
    36-character name, all-metrics at 258,134 and 258,196 bytes (both past the limit now); the limit set between them,
    one was cut and not the other. The cut now counts the clusters annotation at CLUSTERS_ROOM characters at least:
    the files cut alike, and each part still fits with its own annotations."""
    from generator.markers import KUBERNETES_CLUSTERS
    from generator.render import grafana as grafana_render, scrape

    projects = []
    for name in ("gpu-a", "gpu-inference-production-us-west-2-b"):
        config = tmp_path / f"{name}.yaml"
        config.write_text(f"project: team-a\nclusters:\n  - {{name: {name}, region: us-east-1, "
                          f"prometheus_label: {name}}}\n")
        projects.append(load_project(config))
    models = [grafana_render.render(next(d for d in p.grafana_definitions() if d.id == "all-metrics"), p.catalog,
                                    p.settings) for p in projects]
    assert models[0] == models[1]  # the same dashboard
    sizes = [dashboard_parts.configmap_bytes("gpudash-all-metrics", models[0], "GPU monitoring",
                                             scrape.publisher_annotations(p.settings)) for p in projects]
    assert sizes[1] - sizes[0] > 2 and all(len(scrape.publisher_annotations(p.settings)[KUBERNETES_CLUSTERS])
                                           <= dashboard_parts.CLUSTERS_ROOM for p in projects)
    monkeypatch.setattr(dashboard_parts, "PART_BYTES", (sizes[0] + sizes[1]) // 2)  # between the two
    built = [grafana_dashboards(p) for p in projects]
    assert [(d.uid, d.model) for d in built[0]] == [(d.uid, d.model) for d in built[1]]
    assert "gpudash-all-metrics-2" in [d.uid for d in built[0]]
    for project, dashboards in zip(projects, built):
        publisher = scrape.publisher_annotations(project.settings)
        assert all(dashboard_parts.configmap_bytes(d.uid, d.model, "GPU monitoring", publisher)
                   <= dashboard_parts.PART_BYTES for d in dashboards)


def test_generate_names_the_configmap_of_a_grafanalib_dashboards_part_no_longer_written(tmp_path, cli, monkeypatch):
    """A grafanalib dashboard is cut as gpudash's are (`<its uid>-2`, ...), and generate over the build before named
    a part of gpudash's own dashboards no longer written, never one of a grafanalib dashboard's (its uid is not of the
    prefix's form). It does now: a part beyond those a dashboard of this build is cut into is the previous build's part
    of it, whatever its uid."""
    from tests.unit.test_grafanalib_interop import GRAFANALIB_FILE

    (tmp_path / "dashboards").mkdir()
    (tmp_path / "dashboards" / "legacy.py").write_text(GRAFANALIB_FILE.replace(
        "panels=[TimeSeries(", "panels=[TimeSeries(\n        title=\"Util 2\", description=\"x\" * 3000,\n"
        "        gridPos=GridPos(h=8, w=12, x=0, y=8)),\n    TimeSeries(", 1).replace(
        'description="GPU utilization"', 'description="GPU utilization" + "x" * 3000'))
    config = tmp_path / "gpudash.yaml"
    config.write_text("definitions:\n  dashboards: [dashboards]\n")
    out = tmp_path / "build"
    with monkeypatch.context() as small:
        small.setattr(dashboard_parts, "PART_BYTES", 8_000)  # the grafanalib dashboard cut in two
        code, stdout, stderr = cli("generate", "--out", str(out), "--config", str(config))
    assert code == 0, stderr
    assert "legacy-gpu-2-dashboard" in (out / SIDECAR_FILE).read_text()
    code, stdout, stderr = cli("generate", "--out", str(out), "--config", str(config))
    assert code == 0 and "legacy-gpu-2-dashboard" not in (out / SIDECAR_FILE).read_text()
    assert "previous build's dashboard ConfigMaps legacy-gpu-2-dashboard are no longer written" in stderr, stderr


def test_a_dashboard_given_another_model_is_written_from_it():
    """The cut keeps each dashboard's texts so that encode does not serialize it again; a copy of a built dashboard
    given another model (dataclasses.replace) is written from that model, not with the texts of the one it replaced."""
    import dataclasses
    import json

    artifacts = build(load_project(None))
    first = artifacts.grafana[0]
    edited = dataclasses.replace(first, model={**first.model, "title": "Edited by a later step"})
    files = encode(dataclasses.replace(artifacts, grafana=(edited, *artifacts.grafana[1:])))
    assert json.loads(files[grafana_dashboard_file(first.uid)])["title"] == "Edited by a later step"
    # the unedited dashboards are written from the texts the cut measured, byte for byte what serializing writes
    assert files[grafana_dashboard_file(artifacts.grafana[1].uid)] == artifacts.grafana[1].written_texts()[0]
