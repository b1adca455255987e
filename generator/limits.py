"""Settings whose CloudWatch dashboards CloudWatch would cut short: refused before anything is written or
published, naming the setting and the largest value that fits (a dashboard of more panels than a dashboard holds
widgets, naming its definition). Refused, not clamped: a clamped setting
shows fewer pods than the file says, and a warning scrolls by unread in CI. Both of CloudWatch's dashboard quotas
are kept: 2,500 metrics per dashboard and 500 per widget (a chart of top_pods lines and a hidden metric its math
reads the period from reads top_pods + 1)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from .dashboard_limit import (METRICS_PER_DASHBOARD, METRICS_PER_WIDGET, WIDGETS_PER_DASHBOARD, metrics_shown,
                              metrics_shown_at_most, widget_metrics, widget_metrics_at_most)
from .data_missing import counted
from .errors import InputError
from .settings import setting_place

LIMITS = ("top_pods", "top_gpus")  # the settings that decide how many lines a chart asks for


def checked_build(project, grafana: bool = True, placed=None, ahead: bool = False):
    """The artifact set generate writes and publish sends: built, then refused (an InputError) when CloudWatch
    would cut a dashboard short or the classic agent would feed a widget or alarm a wrong number. Without
    `grafana`, its Grafana dashboards are not rendered; `placed`, `ahead`: artifacts.build."""
    from .agent_truth import check_agent_truth
    from .artifacts import build

    artifacts = build(project, grafana=grafana, placed=placed, ahead=ahead)
    check_dashboards(project, artifacts)
    check_agent_truth(project, artifacts)
    return artifacts


def check_dashboards(project, artifacts) -> None:
    """Raise an input error when a CloudWatch dashboard of the set would show more metrics than CloudWatch
    draws (2,500): Metrics Insights' LIMIT of each per-pod or per-GPU chart adds up; or when one of its widgets would
    read more than a widget reads (500: check_widgets); or when it would hold more widgets than a dashboard holds
    (500: check_widget_count)."""
    check_widget_count(project, artifacts)
    bounds: dict[tuple[object, str], int] = {}
    totals = [(metrics_shown(d.body), d.name) for d in artifacts.cloudwatch_dashboards
              if _at_most(d, bounds) > METRICS_PER_DASHBOARD]  # the exact count only where it may matter
    over = [(total, name) for total, name in totals if total > METRICS_PER_DASHBOARD]
    if not over:
        check_widgets(project, artifacts)
        return
    settings = project.settings
    current = {key: getattr(settings.cloudwatch, key) for key in LIMITS}
    # each dashboard over the limit, with the value of the setting that adds most to it that would fit: the
    # smallest of these is the value that fits every dashboard (a dashboard with fixed metrics of its own,
    # such as per-GPU lines a total is summed from, may bind before the one with the most charts)
    candidates = []
    for total, name in over:
        growth = {key: _total_with(project, name, **{key: 2}) - _total_with(project, name, **{key: 1})
                  for key in LIMITS}
        key = max(LIMITS, key=lambda k: growth[k] * current[k])  # the setting that adds most
        fits = current[key] - -(-(total - METRICS_PER_DASHBOARD) // growth[key]) if growth[key] else 0
        candidates.append((fits, -total, name, key, growth))
    fits, total, name, key, growth = min(candidates)
    total, value = -total, current[key]
    fixed = total - growth[key] * value  # what the setting does not change (e.g. per-GPU lines a total sums)
    rest = f", and {fixed:,} more that {key} does not change" if fixed > 0 else ""
    what = f"cloudwatch.{key} {value}: CloudWatch dashboard {name} would show up to {total:,} metrics " \
           f"({growth[key]} charts of up to {value} lines each{rest}); CloudWatch draws at most " \
           f"{METRICS_PER_DASHBOARD:,} metrics per dashboard and leaves the rest out"
    hint = f"set cloudwatch.{key} to {fits} or less" if fits >= 1 else \
        "lower cloudwatch.top_pods and top_gpus"
    raise InputError(what, where=setting_place(settings, ["cloudwatch", key]),
                     hint=hint + ", or split the dashboard's charts over two dashboards")


def _at_most(dashboard, bounds: dict[tuple[object, str], int]) -> int:
    """`metrics_shown_at_most` of a dashboard's body, counted once for the bodies one dashboard has in the clusters of
    a Region and kept in `bounds` (`_per_kind`)."""
    return _per_kind(dashboard, bounds, metrics_shown_at_most)


def _per_kind(dashboard, found: dict, count: Callable[[Any], Any]) -> Any:
    """`count(body)` of a dashboard's body, counted once for the bodies one dashboard has in the clusters of a Region
    (`made`: they differ in their cluster's name only) and kept in `found`. A plain name is only the text of a string
    literal in their queries, with no space or quote: the GROUP BY and LIMIT clauses, the metrics and the widgets a
    count reads are the same in each."""
    from .render.cloudwatch import PLAIN_NAME

    made = dashboard.made
    if made is None or not PLAIN_NAME.fullmatch(made[1].name):
        return count(dashboard.body)
    key = (made[0], made[1].region)
    if key not in found:
        found[key] = count(dashboard.body)
    return found[key]


def _widgets_over(body) -> list[tuple[int, int, str]]:
    """(metrics it reads, its index, its title) of each metric widget of a body that reads more than a widget may."""
    over = []
    for index, properties in enumerate(_metric_widgets(body)):
        if widget_metrics_at_most(properties) > METRICS_PER_WIDGET:  # exact only where it may matter
            total = widget_metrics(properties)
            if total > METRICS_PER_WIDGET:
                over.append((total, index, str(properties.get("title", ""))))
    return over


def _total_with(project, name: str, **limits: int) -> int:
    """The metrics dashboard `name` shows with other top_pods / top_gpus (rendered again)."""
    return metrics_shown(_body_with(project, name, **limits))


def _body_with(project, name: str, **limits: int):
    """The body of dashboard `name` with other top_pods / top_gpus (rendered again)."""
    from .artifacts import cloudwatch_dashboards
    settings = project.settings
    changed = replace(project, settings=replace(settings, cloudwatch=replace(settings.cloudwatch, **limits)))
    return next(d.body for d in cloudwatch_dashboards(changed) if d.name == name)


def _metric_widgets(body) -> list[dict]:
    """The properties of a dashboard body's metric widgets, in order."""
    widgets = body.get("widgets", []) if isinstance(body, dict) else []
    return [w["properties"] for w in widgets
            if isinstance(w, dict) and w.get("type") == "metric" and isinstance(w.get("properties"), dict)]


def check_widgets(project, artifacts) -> None:
    """Raise an input error when a widget of a CloudWatch dashboard of the set would read more metrics than a widget
    reads (500, counted as lint's CW003 counts them: a GROUP BY query its LIMIT, a metric line one, hidden ones
    included): a chart of top_pods (top_gpus) lines whose math takes the period from a hidden metric (a rate) reads
    one more than its lines. Named: the setting, the chart, its count and the largest value that fits."""
    over: list[tuple[int, str, int, str]] = []
    bounds: dict[tuple[object, str], int] = {}
    widgets: dict[tuple[object, str], list[tuple[int, int, str]]] = {}
    for dashboard in artifacts.cloudwatch_dashboards:
        if _at_most(dashboard, bounds) <= METRICS_PER_WIDGET:  # no widget of it can be over
            continue
        over += [(total, dashboard.name, index, title)
                 for total, index, title in _per_kind(dashboard, widgets, _widgets_over)]
    if not over:
        return
    settings = project.settings
    current = {key: getattr(settings.cloudwatch, key) for key in LIMITS}
    candidates = []
    for total, name, index, title in over:
        growth = {key: _widget_with(project, name, index, **{key: 2}) - _widget_with(project, name, index, **{key: 1})
                  for key in LIMITS}
        key = max(LIMITS, key=lambda k: growth[k] * current[k])  # the setting that adds most
        fits = current[key] - -(-(total - METRICS_PER_WIDGET) // growth[key]) if growth[key] else 0
        candidates.append((fits, -total, name, title, key, growth))
    fits, total, name, title, key, growth = min(candidates)
    total, value = -total, current[key]
    fixed = total - growth[key] * value
    rest = f" and {fixed:,} more that its math reads" if fixed > 0 else ""
    what = f"cloudwatch.{key} {value}: the chart \"{title}\" of CloudWatch dashboard {name} would read up to " \
           f"{total:,} metrics ({growth[key] * value:,} lines{rest}); a CloudWatch dashboard widget reads at most " \
           f"{METRICS_PER_WIDGET} metrics"
    hint = f"set cloudwatch.{key} to {fits} or less" if fits >= 1 else "lower cloudwatch.top_pods and top_gpus"
    raise InputError(what, where=setting_place(settings, ["cloudwatch", key]), hint=hint)


def _widget_with(project, name: str, index: int, **limits: int) -> int:
    """The metrics metric widget `index` of dashboard `name` reads with other top_pods / top_gpus (rendered again)."""
    return widget_metrics(_metric_widgets(_body_with(project, name, **limits))[index])


def _widget_kinds(body) -> tuple[int, int]:
    """(metric widgets, other widgets) of a dashboard body."""
    widgets = body.get("widgets", []) if isinstance(body, dict) else []
    charts = sum(1 for w in widgets if isinstance(w, dict) and w.get("type") == "metric")
    return charts, len(widgets) - charts


def check_widget_count(project, artifacts) -> None:
    """Raise an input error when a CloudWatch dashboard of the set would hold more widgets than a dashboard holds
    (500): PutDashboard refuses the body. Named: the definition, the dashboard, its charts and texts, and how many
    charts fit beside its texts (no setting makes fewer: its panels are the definition's)."""
    from .names import cloudwatch_dashboard_name

    kinds: dict[tuple[object, str], tuple[int, int]] = {}
    for dashboard in artifacts.cloudwatch_dashboards:
        charts, texts = _per_kind(dashboard, kinds, _widget_kinds)
        if charts + texts <= WIDGETS_PER_DASHBOARD:
            continue
        settings = project.settings
        definition = next((d for d in project.cloudwatch_definitions() for c in settings.clusters
                           if cloudwatch_dashboard_name(settings.cloudwatch.dashboard_prefix, c.name, d.id)
                           == dashboard.name), None)
        raise InputError(f"CloudWatch dashboard {dashboard.name} would hold {charts + texts:,} widgets ({charts:,} "
                         f"charts and {counted(texts, 'text widget')}: its header and row titles); a "
                         f"CloudWatch dashboard holds at most {WIDGETS_PER_DASHBOARD}, and PutDashboard refuses more",
                         where=definition.defined_at if definition is not None else None,
                         hint=f"split its panels over two dashboards: {WIDGETS_PER_DASHBOARD - texts:,} charts fit "
                              f"beside its text widgets")
