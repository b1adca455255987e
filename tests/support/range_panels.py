"""A counter panel of the health dashboard as Grafana shows it over a dashboard range: an instant query at the
range's end `to`, its range macros filled from [from, to] in milliseconds, the variables at "All"."""

from __future__ import annotations

from typing import Any

from generator.artifacts import grafana_dashboards
from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.project import Project, load_project
from tests.support.projects import bundled_panel, bundled_project
from tests.support.prometheus_server import SCENE_RANGE, counted_inline, range_macros

VARIABLES = ("namespace", "pod", "node", "gpu", "cluster")


def health_panel(title: str, project: Project | None = None) -> dict[str, Any]:
    dashboard = next(d for d in grafana_dashboards(project or load_project()) if d.uid == "gpudash-health")
    return next(p for p in dashboard.model["panels"] if p.get("title") == title)


def shown_over(prometheus, panel: dict[str, Any], first: int, last: int) -> dict[str, float]:
    """{bar legend: value} of `panel` over [first, last] (ms), as Grafana asks: `${__range_ms}` exact, `$__range`
    and `$__range_s` rounded to whole seconds, one instant query at `to`."""
    (target,) = panel["targets"]
    assert target["instant"] is True
    length = last - first
    macros = {"__range": f"{round(length / 1000)}s", "__range_s": str(round(length / 1000)), "__range_ms": str(length)}
    result = prometheus.query(interpolate(target["expr"], {**macros, **variables({}, VARIABLES)}),
                              at=f"{last // 1000}.{last % 1000:03d}")
    bars = {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1]) for s in result}
    assert len(bars) == len(result)
    return bars


def minute_lines(prometheus, start: int, title: str, selected: dict[str, str], scrapes: int,
                 step: int) -> dict[int, dict[str, float]]:
    """{minute: {legend: value}} of the bundled panel `title` at each minute of a range of `scrapes` scrapes `step` s
    apart from `start` (a range query over it, as Grafana sends it), the variables `selected` (others at All)."""
    (target,) = [t for t in bundled_panel(title)["targets"] if not t.get("instant")]
    expr = interpolate(counted_inline(target["expr"], bundled_project()),
                       {**range_macros(f"{scrapes * step}s"), "__interval": "60s", "__rate_interval": "120s",
                        **variables(selected, ("namespace", "pod", "node", "gpu"))})
    minutes = range(1, scrapes * step // 60)
    shown = prometheus.query_at(expr, start + 60, len(minutes), 60)
    return {minute: {render_legend(target["legendFormat"], s["metric"]): round(float(s["value"][1]), 9)
                     for s in shown[at]} for minute, at in zip(minutes, sorted(shown))}


def bundled_at(prometheus, title: str, at: float, **selected: str) -> dict[str, float]:
    """{legend: value} of the bundled panel `title` as an instant query at `at` over a range holding the whole scene
    (SCENE_RANGE), the variables `selected` (others at All), values rounded to 9 places."""
    (target,) = bundled_panel(title)["targets"]
    expr = interpolate(target["expr"], {**SCENE_RANGE, **variables(selected, VARIABLES)})
    return {render_legend(target["legendFormat"], s["metric"]): round(float(s["value"][1]), 9)
            for s in prometheus.query(expr, at=at)}


def panel_at(prometheus, project: Project, panel: dict[str, Any], at: float, span: int,
             **selected: str) -> dict[str, float]:
    """{legend: value} of every target of `panel` (of `project`'s build) as an instant query at `at` over a dashboard
    range of `span` seconds ($__interval 60s, $__rate_interval 120s), the variables `selected` (others at All)."""
    shown: dict[str, float] = {}
    for target in panel["targets"]:
        expr = interpolate(counted_inline(target["expr"], project),
                           {**range_macros(f"{span}s"), "__interval": "60s", "__rate_interval": "120s",
                            **variables(selected, ("namespace", "pod", "node", "gpu"))})
        for series in prometheus.query(expr, at=at):
            shown[render_legend(target["legendFormat"], series["metric"])] = float(series["value"][1])
    return shown
