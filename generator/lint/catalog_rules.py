"""Lint rules over the counters CSV."""

from __future__ import annotations

from typing import Iterable

from ..catalog import Catalog
from . import Finding, Rule


def repeated_fields(catalog: Catalog) -> Iterable[Finding]:
    for repeat in catalog.repeats:
        where, _, message = repeat.partition(": ")
        yield Finding("CSV001", "error", where, message)


def histograms(catalog: Catalog) -> Iterable[Finding]:
    for metric in catalog:
        if metric.kind == "histogram":
            yield Finding("CSV002", "warning", f"{catalog.source}:{metric.line}",
                          f"{metric.name} is a histogram: the CloudWatch agent drops histograms")


RULES = (
    Rule("CSV001", "no field is listed twice", repeated_fields),
    Rule("CSV002", "no histogram fields (the CloudWatch agent drops them)", histograms),
)
