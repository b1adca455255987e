"""A Grafana panel's PromQL for a query, as a project's build writes it (its settings' labels, variable scope, scrape
resolution and naming look-back; packed, its strings single-quoted, as render.grafana writes a panel's): the text tests
read from a real Prometheus."""

from __future__ import annotations

from generator.model import Query
from generator.project import Project
from generator.promql import expression, label_lookback
from generator.promql_parens import fewest_parens
from generator.promql_text import packed
from generator.render.grafana import FREE_TEXT_VARIABLES, variable_scope


def panel_expression(project: Project, query: Query) -> str:
    settings = project.settings
    return packed(fewest_parens(expression(query, settings.labels, project.catalog, variable_scope(settings),
                                           resolution=f"{settings.scrape.seconds}s",
                                           named_within=label_lookback(settings.scrape.seconds))), FREE_TEXT_VARIABLES)
