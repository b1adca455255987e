"""Lint rules over the counters CSV."""

from __future__ import annotations

from typing import Iterable

from . import Finding, Rule
from .subject import LintInput


def repeated_fields(subject: LintInput) -> Iterable[Finding]:
    for repeat in subject.catalog.repeats:
        where, _, message = repeat.partition(": ")
        yield Finding("CSV001", "error", where, message)


def typed_against_dcgm(subject: LintInput) -> Iterable[Finding]:
    for retyping in subject.catalog.retypings:
        where, _, message = retyping.partition(": ")
        yield Finding("CSV003", "warning", where, message)


def unknown_fields(subject: LintInput) -> Iterable[Finding]:
    for unknown in subject.catalog.unknown:
        where, _, message = unknown.partition(": ")
        yield Finding("CSV004", "error", where, message)


def histograms(subject: LintInput) -> Iterable[Finding]:
    catalog = subject.catalog
    for metric in catalog:
        if metric.kind == "histogram":
            yield Finding("CSV002", "warning", f"{catalog.source}:{metric.line}",
                          f"{metric.name} is a histogram: the CloudWatch agent drops histograms")


RULES = (
    Rule("CSV001", "no field is listed twice", repeated_fields),
    Rule("CSV002", "no histogram fields (the CloudWatch agent drops them)", histograms),
    Rule("CSV003", "no field is typed the other of gauge and counter than DCGM says it is (gpudash reads it as DCGM "
                   "says)", typed_against_dcgm),
    Rule("CSV004", "every field is one the DCGM exporter knows (it stops at start on a name it does not)",
         unknown_fields),
)
