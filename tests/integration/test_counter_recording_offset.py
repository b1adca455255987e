"""A counter's rate panel reads its truth whatever offset in the interval Prometheus evaluates its recordings at.

Prometheus evaluates a rule group at an offset in its interval, a hash of the group's name and file (Prometheus 2.42,
rules.Group.EvalTimestamp), and stamps each recording with that evaluation's time. Started on the build's
prometheus/rules.yaml, Prometheus 2.42 evaluated the 30 s counter groups 1.2, 3.1, 13.1, 15.7, 16.0 and 19.4 s past
the 30 s grid (two paths of the file). Each step's recorded values are the same at any offset (the
rules read the step at or before the evaluation), but a step's recording is stamped `offset` seconds after it, so a
panel's `sum_over_time(...[w])` at time t holds the steps recorded by t: it reads what the panel evaluated on the grid
reads at t - offset. The panel's description says so (promql.recording_note: "the window ends at the GPU's latest step
evaluated, up to 30 s and that offset before the panel's time"); before it said "up to 30 s", and this case read
PCIe replays 0.1667/s for GPU 0 at 12:07 against that truth's 0.1733/s, recorded 13 s past the grid.
prometheus_server.recorded records on the grid (offset 0: test_shared_gpu_counters); here the recordings are stamped
13 and 25 s past it, and every GPU, at every instant, reads the truth of `offset` seconds before (instants 7 and 19 s
past the grid: neither offset puts t - offset on the grid, where Prometheus 2's closed range holds one step more).
"""

from __future__ import annotations

import pytest

import tests.integration.test_shared_gpu_counters as shared
from generator.promql import recording_note
from tests.integration.test_shared_gpu_counters import COUNTER_PANELS, SCRAPES, STEP, _openmetrics, _panel, _project
from tests.integration.test_shared_gpu_counters import test_a_counter_panel_reads_the_gpus_one_series as _panel_case
from tests.support.prometheus_server import backfilled_fixture, counted_read, recorded

OFFSETS = (13, 25)
# a server of the shared story for each offset: recordings of one name stamped at two offsets would both be read
servers = {offset: backfilled_fixture(f"recording-offset-{offset}", _openmetrics, SCRAPES * STEP, STEP)
           for offset in OFFSETS}
recorded_13, recorded_25 = servers.values()


@pytest.mark.parametrize("offset", OFFSETS)
def test_a_counter_rate_panel_reads_the_truth_of_its_latest_evaluated_step(request, offset, monkeypatch):
    backfilled = request.getfixturevalue(f"recorded_{offset}")
    prometheus, start = backfilled
    group = counted_read([_panel(title)["targets"][0]["expr"] for title, *_ in COUNTER_PANELS], _project())
    asked = prometheus.query_at

    def past_the_grid(expr, first, count, step, instant=False):  # recorded's evaluations, each `offset` s later
        return asked(expr, first + offset, count, step, instant)

    with monkeypatch.context() as patched:
        patched.setattr(prometheus, "query_at", past_the_grid)
        recorded(prometheus, group, start - 600, start + SCRAPES * STEP + 600)
    title, metric, window, rate = COUNTER_PANELS[0]
    assert rate and title == "PCIe replays"
    assert "up to 30 s and that offset before the panel's time" in recording_note(STEP)
    truth = shared.panel_truth
    monkeypatch.setattr(shared, "panel_truth",
                        lambda gpu, phase, begun, at, *rest: truth(gpu, phase, begun, at - offset, *rest))
    _panel_case(backfilled, title, metric, window, rate)
