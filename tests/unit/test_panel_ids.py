"""A generated Grafana panel's id stays with its panel: made from its title in its dashboard, not its place, the same
in every process, distinct within the dashboard, in the range Grafana takes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from generator.artifacts import grafana_dashboards
from generator.project import load_project
from tests.conftest import REPO

ID_CEILING = 2**31 - 1  # the highest id: within a signed 32-bit integer, room above for panels Grafana's UI adds


def _ids(config, csv=None) -> dict[str, dict[tuple[str, str], int]]:
    """Each dashboard's ids by (type, title) of its panels and rows (each (type, title) once in these dashboards)."""
    ids = {}
    for rendered in grafana_dashboards(load_project(config, csv)):
        panels = rendered.model["panels"]
        keyed = {(p["type"] == "row" and "row" or "panel", p["title"]): p["id"] for p in panels}
        assert len(keyed) == len(panels)
        ids[rendered.uid] = keyed
    return ids


_TRAINING = '''
from generator.model import Dashboard, Row
from generator.panels import per_pod


def dashboards(ctx):
    panels = [{first}per_pod("DCGM_FI_DEV_GPU_UTIL", "GPU utilization by pod"),
              per_pod("DCGM_FI_DEV_POWER_USAGE", "Power by pod")]
    yield Dashboard(id="training", title="Training", rows=[{row}Row("GPU", panels)])
'''


def test_a_panel_keeps_its_id_when_a_panel_or_a_row_is_added_before_it(project_dir):
    """Grafana ties to a panel's id what people made around it (their annotations on it, viewPanel and d-solo links,
    alert rules linked to it): as the panel's place in the layout, 'GPU utilization by pod' went from id 2 to 3 when
    a panel was added before it, and every such thing with it onto another panel."""
    ids = []
    for first, row in (("", ""), ('per_pod("DCGM_FI_DEV_FB_USED", "Memory used by pod"), ', ""),
                       ("", 'Row("Memory", [per_pod("DCGM_FI_DEV_FB_USED", "Memory used by pod")]), ')):
        ids.append(_ids(project_dir(dashboards={"training.py": _TRAINING.format(first=first, row=row)}))
                   ["gpudash-training"])
    assert ("panel", "Memory used by pod") in ids[1] and ("row", "Memory") in ids[2]
    for kept in (("row", "GPU"), ("panel", "GPU utilization by pod"), ("panel", "Power by pod")):
        assert ids[0][kept] == ids[1][kept] == ids[2][kept], kept


def test_panels_keep_their_ids_when_the_counters_csv_drops_panels_before_them(reference):
    """The bundled dashboards built from a counters CSV without the profiling fields leave out the panels of those
    fields (tensor core activity, right after GPU utilization on the by-pod dashboard): every panel and row left
    keeps the id it has with the GPU operator's CSV."""
    full = _ids(None, reference / "dcgm" / "dcp-metrics-included.csv")
    fewer = _ids(None, reference / "dcgm" / "testdata-default-counters.csv")
    assert ("panel", "Tensor core activity by pod") in full["gpudash-by-pod"]
    assert ("panel", "Tensor core activity by pod") not in fewer["gpudash-by-pod"]
    for uid, kept in fewer.items():
        assert kept and {key: full[uid][key] for key in kept} == kept, uid


_REPEATED = '''
from generator.model import Dashboard, Row
from generator.panels import per_pod


def dashboards(ctx):
    rows = [Row(title, [per_pod("DCGM_FI_DEV_GPU_UTIL", "Utilization"), per_pod("DCGM_FI_DEV_GPU_UTIL", title)])
            for title in {titles}]
    yield Dashboard(id="repeats", title="Repeats", rows=rows, backends=("grafana",))
'''


def test_titles_that_repeat_get_ids_of_their_own(project_dir):
    """A Grafana-only dashboard may repeat a title (here 'Utilization' in each row, and a row 'A' beside a panel 'A',
    twice): each panel and row gets an id of its own, a whole number from 1 to 2^31 - 1; one added after them leaves
    theirs as they were."""
    def ids(titles):
        (rendered,) = grafana_dashboards(load_project(project_dir(dashboards={
            "repeats.py": _REPEATED.format(titles=titles)})))
        return [(p["type"], p["title"], p["id"]) for p in rendered.model["panels"]]

    two = ids('["A", "A"]')
    assert [(kind, title) for kind, title, _ in two] == [("row", "A"), ("timeseries", "Utilization"),
                                                         ("timeseries", "A")] * 2
    numbers = [number for _, _, number in two]
    assert len(set(numbers)) == 6 and all(type(n) is int and 1 <= n <= ID_CEILING for n in numbers)
    assert ids('["A", "A", "B"]')[:6] == two


_COLLIDING = '''
from generator.model import Dashboard, Row
from generator.panels import per_pod


def dashboards(ctx):
    yield Dashboard(id="colliding", title="Colliding", rows=[Row("GPU", [
        per_pod("DCGM_FI_DEV_GPU_UTIL", title) for title in {titles}])])
'''


def test_two_titles_whose_first_choice_of_id_is_the_same_get_distinct_ids_whatever_their_order(project_dir):
    """'GPU 64695' and 'GPU 72984' both hash first to id 1197023602. The one whose name sorts first keeps it, the
    other takes its next choice, in either order of the layout; alone, each has its first."""
    def ids(titles):
        (rendered,) = grafana_dashboards(load_project(project_dir(dashboards={
            "colliding.py": _COLLIDING.format(titles=titles)})))
        return {p["title"]: p["id"] for p in rendered.model["panels"] if p["type"] != "row"}

    both = {"GPU 64695": 1197023602, "GPU 72984": 1832429027}
    assert ids('["GPU 64695", "GPU 72984"]') == ids('["GPU 72984", "GPU 64695"]') == both
    assert ids('["GPU 72984"]') == {"GPU 72984": 1197023602}


_IDS_SCRIPT = """
import json, sys
from pathlib import Path
from generator.artifacts import grafana_dashboards
from generator.project import load_project
print(json.dumps({d.uid: [p["id"] for p in d.model["panels"]] for d in grafana_dashboards(load_project(Path(sys.argv[1])))}))
"""


def test_ids_are_the_same_in_every_process(project_dir):
    """No id depends on anything a process draws anew (Python's hash() of text differs between processes): two
    processes with other hash seeds give this process' ids."""
    config = project_dir(dashboards={"training.py": _TRAINING.format(first="", row="")})
    here = {d.uid: [p["id"] for p in d.model["panels"]] for d in grafana_dashboards(load_project(config))}
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
        out = subprocess.run([sys.executable, "-c", _IDS_SCRIPT, str(config)], env=env, cwd=REPO, check=True,
                             capture_output=True, text=True).stdout
        assert json.loads(out) == here
