"""preview --sample writes the counters' recordings over its history with `promtool tsdb create-blocks-from rules`.
Prometheus 2.x's promtool writes nothing, exit 0, when its --start lies less than an evaluation interval before a 2 h
block boundary (prometheus/prometheus#19714): the sample's history then had no recordings and preview failed with an
internal error, about one run in a few hundred (the start follows the clock). Here the history starts one second
before a boundary, every time."""
from __future__ import annotations

import json
import urllib.parse
import urllib.request

import pytest

from generator.preview import sample
from generator.promql import counted_fields
from generator.project import load_project
from generator.render.alarms import counted_group
from tests.support.prometheus_server import binary


@pytest.mark.parametrize("before", [1, 15, 29], ids=lambda s: f"{s}s before a 2 h boundary")
def test_the_sample_holds_its_counters_recordings_whatever_the_clock(before):
    binary("promtool")
    project = load_project()
    recorded = counted_group(counted_fields([q for d in project.grafana_definitions() for q in d.queries()
                                             if not q.raw_promql], project.catalog),
                             project.catalog, project.settings)
    range_s = 900.0
    begin = 7200 * 245_000 - before  # a 2 h boundary of 2025
    end = begin + range_s + 600
    assert sample.backfill_start(begin, recorded["interval"]) < begin - 30
    names = "|".join(rule["record"] for rule in recorded["rules"])
    query = urllib.parse.urlencode({"query": f'count({{__name__=~"{names}"}})', "time": f"{end - 60:.0f}"})
    with sample.serve(range_s, end, project.settings.scrape.job_name, recorded=recorded) as url:
        with urllib.request.urlopen(f"{url}/api/v1/query?{query}", timeout=30) as answer:
            result = json.load(answer)["data"]["result"]
    assert result and float(result[0]["value"][1]) > 0, "no counter recording at the history's end"
