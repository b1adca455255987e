"""The combined fleet story (test_combined_fleet_story) with gpu-node-w's NEW copy (exporter rolled at scrapes 7-9)
writing DCGM_FI_DEV_FB_FREE as DCGM's blank at its first scrape only (scrape 7, +26 s: its DCGM not ready), or not at
all (its counters CSV leaves the field out), while OLD still answers. The node's GPUs do not change between OLD's
scrape 7 (+11 s) and OLD's scrape 8 (+11 s, before team-c/worker-0 takes GPU 0 at +13 s), so from NEW's scrape 7 to
OLD's scrape 8 every panel's truth is the story's state: OLD's complete copy holds each GPU's framebuffer whole.

promql.older_samples judged each field apart: NEW's FB_USED is fresher, so OLD's FB_USED is left out of the fresh
tier, while OLD's FB_FREE stays (NEW's is the blank, or none). No copy then holds both fields, and 'Framebuffer in use'
loses both gpu-node-w GPUs from 4 s after NEW's scrape until OLD's next: 0.48 for 0.3713 at All (the mean of the three
other GPUs), nothing for 0.4167 with team-a/solo-0 picked, nothing for 0.2083 with gpu-node-w picked; 'Framebuffer used
share by pod' leaves team-a/solo-0 (0.4167) out from 2 s after. Read right at 8c3fac51 (the higher fresh copy: OLD's).
Now a copy is complete for older_samples only where every field the panel reads of it has a
reading (`together`): NEW is no complete copy until its FB_FREE reads, and OLD stays the GPU's."""

from __future__ import annotations

import pytest

import tests.integration.test_combined_fleet_story as story
from tests.integration.test_combined_fleet_story import _wrong_panels, dashboards, project  # noqa: F401 (fixtures)
from tests.support import mixed_fleet
from tests.support.prometheus_server import backfilled_fixture

NEW = "nvidia-dcgm-exporter-wn3w2"
FIELD = "DCGM_FI_DEV_FB_FREE"


def _story(dropped: bool):
    """The story's gauges (gpudash's job) with NEW's FB_FREE the blank at scrape 7, or `dropped` at every scrape."""
    original = story._written

    def written(copy, k, gpudash_job):
        rows = original(copy, k, gpudash_job)
        if copy.exporter_pod != NEW:
            return rows
        if dropped:
            return [(m, labels, v) for m, labels, v in rows if m != FIELD]
        return [(m, labels, mixed_fleet.NOT_SUPPORTED if m == FIELD and k == 7 else v) for m, labels, v in rows]

    def openmetrics(start: int) -> str:
        story._written = written
        try:
            return story.story(True)(start)
        finally:
            story._written = original
    return openmetrics


blank_path = backfilled_fixture("fresher-copy-fb-free-blank", _story(False), story.SCRAPES * story.SCRAPE,
                                story.SCRAPE)
dropped_path = backfilled_fixture("fresher-copy-fb-free-dropped", _story(True), story.SCRAPES * story.SCRAPE,
                                  story.SCRAPE)

PICKS = {"All": {}, "team-a/solo-0": {"namespace": "team-a", "pod": "solo-0"},
         "node gpu-node-w": {"node": "gpu-node-w"}}
AT = [7 * story.SCRAPE + 32, 7 * story.SCRAPE + 35, 7 * story.SCRAPE + 40]  # NEW's scrape 7 is at +26 s, OLD's 8 +41


@pytest.mark.parametrize("path", ["blank_path", "dropped_path"])
@pytest.mark.parametrize("pick", sorted(PICKS))
def test_a_fresher_copy_missing_one_field_keeps_the_gpu(request, path, pick, project, dashboards):
    prometheus, start = request.getfixturevalue(path)
    wrong = _wrong_panels(prometheus, start, project, dashboards, PICKS[pick], [start + at for at in AT])
    assert not wrong, "\n".join(map(str, wrong))


MIG_NEW = "nvidia-dcgm-exporter-mn3w2"


def _mig_story(start: int) -> str:
    """The story's gauges with gpu-node-mig's NEW copy writing FB_FREE of GPU 0's instance 1 as the blank at its
    first scrape (14, +19 s), OLD answering until scrape 16 (+4 s); nothing on the node changes until 540 s."""
    original = story._written

    def written(copy, k, gpudash_job):
        rows = original(copy, k, gpudash_job)
        if copy.exporter_pod != MIG_NEW or k != 14:
            return rows
        return [(m, labels, mixed_fleet.NOT_SUPPORTED
                 if m == FIELD and 'gpu="0"' in labels and 'GPU_I_ID="1"' in labels else v) for m, labels, v in rows]

    story._written = written
    try:
        return story.story(True)(start)
    finally:
        story._written = original


mig_path = backfilled_fixture("fresher-copy-mig-fb-free-blank", _mig_story, story.SCRAPES * story.SCRAPE, story.SCRAPE)
MIG_PICKS = {"All": {}, "team-b/worker-0": {"namespace": "team-b", "pod": "worker-0"}}
MIG_AT = [14 * story.SCRAPE + 30, 14 * story.SCRAPE + 33]  # NEW's scrape 14 is at +19 s, OLD's 15 at +34


@pytest.mark.parametrize("pick", sorted(MIG_PICKS))
def test_a_fresher_mig_copy_with_one_instance_blank_in_one_field_keeps_the_gpu(mig_path, pick, project, dashboards):
    prometheus, start = mig_path
    wrong = _wrong_panels(prometheus, start, project, dashboards, MIG_PICKS[pick], [start + at for at in MIG_AT])
    assert not wrong, "\n".join(map(str, wrong))
