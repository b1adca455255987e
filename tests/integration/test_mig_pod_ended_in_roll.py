"""The combined fleet story (test_combined_fleet_story) with team-a/worker-0 (MIG gpu-node-mig GPU 0, instance 1)
ending INSIDE gpu-node-mig's roll overlap: between OLD's scrape 15 (+4 s) and NEW's (+19 s). From NEW's scrape until
OLD's next, the two fresh copies disagree: OLD reads worker-0 on instance 1 (19,600 MiB, engine 0.8) and GPU 0 at
350 W; NEW, the newer scrape of the same GPU, reads instance 1 idle, 250 W and XID 43. Truth: NEW's (each node's
latest scrape tells its GPUs' state), at All and with a pod, namespace or node picked.

Shown before c75fe0bb: the higher copy, OLD's, on every per-GPU, fleet and per-MIG-instance panel (Power draw
350 W for 250, 'Framebuffer in use' 0.345 for 0.1, 'Framebuffer used per MIG instance' 19,600 MiB for 0 at All, and
the instance worker-0 left drawn at 19,600 with worker-0 picked) for up to an interval (promql.older_samples)."""

from __future__ import annotations

from contextlib import contextmanager

import pytest

import tests.integration.test_combined_fleet_story as story
from tests.integration.test_combined_fleet_story import _wrong_panels, dashboards, project  # noqa: F401 (fixtures)
from tests.support.prometheus_server import backfilled_fixture

ENDED = 15 * story.SCRAPE + 10  # between OLD's scrape 15 (+4 s) and NEW's (+19 s)


@contextmanager
def _ended_in_roll():
    """The story's module with team-a/worker-0's end moved into the overlap (the story's own tests untouched)."""
    before, story.ENDED = story.ENDED, ENDED
    try:
        yield
    finally:
        story.ENDED = before


def _story(gpudash_job: bool):
    written = story.story(gpudash_job)

    def openmetrics(start: int) -> str:
        with _ended_in_roll():
            return written(start)
    return openmetrics


gpudash_path = backfilled_fixture("mig-ended-in-roll-gpudash", _story(True), story.SCRAPES * story.SCRAPE, story.SCRAPE)
no_node_path = backfilled_fixture("mig-ended-in-roll-no-node", _story(False), story.SCRAPES * story.SCRAPE,
                                  story.SCRAPE)

PICKS = {"All": {}, "team-a/worker-0": {"namespace": "team-a", "pod": "worker-0"}, "pod worker-0": {"pod": "worker-0"},
         "namespace team-b": {"namespace": "team-b"}, "node gpu-node-mig": {"node": "gpu-node-mig"}}
# from 2 s after NEW's scrape 15 to 2 s before OLD's scrape 16 (the copies disagree), and just after OLD's scrape 16
AT = [15 * story.SCRAPE + 21, 15 * story.SCRAPE + 25, 15 * story.SCRAPE + 29, 16 * story.SCRAPE + 2,
      16 * story.SCRAPE + 6]


@pytest.mark.parametrize("path", ["gpudash_path", "no_node_path"])
@pytest.mark.parametrize("pick", sorted(PICKS))
def test_a_mig_pod_ended_inside_a_roll_is_read_from_the_newer_scrape(request, path, pick, project, dashboards):
    prometheus, start = request.getfixturevalue(path)
    with _ended_in_roll():
        wrong = _wrong_panels(prometheus, start, project, dashboards, PICKS[pick], [start + at for at in AT])
    assert not wrong, "\n".join(map(str, wrong))
