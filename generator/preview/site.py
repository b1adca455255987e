"""The preview site: every dashboard's panels queried and drawn, as {file name: bytes}."""

from __future__ import annotations

import math
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..errors import InputError
from . import page, panels
from .interpolate import Window, alternation, defaults, interpolate, listed_at_all, step_for
from ..clients.http import before_threads
from ..clients.prometheus import PrometheusClient, Result

_DURATION = re.compile(r"^(\d+)(s|m|h|d|w)$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
DEFAULT_RANGE = "1h"


def parse_range(text: str) -> float:
    """`1h`, `30m`, `7d` (or Grafana's `now-6h`) as seconds."""
    match = _DURATION.match(text.strip().removeprefix("now-"))
    if not match or int(match[1]) == 0:
        raise InputError(f"{text!r} is not a time range", where="--range",
                         hint="give a number and a unit: 30m, 1h, 6h, 7d")
    return float(int(match[1]) * _SECONDS[match[2]])


def dashboard_range(model: dict[str, Any]) -> str:
    """The dashboard's own default range (`time.from` of `now-6h`), else the preview's default."""
    start = str((model.get("time") or {}).get("from", ""))
    return start.removeprefix("now-") if _DURATION.match(start.removeprefix("now-")) else DEFAULT_RANGE


def drawn_panels(model: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Rows and panels in the dashboard's order; the panels a collapsed row holds follow it."""
    for panel in model.get("panels") or []:
        if not isinstance(panel, dict):
            continue
        yield panel
        if panel.get("type") == "row":
            yield from (p for p in panel.get("panels") or [] if isinstance(p, dict))


def visual_panels(model: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in drawn_panels(model) if p.get("type") != "row"]


@dataclass
class PagePlan:
    uid: str
    title: str
    model: dict[str, Any]
    window: Window
    end: float
    results: dict[int, list[tuple[dict, Result]]] = field(default_factory=dict)

    @property
    def start(self) -> float:
        return self.end - self.window.range_s


def plan(uid: str, model: dict[str, Any], range_text: str | None, scrape_s: float, end: float) -> PagePlan:
    range_s = parse_range(range_text or dashboard_range(model))
    window = Window(range_s, step_for(range_s, scrape_s), scrape_s)
    aligned = math.floor(end / window.step_s) * window.step_s
    return PagePlan(uid, str(model.get("title", uid)), model, window, aligned)


def run_queries(plans: list[PagePlan], client: PrometheusClient, workers: int = 8) -> None:
    jobs = []
    for plan_ in plans:
        values = {**defaults(plan_.model), **plan_.window.macros()}
        values.update(listed_values(plan_, values, client))
        for index, panel in enumerate(visual_panels(plan_.model)):
            plan_.results[index] = []
            for target in panel.get("targets") or []:
                if not isinstance(target, dict) or target.get("hide") or not isinstance(target.get("expr"), str):
                    continue
                expr = interpolate(target["expr"], values)
                instant = bool(target.get("instant")) and not target.get("range", False)
                jobs.append((plan_, index, target, expr, instant))
    before_threads()  # each job's request imports nothing on its thread
    with ThreadPoolExecutor(workers) as pool:
        answers = list(pool.map(lambda job: client.run(job[3], job[4], job[0].start, job[0].end,
                                                       job[0].window.step_s), jobs))
    for (plan_, index, target, _, _), answer in zip(jobs, answers):
        plan_.results[index].append((target, answer))


_LABEL_VALUES = re.compile(r"^\s*label_values\((.*),\s*(\w+)\s*\)\s*$", re.DOTALL)
_QUERY_RESULT = re.compile(r"^\s*query_result\((.*)\)\s*$", re.DOTALL)


def listed_values(plan_: PagePlan, values: dict[str, str], client: PrometheusClient) -> dict[str, str]:
    """Each query variable at All without an allValue (interpolate.listed_at_all) as Grafana sends it: the alternation
    of the values its query lists at the page's end (label_values: the label's values on the selector's series;
    query_result: the regex's first group of each series' text), where `.*` would read values it does not list."""
    found = {}
    for variable in listed_at_all(plan_.model):
        query = variable.get("query")
        query = query.get("query") if isinstance(query, dict) else query
        if not isinstance(query, str):
            continue
        labelled, result = _LABEL_VALUES.match(query), _QUERY_RESULT.match(query)
        if labelled:
            answer = client.run(f"count by ({labelled.group(2)}) ({interpolate(labelled.group(1), values)})", True,
                                plan_.start, plan_.end, plan_.window.step_s)
            listed = [s.labels.get(labelled.group(2), "") for s in answer.series]
        elif result:
            answer = client.run(interpolate(result.group(1), values), True, plan_.start, plan_.end,
                                plan_.window.step_s)
            regex = re.compile(str(variable.get("regex") or "/(.*)/").strip("/"))
            texts = ("{" + ",".join(f'{k}="{v}"' for k, v in s.labels.items()) + "}" for s in answer.series)
            listed = [m.group(1) for m in map(regex.search, texts) if m]
        else:
            continue
        found[str(variable["name"])] = alternation(sorted(set(v for v in listed if v)))
    return found


def window_text(plan_: PagePlan) -> str:
    def stamp(t: float) -> str:
        return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t))
    return f"last {_human(plan_.window.range_s)}, {stamp(plan_.start)} to {stamp(plan_.end)}, " \
           f"step {plan_.window.step_s:g}s"


