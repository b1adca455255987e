"""verify's Prometheus checks on a real Prometheus whose one exporter fails one scrape (a page Prometheus cannot parse:
`up` 0 and every series of the target marked stale until the next scrape), then, later, every scrape (stopped).
The project scrapes every second (scrape.interval: 1s, as the test's Prometheus does; timeout 1 s): verify reads the
series now and 2 s before. The checks run at instants chosen among the scrapes Prometheus stored (its answers to the
same query at the same instant do not change), not at whatever "now" the test reaches.

Truth: through the failed scrape (until the next one) the target is up, its GPU reports, its pod label arrives as
configured; once the exporter fails every scrape, from two intervals and a timeout after its first failure, the target
is down and no GPU reports."""

from __future__ import annotations

from contextlib import contextmanager

import pytest

from generator.checks import prometheus as prometheus_checks
from generator.clients import prometheus as prometheus_client
from generator.clients.options import Options
from generator.project import load_project
from tests.support.replay_exporter import ReplayExporter
from tests.support.scrape_scene import CountedAnswers, scraped_until
from tests.support.side_by_side import module_scenes, scene

# the exporter's answers (from 1) that fail: the 6th and the 11th (two lone failures: a failed scrape a loaded machine
# adds next to one leaves the other), and every one from the 16th
FAILED, STOPPED = (6, 11), 16
LABELS = 'gpu="0",UUID="GPU-0",Hostname="n0",namespace="ml",pod="p",container="main"'
PAGE = f"# TYPE DCGM_FI_DEV_GPU_TEMP gauge\nDCGM_FI_DEV_GPU_TEMP{{{LABELS}}} 60\n"
GARBAGE = "this is not a metrics page {\n"


@contextmanager
def _failing(tmp_path_factory):
    answers = CountedAnswers(lambda n: GARBAGE if n in FAILED or n >= STOPPED else PAGE)
    stored: list[int] = [0]

    def count(prometheus) -> None:
        stored[0] = int(max((float(s["value"][1]) for s in prometheus.query("count_over_time(up[10m])")), default=0))

    with ReplayExporter(answers) as exporter:
        # scraped until 6 of the failures from STOPPED on are stored: the checks' reads 2 s back fall among them
        with scraped_until(tmp_path_factory, "verify-failed-scrape", [exporter.address],
                       lambda: stored[0] >= STOPPED + 6, watch=count) as prometheus:
            ups = sorted((float(at), float(v)) for s in prometheus.query("up[10m]") for at, v in s["values"])
            yield prometheus, ups


scenes = module_scenes({"failing": _failing})
failing = scene("failing")


def _checks(failing, tmp_path, monkeypatch, at: float) -> dict[str, tuple[str, str]]:
    """verify's Prometheus checks as they read at `at`: {name: (status, detail)}."""
    prometheus, _ = failing
    (tmp_path / "gpudash.yaml").write_text("scrape:\n  interval: 1s\n  job_name: dcgm\n")
    project = load_project(tmp_path / "gpudash.yaml")
    monkeypatch.setattr(prometheus_client.Prometheus, "query", lambda self, expr: self.parses(expr, at)[0])
    options = Options(prometheus_url=prometheus.url, timeout=120)
    options.start()
    return {c.name: (c.status, c.detail) for c in prometheus_checks.checks(project, options)}


def _failures(ups: list[tuple[float, float]]) -> tuple[list[float], float]:
    """(the instants of the lone failed scrapes, each between two scrapes stored before it and one after, as the
    exporter's FAILED answers; the first instant of the last run of failures, the exporter stopped)."""
    up = [value == 1 for _, value in ups]
    lone = [ups[k][0] for k in range(2, len(ups) - 1) if up[k - 2] and up[k - 1] and not up[k] and up[k + 1]]
    last = max(k for k in range(len(ups)) if up[k])
    assert lone and len(ups) - last > 4, ups
    return lone, ups[last + 1][0]


@pytest.mark.parametrize("after", [0.2, 0.5, 0.9])
def test_one_failed_scrape_is_no_target_down_and_no_series_missing(failing, tmp_path, monkeypatch, after):
    for failed in _failures(failing[1])[0]:
        checks = _checks(failing, tmp_path, monkeypatch, failed + after)
        seen = {name: checks.get(name) for name in ("DCGM targets", "DCGM series", "workload pod label")}
        assert seen == {"DCGM targets": ("ok", "1 targets up"), "DCGM series": ("ok", "1 GPUs with a DCGM series"),
                        "workload pod label": ("ok", "'pod' as configured")}, f"{failed + after}: {checks}"


def test_an_exporter_failing_every_scrape_is_down_two_intervals_on(failing, tmp_path, monkeypatch):
    prometheus, ups = failing
    _, stopped = _failures(ups)
    checks = _checks(failing, tmp_path, monkeypatch, stopped + 3.5)
    instance = prometheus.query("up[10m]")[0]["metric"]["instance"]
    assert (checks["DCGM targets"], checks["DCGM series"]) == (
        ("fail", f"1 of 1 targets down (now and 2 s before): {instance}"),
        ("fail", "no DCGM_FI_* series (now or 2 s before)")), checks
