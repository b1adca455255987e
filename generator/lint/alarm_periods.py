"""Alarms whose period is too short for the scrape interval: a bundled one is kept and said, by generate and here
alike (render.alarms.short_periods), so that lint of a build in CI says what generate said when it was made."""

from __future__ import annotations

from typing import Iterable

from ..render.alarms import SHORT_PERIOD_RULE, short_periods
from . import Finding, Rule
from .subject import LintInput


def short_alarm_periods(subject: LintInput) -> Iterable[Finding]:
    """Each bundled alarm whose period (or window) holds too few scrapes at the settings' scrape interval, with what
    to do: generate's warnings, one a finding."""
    for where, what, fix in short_periods(subject.alarm_definitions, subject.settings, subject.catalog):
        yield Finding(SHORT_PERIOD_RULE, "warning", where, f"{what}; fix: {fix}")


RULES = (
    Rule(SHORT_PERIOD_RULE, "bundled alarms whose period or window holds too few scrapes at scrape.interval (the "
                            "stopped rule's period, a period judged with missing data filled, the data-missing "
                            "window or period): kept, and said with what to do (a warning per alarm; generate says it too)",
         short_alarm_periods),
)