def _human(seconds: float) -> str:
    for unit in ("w", "d", "h", "m"):
        if seconds % _SECONDS[unit] == 0:
            return f"{int(seconds // _SECONDS[unit])}{unit}"
    return f"{int(seconds)}s"


@dataclass(frozen=True)
class PageSummary:
    uid: str
    title: str
    file: str
    panels: int
    no_data: int
    failed: int
    first_failure: dict[str, str | None] | None = None  # the first failing query: {panel, query, error, fix}

    def as_dict(self) -> dict[str, Any]:
        return {"uid": self.uid, "title": self.title, "file": self.file, "panels": self.panels,
                "no_data": self.no_data, "failed": self.failed, "first_failure": self.first_failure}


def boxes(plan_: PagePlan) -> tuple[list[str], int, int, int, dict[str, str | None] | None]:
    """The page's rows and panels as placed boxes; how many panels, with no data, with a failing query; the first
    failing query (its panel, refId, error and fix)."""
    placed, counted, empty, failed, first = [], 0, 0, 0, None
    index = 0
    for panel in drawn_panels(plan_.model):
        if panel.get("type") == "row":
            placed.append(page.row_box(panel))
            continue
        results = plan_.results.get(index, [])
        index += 1
        counted += 1
        failed += any(r.error for _, r in results)
        if first is None:
            first = next(({"panel": str(panel.get("title", "")), "query": str(t.get("refId", "?")), "error": r.error,
                           "fix": r.fix} for t, r in results if r.error), None)
        empty += not any(r.series for _, r in results) and not any(r.error for _, r in results)
        placed.append(page.panel_box(panel, panels.body(panel, results, plan_.start, plan_.end)))
    return placed, counted, empty, failed, first


def shown_variables(model: dict[str, Any]) -> dict[str, str]:
    """Each query variable with the value the queries used: `All` for a variable at All."""
    shown = {}
    for variable in (model.get("templating") or {}).get("list") or []:
        if isinstance(variable, dict) and variable.get("name") and variable.get("type") != "datasource":
            value = defaults({"templating": {"list": [variable]}}).get(str(variable["name"]), "")
            shown[str(variable.get("label") or variable["name"])] = "All" if value in (".*", variable.get(
                "allValue")) else value
    return shown


def render_page(plan_: PagePlan, source: str) -> tuple[str, PageSummary]:
    placed, counted, empty, failed, first = boxes(plan_)
    content = page.header(plan_.title, source, window_text(plan_), shown_variables(plan_.model)) + \
        f'<div class="grid">{"".join(placed)}</div>'
    file = f"{plan_.uid}.html"
    return page.document(plan_.title, content), PageSummary(plan_.uid, plan_.title, file, counted, empty, failed,
                                                                     first)


def site(plans: list[PagePlan], source: str, diff: bool = False) -> tuple[dict[str, bytes], list[PageSummary]]:
    files, summaries = {}, []
    for plan_ in plans:
        html, summary = render_page(plan_, source)
        files[summary.file] = html.encode()
        summaries.append(summary)
    window = window_text(plans[0]) if plans and len({p.window for p in plans}) == 1 else "each dashboard's own"
    files["index.html"] = page.index("gpudash preview", source, window,
                                     [(s.file, s.title, s.panels, s.no_data, s.failed) for s in summaries],
                                     diff).encode()
    return files, summaries
