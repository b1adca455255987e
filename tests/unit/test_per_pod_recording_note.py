"""A per-pod counter rate panel (the by-pod dashboard's "Energy use rate of each pod's GPUs") reads each GPU's rate from
the counter's recordings as the per-GPU panels do (promql.recording_note(per_pod=True): "each with the GPU's rate as
the per-GPU panels read it"), so its window ends at the GPU's latest step evaluated, up to a scrape interval and the
rule group's evaluation offset before the panel's time (test_counter_recording_offset). The per-GPU panels'
description says so since 3fe9de08; the per-pod one said nothing of where its window ends, and says it
now.
"""

from __future__ import annotations

from generator.artifacts import grafana_dashboards
from generator.project import load_project
from generator.promql import recording_note

LAG = "up to 30 s and that offset before the panel's time"


def test_a_per_pod_counter_rate_panel_says_where_its_window_ends():
    (panel,) = [p for d in grafana_dashboards(load_project()) if d.uid.endswith("by-pod") for p in d.model["panels"]
                if p.get("title") == "Energy use rate of each pod's GPUs"]
    assert recording_note(30, per_pod=True) in panel["description"]  # the per-pod note is the panel's
    assert LAG in recording_note(30)  # the per-GPU panels' says it
    assert LAG in panel["description"]
