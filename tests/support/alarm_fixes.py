"""User alarms of five kinds over a grid of periods, evaluation periods, scrape intervals and agent pipelines, judged
in process as generate judges them (the definition, the CloudWatch alarms and Prometheus rules, AL028), and the
concrete fixes a refusal or warning proposes, each written back as the alarm or settings it names."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, replace

from generator.errors import GpudashError
from generator.model import Alarm, Condition, DefinitionError, Query
from generator.render import alarms as render
from tests.support.projects import bundled_project

KINDS = ("stopped", "filled", "breach", "missing", "plain")
MISSING = {"stopped": "missing", "filled": "notBreaching", "breach": "breaching", "missing": "breaching",
           "plain": "missing"}
PERIODS = (10, 30, 60, 120, 300, 600, 3600, 21600)
EVALUATIONS = (1, 2, 3, 7, 180, 300)
INTERVALS = ("10s", "30s", "60s", "150s", "5m")
PIPELINES = ("classic", "otel")


@dataclass(frozen=True)
class Case:
    kind: str
    period: int
    periods: int
    needed: int | None
    interval: str
    pipeline: str
    missing: str | None = None  # missing_data, where a fix names one (else the kind's)

    def __str__(self) -> str:
        return (f"{self.kind} {self.period} s x {self.periods}"
                f"{f' of {self.needed}' if self.needed else ''}{f' {self.missing}' if self.missing else ''} "
                f"at {self.interval} ({self.pipeline})")


def cases(pipeline: str, interval: str) -> list[Case]:
    """The grid's alarms at one scrape interval and pipeline: each kind, period and evaluation periods, of all of
    them and (3 and 7 periods) of 2."""
    return [Case(kind, period, periods, needed, interval, pipeline)
            for kind, period, periods in itertools.product(KINDS, PERIODS, EVALUATIONS)
            for needed in (None, 2) if needed is None or periods in (3, 7)]


def alarm(case: Case) -> Alarm:
    fields = dict(severity="critical", period_seconds=case.period, evaluation_periods=case.periods,
                  datapoints_to_alarm=case.needed, description="d.", runbook="r.", defined_at="alarms/mine.py:5")
    missing = case.missing or MISSING[case.kind]
    if case.kind == "stopped":
        return Alarm("gpu-gone", "GPU gone", Condition(Query("DCGM_FI_DEV_GPU_TEMP", "count", ("node", "gpu")), "<", 1),
                     stopped=True, **fields)
    if case.kind == "filled":
        return Alarm("idle", "idle", Condition(Query("DCGM_FI_DEV_GPU_UTIL", "avg", ("namespace", "pod", "gpu")),
                                               "<", 5), missing_data=missing, **fields)
    if case.kind == "missing":
        return Alarm("gpu-data-missing", "No GPU metrics", Condition(Query("DCGM_FI_DEV_GPU_TEMP", "count"), "<", 1),
                     absent=True, missing_data=missing, **fields)
    return Alarm("hot", "hot", Condition(Query("DCGM_FI_DEV_GPU_TEMP", "max", ("node", "gpu")), ">", 85),
                 missing_data=missing, **fields)


def project(interval: str, pipeline: str):
    """The bundled project at that scrape interval and pipeline; None where the settings refuse them."""
    try:
        return bundled_project(f"scrape:\n  interval: {interval}\nagent:\n  pipeline: {pipeline}\n")
    except GpudashError:
        return None


def own(settings):
    """Settings naming a folder of alarms of the user's own (their periods the user's: refused, not warned of)."""
    return replace(settings, definitions=replace(settings.definitions, alarms=("alarms",)))


def judged(alarms: tuple[Alarm, ...], settings, catalog) -> list[tuple[str, str]]:
    """(what, fix) of what generate refuses of `alarms` or warns of their periods (AL029, AL028); [] where nothing."""
    try:
        requests = render.cloudwatch_alarms(alarms, settings, catalog)
        render.prometheus_rules(alarms, catalog, settings)
    except GpudashError as exc:
        return [(exc.what, exc.hint or "")]
    said = [(what, fix) for _, what, fix in render.short_periods(alarms, settings, catalog)]
    never = render.never_firing_unsaid([item["Request"] for item in requests], alarms, settings)
    return said + [(f"AL028 {request['AlarmName']}", render.never_firing_fix(request, settings, alarms, catalog))
                   for request in never]


def judged_case(case: Case) -> list[tuple[str, str]]:
    """What generate says of a case's alarm, its definition's refusal first; [] where the settings themselves are
    refused (no alarm is judged)."""
    try:
        made = alarm(case)
    except DefinitionError as exc:
        return [(str(exc), exc.hint)]
    loaded = project(case.interval, case.pipeline)
    if loaded is None:
        return []
    return judged((made,), own(loaded.settings), loaded.catalog)


def alternatives(fix: str) -> list[dict]:
    """Each concrete alternative of a fix: the fields it names (period, periods, needed: datapoints_to_alarm, None where
    it says to drop it; interval; missing), the others left as they are. A fix that says to drop datapoints_to_alarm with other changes drops it in each."""
    out: list[dict] = []
    named = re.search(r"period_seconds=(\d+)", fix)
    for periods, needed, _ in re.findall(r"evaluation_periods=(\d+)(?:, datapoints_to_alarm=(\d+))?(,? which keep| \()",
                                         fix):
        out.append({**({"period": int(named.group(1))} if named else {}), "periods": int(periods),
                    **({"needed": int(needed)} if needed else {})})
    if named and not out:
        out.append({"period": int(named.group(1))})
    listed = re.search(r"scrape\.interval one of ([0-9s, ]+?) \(", fix) or re.search(
        r"scrape\.interval that divides \d+ s and cloudwatch\.period \(([0-9s, ]+)\)", fix)
    out += [{"interval": interval} for interval in (listed.group(1).split(", ") if listed else ())]
    if "drop datapoints_to_alarm" in fix:
        out = [{**change, "needed": None} for change in out or [{}]]
        window = re.search(r"for a window of \d+ periods? write evaluation_periods=(\d+)", fix)
        if window:
            out.append({"needed": None, "periods": int(window.group(1))})
    out += [{"missing": missing} for missing in re.findall(r"missing_data='(\w+)'(?:,|$)", fix)]
    return out


def followed(fix: str, case: Case) -> list[Case]:
    """The cases a fix's alternatives make of `case`."""
    return [replace(case, **change) for change in alternatives(fix)]


def applied(change: dict, alarm: Alarm) -> Alarm:
    """An alarm with a fix's alternative written into it (not a scrape interval)."""
    names = {"period": "period_seconds", "periods": "evaluation_periods", "needed": "datapoints_to_alarm",
             "missing": "missing_data"}
    return replace(alarm, **{names[key]: value for key, value in change.items()})
