"""A counter's rate panel reads the truth whatever offset in the interval Prometheus evaluates its recordings at.

Prometheus evaluates a rule group at an offset in its interval, a hash of the group's name and file (Prometheus 2.42,
rules.Group.EvalTimestamp), and stamps each recording with that evaluation's time. Started on the build's
prometheus/rules.yaml, Prometheus 2.42 evaluated the 30 s counter groups 1.2, 3.1, 13.1, 15.7, 16.0 and 19.4 s past
the 30 s grid (two paths of the file; found by s46 R). Each step's recorded values are the same at any offset (the
rules read the step at or before the evaluation), but a sample is stamped `offset` seconds after its step, so a
panel's `sum_over_time(...[w])` at a time less than `offset` past the grid ends its window a step earlier (and at
exactly `offset` past it, Prometheus 2's closed range, holds one step more): the window does not end "at the GPU's
latest step, up to 30 s before the panel's time" (recording_note), and a rate that changes reads another value.
prometheus_server.recorded records at offset 0, so test_shared_gpu_counters passes; here the same case, its rules
evaluated (and stamped) 13 s past the grid, reads PCIe replays 0.1667/s for GPU 0 at 12:07 where its truth is
0.1733/s (at offsets 0 to 6 s it passes; 7 s reads 11 steps, 0.1636/s; 8 to 29 s a step early).
Strict xfail until the panels (or the stated truth and recording_note) account for the evaluation offset.
"""

from __future__ import annotations

import pytest

from tests.integration.test_shared_gpu_counters import COUNTER_PANELS, SCRAPES, STEP, _panel, _project
from tests.integration.test_shared_gpu_counters import backfilled  # noqa: F401 (a fixture of this module's own)
from tests.integration.test_shared_gpu_counters import test_a_counter_panel_reads_the_gpus_one_series as _panel_case
from tests.support.prometheus_server import counted_read, recorded

OFFSET = 13  # seconds past the 30 s grid: a real Prometheus 2.42's offset for one of the build's counter groups


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="a recording evaluated past the grid (as Prometheus does) moves a rate panel's window a step")
def test_a_counter_rate_panel_reads_the_truth_with_its_recordings_evaluated_past_the_grid(backfilled,  # noqa: F811
                                                                                           monkeypatch):
    prometheus, start = backfilled
    group = counted_read([_panel(title)["targets"][0]["expr"] for title, *_ in COUNTER_PANELS], _project())
    asked = prometheus.api

    def past_the_grid(path, **params):  # recorded's evaluations (one range query a rule), each OFFSET s later
        return asked(path, **({**params, "start": params["start"] + OFFSET} if path == "query_range" else params))

    with monkeypatch.context() as patched:
        patched.setattr(prometheus, "api", past_the_grid)
        recorded(prometheus, group, start - 600, start + SCRAPES * STEP + 600)
    title, metric, window, rate = COUNTER_PANELS[0]
    assert rate and title == "PCIe replays"
    _panel_case(backfilled, title, metric, window, rate)
