"""Every CloudWatch widget and alarm reads the truth of each phase of a fleet's hours (tests/support/phase_story.py):
GPUs idle and held by no pod for an hour, then held; the GPU node group scaled to zero; back on new nodes.

The random fleets of test_cloudwatch_random_fleets.py stand still for 35 minutes; here the same kinds of fleet
(MIG beside whole GPUs, one pod name in two namespaces, GPUs pods share, `Hostname`/`hostname`/none, per-process
exporters) change under the agent: series without pod labels end and the pods' series begin on the same GPUs, every
series ends, and new nodes' series begin. Through the agent model of the build's own configuration, each widget's
every period inside a phase is compared with mixed_fleet.truth of that phase's fleet (nothing drawn while the node
group is at zero), the "Pods on GPUs" table every 10 minutes, and each bundled rule's alarms every 5 minutes from 45
minutes into a phase with what its Prometheus twin names (random_fleet.firing; the twin itself runs in
tests/integration/test_phase_story_twins.py). Where a dashboard's header says a line reads otherwise, the line is
held to what it says, as in test_cloudwatch_random_fleets. A counter whose series begins in a period reads the
growth from its first scrape there (9/10 of the rate at 30 s scrapes: docs/cloudwatch.md, "from the pod's first
scrape", "as a new pod does"), so that period is passed over for the counters, and the minute-values' first two
minutes (a node that came within the last 3 minutes, the header says). Written against issue 10; every value was
found true.
"""

from __future__ import annotations

import json
import pytest

from generator.artifacts import build
from generator.model import Query
from generator.output import encode
from generator.render.cloudwatch import panel_title
from tests.support import cloudwatch_eval, mixed_fleet, phase_story, random_fleet
from tests.support.cloudwatch_widgets import close, header, panel, said, widgets
from tests.support.mig_variant import firing_contributors, variant_project
from tests.unit.test_cloudwatch_random_fleets import SEVERAL, _expected

CASES = [(0, "otel", "shared"), (6, "otel", "per-process"), (1, "classic", "")]
CLASSIC = "agent:\n  pipeline: classic\n"


def _story(folder, seed: int, pipeline: str, sharing: str):
    """(project, files, the phases, the datapoints the agent published of them)."""
    story = phase_story.phases(seed, bool(sharing), per_process=sharing == "per-process")
    settings = (CLASSIC if pipeline == "classic" else "") + ("exporter:\n  virtual_gpus: true\n" if sharing else "")
    project = variant_project(folder, settings)
    files = encode(build(project, grafana=False))
    return project, files, story, phase_story.published(files, story)


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """Each case's story, drawn once for the module's three tests."""
    made: dict[tuple, tuple] = {}

    def story(*case):
        if case not in made:
            made[case] = _story(tmp_path_factory.mktemp("-".join(map(str, case)) or "story"), *case)
        return made[case]
    return story


def _shown(properties, points, end: int) -> dict[str, dict[int, float]]:
    """The widget's lines over [0, end); a widget of its own relative range (the minute-values: -PT5M) drawn at
    every 5 minutes, its periods then gathered."""
    if not properties.get("start"):
        return {label: series for label, series in cloudwatch_eval.widget(properties, points, 0, end).items() if series}
    shown: dict[str, dict[int, float]] = {}
    for at in range(600, end + 1, 300):
        for label, series in cloudwatch_eval.widget(properties, points, 0, at).items():
            shown.setdefault(label, {}).update(series)
    return shown


@pytest.mark.parametrize("seed, pipeline, sharing", CASES)
def test_every_widget_reads_the_truth_of_each_phase(drawn, seed, pipeline, sharing):
    project, files, story, points = drawn(seed, pipeline, sharing)
    end, checked = story[-1][1], 0
    for path, properties in widgets(files):
        title = panel_title(properties["title"])
        if title == "Pods on GPUs":
            continue  # a table of now: below
        query = panel(project, path, title, "gpu-cluster").queries[0]
        shown = _shown(properties, points, end)
        period = properties["period"]
        for start, stop, fleet in story:
            expected = _expected(project, files, path, title, query, fleet) if fleet else {}
            if expected is None:
                continue
            several = random_fleet.several_instances(fleet) if said(header(files, path), title, SEVERAL) else set()
            first = start + (300 if start and query.metric in mixed_fleet.COUNTERS else 0) + \
                (120 if start and period < 300 else 0)
            for label in (set(shown) | set(expected)) - several:
                for at in range(start, stop, period):
                    if at < first or at + period > stop or \
                            (properties.get("start") and not any(at in s for s in shown.values())):
                        continue
                    value, truth = shown.get(label, {}).get(at), expected.get(label)
                    if pipeline == "classic" and truth is None and value is not None and value > 1e13:
                        continue  # the JSON path publishes DCGM's blank: a line shows it where the header says so
                    assert (value is None) == (truth is None) and (value is None or close(value, truth)), \
                        (title, label, at, value, truth)
                    checked += 1
    assert checked > 2000


@pytest.mark.parametrize("seed, pipeline, sharing", CASES)
def test_the_pods_on_gpus_table_lists_each_phases_pods(drawn, seed, pipeline, sharing):
    project, files, story, points = drawn(seed, pipeline, sharing)
    (table,) = [p for _, p in widgets(files) if panel_title(p["title"]) == "Pods on GPUs"]
    for start, stop, fleet in story:
        counted = mixed_fleet.truth(Query("DCGM_FI_DEV_GPU_TEMP", "count", ("namespace", "pod")), {}, fleet=fleet) \
            if fleet else {}
        several = random_fleet.several_instances(fleet) if pipeline == "classic" else set()
        for at in range(start + 600, stop + 1, 600):
            pods = {label: series[max(series)] for label, series in
                    cloudwatch_eval.widget(table, points, 0, at, now=at).items() if series}
            assert {k: v for k, v in pods.items() if k not in several} == \
                {k: v for k, v in counted.items() if k not in several}, (at, pods, counted)


@pytest.mark.parametrize("seed, pipeline, sharing", CASES)
def test_every_bundled_alarm_names_each_phases_truth(drawn, seed, pipeline, sharing):
    project, files, story, points = drawn(seed, pipeline, sharing)
    requests = json.loads(files["cloudwatch/alarms.json"])["alarms"]
    fired = 0
    for alarm in project.alarms:
        if alarm.absent or alarm.id not in random_fleet.firing(()):
            continue
        mine = [r["Request"] for r in requests if {"Key": "gpudash:rule", "Value": alarm.id} in r["Request"]["Tags"]]
        for start, stop, fleet in story:
            expected = random_fleet.firing(fleet)[alarm.id] if fleet else set()
            for at in range(start + 2700, stop + 1, 300):
                named = firing_contributors(mine, points, at)
                assert named == expected, (alarm.id, at, sorted(named), sorted(expected))
                fired += len(named)
    assert fired > 20
