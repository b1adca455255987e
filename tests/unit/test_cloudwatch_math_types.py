"""Every metric-math expression gpudash can plan, not only those of the shipped dashboards, keeps to the
argument types the user guide documents: each field of the counters CSV the defaults read (gauges,
counters, fields with labels of their own), each aggregation, grouping and increase/rate form, on both
agent pipelines and on the Container Insights add-on, for widgets and alarms. The expression is typed
with its query as the array (GROUP BY) or single series (no GROUP BY) it returns. On the classic pipeline and the
Container Insights add-on (both publish DCGM's blanks) a widget of one line guards it with IF; an array of lines has
no documented guard and carries none."""

from __future__ import annotations

import itertools

import pytest

from generator.cloudwatch_query import Unsupported
from generator.container_insights import NotPublished, source_plan
from generator.lint.metric_math import ARRAY, SERIES, Kind, kind_of
from generator.model import Query
from generator.project import load_project

GROUPINGS = [(), ("pod",), ("namespace", "pod"), ("node",), ("node", "gpu"), ("gpu",), ("node", "gpu", "mig_instance"),
             ("model",), ("container",)]
SETTINGS = {"otel": "", "classic": "agent:\n  pipeline: classic\n",
            "container-insights": "cloudwatch:\n  source: container-insights\n"}


@pytest.mark.parametrize("source", sorted(SETTINGS))
def test_every_planned_expression_is_a_documented_form(project_dir, source):
    project = load_project(project_dir(SETTINGS[source]))
    settings, catalog = project.settings, project.catalog
    checked, guards = 0, 0
    for field in catalog:
        increases = (False, True) if field.is_counter else (False,)
        for aggregation, by, increase, alarm in itertools.product(("avg", "min", "max", "sum", "count"), GROUPINGS,
                                                                   increases, (False, True)):
            try:
                plan = source_plan(Query(field.name, aggregation, by, as_increase=increase), catalog, settings,
                                   settings.cloudwatch.period, alarm=alarm)
            except (Unsupported, NotPublished):
                continue
            if plan.math is None:
                continue
            query = Kind(ARRAY, "q1") if plan.group else Kind(SERIES)
            # {p}: PERIOD() of the widget's hidden metric line (MathError on an undocumented form)
            shown = kind_of(plan.math.format(q="q1", p="PERIOD(p1)"), {"q1": query, "p1": Kind(SERIES, metric=True)})
            checked += 1
            guards += "IF(" in plan.math
            if source != "otel" and not alarm and aggregation != "count":  # a line's guard, on one line only
                assert ("IF(" in plan.math) == (shown.name == SERIES), plan.math
    assert checked > 50
    assert bool(guards) == (source != "otel")  # blank guards where blanks are published
