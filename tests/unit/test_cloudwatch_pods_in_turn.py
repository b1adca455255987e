""""Pods on GPUs" on CloudWatch lists every pod the exporter names in turn on a GPU they share, as Grafana's table does.

An exporter without KUBERNETES_VIRTUAL_GPUS names a GPU pods share by time-slicing under one of them per scrape, not
always the same one (dcgm-exporter #340; tests/support/mixed_fleet `Node(moves=1)`: scrape k names pod k mod n).
Grafana's table shows every pod a scrape within the last 4 scrape intervals named on a GPU (promql.label_lookback,
120 s at 30 s scrapes; tests/integration/test_pod_lookback.py on a real Prometheus). Three pods in turn at 30 s: a
minute holds two scrapes, so a table drawn a minute at a time listed two of the three, another two each minute. The
table's period is the look-back (render/cloudwatch.table_period): the fleet goes through the agent model and the
widget is drawn by the documented semantics (tests/support/cloudwatch_eval) at moments through a few periods.
"""

from __future__ import annotations

import pytest

from generator.render.cloudwatch import panel_title
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.agent_points import through_agent
from tests.support.built import files as built_files
from tests.support.cloudwatch_widgets import header, notes, widgets
from tests.support.mixed_fleet import Gpu, Instance, Node

STEP, END = 30, 1800
BY_POD = "cloudwatch/dashboards/gpudash-gpu-cluster-by-pod.json"
SHARING = (("team-t", "ts-0"), ("team-t", "ts-1"), ("team-t", "ts-2"))
IN_TURN = Node("gpu-node-t3", "hostname", "nvidia-dcgm-exporter-t3t3t", (
    Gpu(0, temp=50, power=200, sm_clock=1500, xid=0, energy_mw=200_000, replays_per_s=0, memory_temp=50, util=3,
        instances=(Instance(pod=SHARING[0], fb_used=12000, fb_free=12000, engine=0.03, also=SHARING[1:]),)),
), moves=1)
FLEET = (mixed_fleet.FLEET[0], IN_TURN)  # gpu-node-a: team-a/worker-0 on a GPU of its own
ALL = {"Pod team-a/worker-0", *(f"Pod {ns}/{pod}" for ns, pod in SHARING)}


def _table(settings: str) -> tuple[dict, dict, list]:
    files = built_files(settings)
    (properties,) = [p for path, p in widgets(files) if panel_title(p["title"]) == "Pods on GPUs"]
    return files, properties, through_agent(files, STEP, END, FLEET)


@pytest.mark.parametrize("settings", ["{}\n", "agent:\n  pipeline: classic\n"], ids=["otel", "classic"])
def test_pods_on_gpus_lists_every_pod_named_in_turn_on_a_shared_gpu(settings):
    files, table, points = _table(settings)
    assert table["period"] == 120  # the look-back: 4 scrape intervals of 30 s
    for now in range(END - 240, END + 1, 10):  # through two periods, at every 10 s
        drawn = cloudwatch_eval.widget(table, points, now - 6 * 3600, now, now=now)
        listed = {label: list(series.values()) for label, series in drawn.items() if series}
        assert set(listed) == ALL, (now, listed)
        assert all(len(values) == 1 for values in listed.values()), (now, listed)  # one column
        if "classic" not in settings:  # each pod holds one GPU (the OTel pipeline's count per scrape)
            assert listed == {label: [1.0] for label in ALL}, (now, listed)
    said = notes(header(files, BY_POD))["Pods on GPUs"]
    assert any("the latest whole period of 120 s (at least the 4 scrape intervals Grafana's per-pod panels look back"
               in note and "pods named in turn on a GPU they share included" in note for note in said), said


def test_the_table_drawn_at_any_other_period_shows_nothing():
    """Actions > Period override: at a period other than its own the table shows no value (a minute listed 2 of the
    3 pods; 5 minutes would list a pod that left within them)."""
    _, table, points = _table("{}\n")
    for period in (60, 300):
        drawn = cloudwatch_eval.widget(table, points, END - 6 * 3600, END, period=period, now=END)
        assert not any(series for series in drawn.values()), period


ARRIVES = 1500  # the first scrape naming team-n/new-0, on a GPU of its own
NEW = Node("gpu-node-n", "hostname", "nvidia-dcgm-exporter-n0n0n", (
    Gpu(0, temp=50, power=200, sm_clock=1500, xid=0, energy_mw=200_000, replays_per_s=0, memory_temp=50, util=3,
        instances=(Instance(pod=("team-n", "new-0"), fb_used=12000, fb_free=12000, engine=0.03),)),))


def test_pods_on_gpus_reads_the_latest_look_back_the_console_draws():
    """A pod that came to a GPU is listed from the first moment the console draws a period holding its first scrape:
    the latest whole period of the look-back (120 s) that ended a minute ago, live data off. The table's own range was
    two periods (-PT4M): the period ending now, not drawn for a minute, left the one 240 to 120 s ago drawn, and
    new-0 was listed 2 minutes after its first scrape where Grafana lists it at once (and one that left 2 minutes
    longer)."""
    from tests.support.agent_points import AGENT_FILE, Agent, Scrape, agent_config, target_labels

    files = built_files("{}\n")
    (table,) = [p for path, p in widgets(files) if panel_title(p["title"]) == "Pods on GPUs"]
    config, job = agent_config(files[AGENT_FILE])
    node_a = mixed_fleet.FLEET[0]
    points = Agent(config, job).run(
        [Scrape(k * STEP, mixed_fleet.payload(node, k * STEP, STEP), target_labels(job, node.name))
         for k in range(-2, END // STEP) for node in (node_a, NEW) if node is node_a or k * STEP >= ARRIVES])
    for now in range(ARRIVES, END + 1, 10):
        drawn = cloudwatch_eval.widget(table, points, now - 6 * 3600, now, now=now)
        listed = {label for label, series in drawn.items() if series}
        # the scrapes of the latest 120 s the console draws: those in [now - 180, now - 60)
        expected = {"Pod team-a/worker-0"} | ({"Pod team-n/new-0"} if now - 60 > ARRIVES else set())
        assert listed == expected, (now, listed)
        assert all(len(series) == 1 for series in drawn.values() if series), now  # one column
    assert table["start"] == "-PT3M"
    said = notes(header(files, BY_POD))["Pods on GPUs"]  # its period ends 1 to 2 minutes ago and lasts 2
    assert any("a pod that left or took a GPU within the last 4 minutes may be counted as it was then" in note
               for note in said), said
