"""`gpudash preview` end to end: a real Prometheus (the --sample one, loaded by promtool), the site it
writes, and that site opened in headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from pathlib import Path

import pytest

from generator.artifacts import build, grafana_dashboards
from generator.output import artifacts_record, encode, write, write_files
from generator.preview.site import visual_panels
from generator.project import load_project
from tests.support import documentation
from tests.support.browser import Browser, distinct_rows
from tests.support.prometheus_server import binary

# One screenshot per default dashboard is kept here after the run (outside the repository).
ARTIFACTS = Path(tempfile.gettempdir()) / "gpudash-preview-screenshots"


class _Panels(HTMLParser):
    """Panels of a page as the DOM holds them: their titles, classes inside, and text."""

    def __init__(self):
        super().__init__()
        self.panels: list[dict] = []
        self.depth = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if tag == "div" and "panel" in classes:
            self.panels.append({"type": attrs.get("data-type"), "classes": set(), "text": [], "svg": 0})
            self.depth = 1
            return
        if self.depth and tag not in ("i", "br", "line", "path", "circle", "meta"):
            self.depth += 1 if tag == "div" else 0
        if self.depth:
            self.panels[-1]["classes"].update(classes)
            self.panels[-1]["svg"] += tag == "svg"

    def handle_endtag(self, tag):
        if self.depth and tag == "div":
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            self.panels[-1]["text"].append(data)


def panels_of(html: str) -> list[dict]:
    parser = _Panels()
    parser.feed(html)
    for panel in parser.panels:
        panel["text"] = " ".join(panel["text"])
    return parser.panels


def drawn(panel: dict) -> bool:
    """A chart, a stat value or a table of values: what a panel with data shows."""
    return bool(panel["svg"] or {"stat-value", "data"} & panel["classes"])


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the module's pages."""
    with Browser() as chromium:
        yield chromium


# The range every preview here draws. The pages' stories (each panel drawn or 'No data', the sample's GPUs and pods, the
# counters' recordings read, a failed query on its panel) hold alike over any range holding a few rate windows; the
# sample's Prometheus holds and answers the range's history for every panel: 4.9 CPU-s over 1h, 2.9 over 30m, 1.6
# over 15m (the same panels drawn and the same ones without data at each)
RANGE = "15m"


