"""Two exporter pods serving one GPU at once (a DaemonSet rollout with maxSurge) over part of a period: a gauge's
mean weighs the overlap twice.

The rollout of tests/support/exporter_overlap.py, with the overlap cut to two minutes: the old exporter pod scraped on
the half minute until 720 s (its reading taken 1 s before), the new one 10 s past each half minute from 600 s (its
reading taken at 12 s past a half minute). The GPU draws 100 W until 720 s and 300 W from then on (a job starting as
the old pod leaves). Its mean over the period 600-900 s is 220 W (120 s at 100 W, 180 s at 300 W), what Grafana's
per-GPU panel draws over it (at each instant the latest of the copies' readings). On CloudWatch every reading of
either pod is an observation of the GPU's series (each exporter pod is its own target, scraped at its own instant,
and no processor merges points across targets), so the period's AVG holds the overlap's readings twice: 9 at 100 W
and 5 at 300 W, 171.4 W; so does a pod's total per scrape ("Power draw of each pod's GPUs": one total per scrape of
either pod). Readings steady through the overlap read true (test_cloudwatch_overlap_pod_totals.py); counters are
told apart per exporter revision (test_cloudwatch_exporter_overlap.py). No query or processor weighs the copies
once, so the truth is pinned (strict xfail) and said in docs/cloudwatch.md ("Two exporter pods on one node") and in
`gpudash verify`'s "exporter rollout overlap" warning, where a DaemonSet with maxSurge above 0 is named. The
Prometheus rules of a gauge's mean or total over a period read the copy read 10 minutes before alone while both serve
the GPU (220 W in their story; both, 185.7 W, where neither was:
tests/integration/test_prometheus_overlap_gauge_weights.py): the twins differ there.
"""

from __future__ import annotations

import json

import pytest

from generator.checks.kube import _rollout_overlap
from tests.support import cloudwatch_eval
from tests.support import exporter_overlap as overlap

OLD_UNTIL, NEW_FROM, CHANGE = 720, 600, 720
TITLES = ("cloudwatch/dashboards/gpudash-gpu-cluster-overview.json", "Power draw"), \
    ("cloudwatch/dashboards/gpudash-gpu-cluster-by-pod.json", "Power draw of each pod's GPUs")
POOLED = (9 * 100 + 5 * 300) / 14  # the old pod's 4 readings and the new pod's 5 at 100 W, the new pod's 5 at 300 W
TRUE = (120 * 100 + 180 * 300) / 300  # the GPU's mean draw over 600-900 s
_COUNTERS_PAGE = overlap.exporter_page


def _watts(taken: float) -> float:
    return 100.0 if taken < CHANGE else 300.0


def _page(host_label: str, host: str, taken: float, *more) -> str:
    labels = (f'gpu="0",UUID="GPU-0",device="nvidia0",modelName="NVIDIA A10G",{host_label}="{host}",'
              'pod="train-0",namespace="ml",container="main"')
    return (_COUNTERS_PAGE(host_label, host, taken, *more)
            + f"# TYPE DCGM_FI_DEV_POWER_USAGE gauge\nDCGM_FI_DEV_POWER_USAGE{{{labels}}} {_watts(taken):g}\n")


@pytest.fixture
def drawn(monkeypatch) -> dict[str, dict[int, float]]:
    """{widget title: its one line} on agent.pipeline: otel over the half hour."""
    monkeypatch.setattr(overlap, "exporter_page", _page)
    files, points = overlap.published_points("otel", old_until=OLD_UNTIL, new_from=NEW_FROM)
    lines = {}
    for path, title in TITLES:
        (properties,) = [w["properties"] for w in json.loads(json.loads(files[path])["DashboardBody"])["widgets"]
                         if w["type"] == "metric" and w["properties"]["title"] == title]
        (lines[title],) = cloudwatch_eval.widget(properties, points, 0, overlap.END).values()
    return lines


def test_the_premise_the_old_pods_readings_are_in_the_overlaps_period_only():
    read = overlap.scrapes(OLD_UNTIL, NEW_FROM)
    in_period = [(who, taken) for who, scraped, taken in read if 600 <= scraped < 900]
    assert sum(who == "old" for who, _ in in_period) == 4 and sum(who == "new" for who, _ in in_period) == 10
    assert sum(_watts(taken) for _, taken in in_period) / len(in_period) == pytest.approx(POOLED)


def test_what_cloudwatch_shows_weighs_the_overlap_twice(drawn):
    for title, line in drawn.items():
        assert line == {0: pytest.approx(100), 300: pytest.approx(100), 600: pytest.approx(POOLED),
                        900: pytest.approx(300), 1200: pytest.approx(300), 1500: pytest.approx(300)}, title


@pytest.mark.xfail(strict=True, reason="both exporter pods' readings are observations of the GPU's series and of the "
                   "pod's totals: the overlap's two minutes weigh twice, 171.4 W for 220; each pod is a target of its "
                   "own and Metrics Insights averages every observation of a period (a documented limit; said in the "
                   "widgets' header, SURGE_WEIGHED, docs and verify)")
def test_the_overlaps_period_reads_the_gpus_mean_draw(drawn):
    for title, line in drawn.items():
        assert line[600] == pytest.approx(TRUE), title


def test_the_header_says_a_periods_mean_weighs_an_overlap_twice(drawn):
    """What each widget draws (above: the overlap's period at 171.4 W) is said in its dashboard's header; it was said
    of counters only (SURGE_COUNTED), in docs/cloudwatch.md and by `gpudash verify`."""
    from generator.cloudwatch_query import SURGE_WEIGHED
    from tests.support.cloudwatch_widgets import header, notes

    files = overlap.overlap_build("otel")
    for path, title in TITLES:
        assert SURGE_WEIGHED in notes(header(files, path))[title], title
    assert all(line[600] == pytest.approx(POOLED) for line in drawn.values())  # what the words say: weighed twice


def surge_check():
    """`gpudash verify`'s "exporter rollout overlap" check of a DaemonSet rolling with maxSurge 1 (the bundled
    settings)."""
    class Spec:  # the DaemonSet's answer, as much of it as the check reads
        source, path = "daemonsets", "items[0]"

        def at(self, path, required=True):
            return Rolling() if path == "spec.updateStrategy" else None

    class Rolling:
        def get(self, key, kind, default=None):
            return "RollingUpdate" if key == "type" else default

        def at(self, path, required=True):
            return Surge()

    class Surge:
        def get(self, key, kind, default=None):
            return 1 if key == "maxSurge" else default

    from generator.settings import load_settings
    return _rollout_overlap("exporter rollout overlap", Spec(), load_settings(None))


def test_verify_says_it_where_a_daemonset_rolls_with_a_surge():
    check = surge_check()
    assert "gauge's mean" in check.detail and "twice" in check.detail, check.detail
