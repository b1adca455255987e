"""PromQL for neutral queries. Pure: (query, label mapping, catalog, matchers) -> text.

Every PromQL expression gpudash writes (Grafana panels, variables, alert rules)
comes from here, so the workload-pod label and the blank-value filter are
applied in one place.
"""

from __future__ import annotations

from .catalog import Catalog
from .model import Query
from .settings import Labels

# DCGM reports a value it cannot read as a "blank" sentinel: 2**47 for floating-point
# fields, about 2**63 for integer fields. No real reading comes near 1e14, so gauges
# are compared against it and blank samples drop out instead of wrecking averages.
BLANK_FLOOR = "1e14"

_FIXED_LABELS = {"gpu": "gpu", "model": "modelName"}


def label_name(key: str, labels: Labels) -> str:
    """The Prometheus label that carries a neutral grouping key."""
    return _FIXED_LABELS.get(key) or getattr(labels, key)


def legend(query: Query, labels: Labels) -> str:
    """Grafana legend for a query: `Pod {{pod}}` for per-pod series, and so on."""
    if query.legend is not None:
        return query.legend
    parts = []
    for key in query.by:
        name = label_name(key, labels)
        prefix = {"pod": "Pod ", "gpu": "GPU ", "namespace": "ns "}.get(key, "")
        parts.append(f"{prefix}{{{{{name}}}}}")
    return " ".join(parts) if parts else query.metric


def selector(metric: str, matchers: tuple[str, ...]) -> str:
    return f"{metric}{{{', '.join(matchers)}}}" if matchers else metric


def _series(metric: str, catalog: Catalog, matchers: tuple[str, ...], rate_window: str,
            as_increase: bool) -> str:
    text = selector(metric, matchers)
    field = catalog.get(metric)
    if not field.is_counter:
        return f"({text} < {BLANK_FLOOR})"
    if as_increase:
        return f"increase({text}[{rate_window}])"
    scale = field.unit.rate_scale  # e.g. throttled ns per second -> share of time
    rate = f"rate({text}[{rate_window}])"
    return rate if scale == 1 else f"({rate} * {scale:g})"


def expression(query: Query, labels: Labels, catalog: Catalog, matchers: tuple[str, ...] = (),
               rate_window: str = "$__rate_interval", increase_window: str = "$__range") -> str:
    """The PromQL for one neutral query.

    `matchers` are rendered label matchers added to every selector (dashboard
    variables, or an alert rule's scope). Per-pod queries also require the pod
    label, so GPUs that no pod holds do not show up as an empty pod.
    """
    if query.raw_promql:
        return query.raw_promql
    if query.per_pod:
        matchers = (*matchers, f'{labels.pod}!=""')
    window = increase_window if query.as_increase else rate_window
    value = _series(query.metric, catalog, matchers, window, query.as_increase)
    if query.over:
        total = " + ".join(_series(m, catalog, matchers, window, query.as_increase) for m in query.over)
        value = f"{value} / ({total})" if len(query.over) > 1 else f"{value} / {total}"
    grouping = ", ".join(label_name(key, labels) for key in query.by)
    return f"{query.aggregation} by ({grouping}) ({value})" if grouping else f"{query.aggregation}({value})"