@pytest.fixture(scope="module")
def sample_site(tmp_path_factory):
    binary("prometheus")
    from click.testing import CliRunner

    from generator.cli import main

    out = tmp_path_factory.mktemp("site") / "preview"
    # --timeout 300: this test is about what a page draws, not how fast; "Framebuffer used share by pod" takes ~10 s
    # of Prometheus CPU over the sample's hour (benchmarks/queries.py measures it) and ran past the default 30 s on
    # a loaded machine
    result = CliRunner().invoke(main, ["preview", "--sample", "--range", RANGE, "--timeout", "300", "--out", str(out),
                                       "--output", "json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return out, json.loads(result.stdout)


def test_every_dashboard_gets_a_page_with_all_its_panels(sample_site):
    out, summary = sample_site
    dashboards = grafana_dashboards(load_project())
    assert [d["uid"] for d in summary["dashboards"]] == [d.uid for d in dashboards]
    for dashboard, page in zip(dashboards, summary["dashboards"]):
        html = (out / page["file"]).read_text()
        assert len(panels_of(html)) == page["panels"] == len(visual_panels(dashboard.model))
        failed = [p["text"] for p in panels_of(html) if "error" in p["classes"]]
        assert page["failed"] == 0, f"{page['file']}: {failed}"
    index = (out / "index.html").read_text()
    assert all(f'href="{d.uid}.html"' in index for d in dashboards)


def test_panels_show_the_sample_fleet(sample_site):
    out, _ = sample_site
    overview = panels_of((out / "gpudash-overview.html").read_text())
    reporting = next(p for p in overview if p["text"].startswith("GPUs reporting"))
    assert re.search(r"\b3\b", reporting["text"])  # three GPUs in the payload
    utilization = next(p for p in overview if p["text"].startswith("GPU utilization"))
    assert {"gpu-node-a GPU 0", "gpu-node-a GPU 1", "gpu-node-b GPU 0"} <= set(re.findall(r"gpu-node-\w GPU \d",
                                                                                           utilization["text"]))
    assert utilization["svg"] == 1
    by_pod = (out / "gpudash-by-pod.html").read_text()
    assert "Pod ml-training/trainer-0" in by_pod and "Pod research/notebook-7" in by_pod
    # the counters' rate panels read their recordings, written over the sample's history (promtool's rule backfill)
    for page, title in (("gpudash-all-metrics", "DEV_TOTAL_ENERGY_CONSUMPTION"), ("gpudash-health", "PCIe replays"),
                        ("gpudash-by-pod", "Energy use rate of each pod's GPUs")):
        panel = next(p for p in panels_of((out / f"{page}.html").read_text()) if p["text"].startswith(title))
        assert "nodata" not in panel["classes"] and panel["svg"] == 1, (page, title, panel["text"][:200])


def test_no_data_is_not_a_zero_line(sample_site):
    out, _ = sample_site
    panels = panels_of((out / "gpudash-overview.html").read_text())
    mig = [p for p in panels if "MIG instance" in p["text"]]
    assert mig and all("nodata" in p["classes"] and p["svg"] == 0 for p in mig)  # the sample has no MIG
    idle = next(p for p in panels if p["text"].startswith("GPU utilization"))
    assert "nodata" not in idle["classes"] and "0%" in idle["text"]  # the idle GPU is a line at zero


def test_the_page_names_its_prometheus_and_range(sample_site):
    out, _ = sample_site
    html = (out / "gpudash-health.html").read_text()
    assert "bundled sample exporter payload" in html
    assert re.search(rf"last {RANGE}, \d{{4}}-\d\d-\d\d \d\d:\d\d UTC to", html)
    assert "Namespace = All, Pod = All, Node = All, GPU = All" in html
    assert "<script" not in html and "<link" not in html and "url(" not in html  # nothing loads from outside
    assert not re.search(r'(src|href)="[a-z]+:', html)


def test_chromium_draws_every_page(sample_site, browser):
    out, summary = sample_site
    ARTIFACTS.mkdir(exist_ok=True)
    pages = summary["dashboards"]
    with ThreadPoolExecutor(len(pages)) as pool:  # each page in its own tab, side by side
        doms = list(pool.map(lambda page: browser.open_page(out / page["file"], ARTIFACTS / f"{page['uid']}.png"),
                             pages))
    for page, dom in zip(pages, doms):
        shot = ARTIFACTS / f"{page['uid']}.png"
        panels = panels_of(dom)
        assert len(panels) == page["panels"]
        assert sum(drawn(p) for p in panels) == page["panels"] - page["no_data"]
        assert "GPU" in " ".join(p["text"] for p in panels)
        assert distinct_rows(shot) > 200, f"{shot} looks blank"


def test_a_failing_query_shows_on_its_panel_and_the_others_still_draw_and_diff_shows_it(tmp_path, cli, browser):
    binary("prometheus")
    artifacts = build(load_project())
    files = encode(artifacts)
    name = "grafana/gpudash-health.json"
    model = json.loads(files[name])
    broken = next(p for p in model["panels"] if p.get("targets"))
    broken["targets"][0]["expr"] = "sum(rate(DCGM_FI_DEV_XID_ERRORS[$__rate_interval])"  # unbalanced
    files[name] = json.dumps(model).encode()
    write_files(tmp_path / "build", files, record=artifacts_record(artifacts))
    write(tmp_path / "base", build(load_project()))
    code, stdout, stderr = cli("preview", "--sample", "--from", str(tmp_path / "build"), "--diff",
                               str(tmp_path / "base"), "--out", str(tmp_path / "site"), "--range", RANGE,
                               "--timeout", "300",
                               "--output", "json")
    assert code == 0, stderr
    assert json.loads(stdout)["diff"] is True
    # --diff: only the broken panel differs; before it draws, after it shows the error
    diff = panels_of((tmp_path / "site" / "diff.html").read_text())
    assert len(diff) == 2 and all(p["text"].startswith(broken["title"]) for p in diff)
    assert drawn(diff[0]) and "error" not in diff[0]["classes"] and "error" in diff[1]["classes"]
    page = next(p for p in json.loads(stdout)["dashboards"] if p["uid"] == "gpudash-health")
    assert page["failed"] == 1
    dom = browser.open_page(tmp_path / "site" / page["file"], tmp_path / "health.png")
    panels = panels_of(dom)
    assert len(panels) == len(visual_panels(model))
    failing = [p for p in panels if "error" in p["classes"]]
    assert len(failing) == 1 and "parse error" in failing[0]["text"] and broken["title"] in failing[0]["text"]
    assert sum(drawn(p) for p in panels) == len(panels) - page["no_data"] - 1
    assert distinct_rows(tmp_path / "health.png") > 200


def test_a_prometheus_given_by_url_is_named_without_its_password(tmp_path, cli):
    binary("prometheus")
    from generator.preview import sample

    with sample.serve(15 * 60, __import__("time").time(), "dcgm-exporter") as url:
        secret_url = url.replace("http://", "http://viewer:s3cret@")
        code, stdout, stderr = cli("preview", "--prometheus-url", secret_url, "--range", RANGE, "--out",
                                   str(tmp_path / "site"), "--output", "json")
    assert code == 0, stderr
    summary = json.loads(stdout)
    assert summary["prometheus"] == url.replace("http://", "http://***@")
    html = (tmp_path / "site" / "gpudash-by-pod.html").read_text()
    assert f"Prometheus at {summary['prometheus']}" in html and "s3cret" not in html + stdout + stderr
    table = next(p for p in panels_of(html) if p["type"] == "table")
    assert "data" in table["classes"] and "namespace pod Value" in table["text"]  # one column per label
    assert re.search(r"ml-training\s+trainer-0\s+1\b", table["text"])  # the pod holds one GPU


def test_needs_a_source(cli):
    code, _, stderr = cli("preview")
    assert code == 2 and "--prometheus-url" in stderr and "--sample" in stderr
    code, _, stderr = cli("preview", "--prometheus-url", "prometheus:9090")
    assert code == 2 and "--prometheus-url" in stderr
    code, _, stderr = cli("preview", "--sample", "--range", "an hour")
    assert code == 2 and "--range" in stderr and "1h" in stderr


def test_an_unreachable_prometheus_is_a_remote_failure_without_its_password(cli, tmp_path):
    from tests.support.prometheus_server import free_port

    code, stdout, stderr = cli("preview", "--prometheus-url", f"http://admin:hunter2@127.0.0.1:{free_port()}",
                               "--out", str(tmp_path / "site"))
    assert code == 3 and "hunter2" not in stdout + stderr and "***@127.0.0.1" in stderr
    assert not (tmp_path / "site").exists()


def test_sample_without_prometheus_says_what_to_install(cli, tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    code, _, stderr = cli("preview", "--sample", "--out", str(tmp_path / "site"))
    assert code == 2 and "apt-get install prometheus" in stderr


PER_POD = """from generator.model import Dashboard, Row
from generator.panels import per_pod

dashboard = Dashboard("pods", "Pods", [Row("GPU", [per_pod("DCGM_FI_DEV_GPU_UTIL", "GPU utilization by pod")])])
"""


@pytest.mark.parametrize("labels", [
    # a ServiceMonitor without honorLabels: the workload's labels renamed, the exporter pod's own beside them
    "  pod: exported_pod\n  namespace: exported_namespace\n  container: exported_container\n",
    # an exporter run with --use-old-namespace
    "  pod: pod_name\n  namespace: pod_namespace\n  container: container_name\n",
], ids=["exported", "old-names"])
def test_the_sample_carries_the_pods_under_the_labels_the_settings_read(tmp_path, cli, monkeypatch, labels):
    """The per-pod panels of settings whose Prometheus carries the workload as exported_pod (or pod_name) drew 'No
    data' from the sample, whose series held `pod`: a newcomer saw their own dashboard blank."""
    binary("prometheus")
    (tmp_path / "dashboards").mkdir()
    (tmp_path / "dashboards" / "pods.py").write_text(PER_POD)
    (tmp_path / "gpudash.yaml").write_text(f"definitions:\n  dashboards: dashboards\nlabels:\n{labels}")
    monkeypatch.chdir(tmp_path)

    code, stdout, stderr = cli("preview", "--sample", "--range", RANGE, "--out", "site", "--output", "json",
                               env={"GPUDASH_CONFIG": None})

    assert code == 0, stderr
    assert json.loads(stdout)["dashboards"][0]["no_data"] == 0
    panel, = panels_of((tmp_path / "site" / "gpudash-pods.html").read_text())
    assert drawn(panel) and {"Pod ml-training/trainer-0", "Pod research/notebook-7"} <= set(
        re.findall(r"Pod [\w-]+/[\w-]+", panel["text"])), panel["text"][:300]


def test_preview_draws_the_definitions_and_from_the_build(tmp_path, cli, monkeypatch):
    """README step 3 said `preview --sample` draws the dashboards in build/; it draws what the definitions make now,
    and `--from build` what build/ holds. A definition changed since `generate` shows the difference."""
    binary("prometheus")
    (tmp_path / "dashboards").mkdir()
    (tmp_path / "dashboards" / "pods.py").write_text(PER_POD)
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  dashboards: dashboards\n")
    monkeypatch.chdir(tmp_path)
    env = {"GPUDASH_CONFIG": None}
    assert cli("generate", env=env)[0] == 0
    (tmp_path / "dashboards" / "pods.py").write_text(PER_POD.replace('"Pods"', '"Pods renamed"'))

    for args, title in ((("--out", "now"), "Pods renamed"), (("--from", "build", "--out", "built"), "Pods")):
        code, stdout, stderr = cli("preview", "--sample", "--range", RANGE, *args, "--output", "json", env=env)
        assert code == 0, stderr
        page = (tmp_path / args[-1] / "gpudash-pods.html").read_text()
        assert f"<h1>{title}</h1>" in page
    readme = " ".join(documentation.text("README.md").split())
    assert "`gpudash preview --sample` draws the dashboards your definitions make (`--from build`: those in " \
           "`build/`, as they ship)" in readme
