"""Benchmark: what the generated PromQL costs on a real Prometheus holding a fleet's history.

A fleet of GPUs (8 a node, each node's exporter scraped every 30 s at its own offset, three GPUs in four held by
a pod) is written as OpenMetrics and backfilled into a real Prometheus (`promtool tsdb create-blocks-from
openmetrics`, as the tests do), holding every metric the timed queries read: each counter some panel takes a rate
or increase of, and every metric of the alert rules. Then each such query is timed as Grafana sends it, its
variables at All:

- a counter panel drawn by a range query over 6 h, 24 h and 7 d (a rate panel reads its counter's recording: the
  rule group gpudash-counters written over the history with `promtool tsdb create-blocks-from rules`) (as far as the data reaches), at the step Grafana
  picks for a graph of about 300 points (`generator.preview.interpolate.step_for`, never below the scrape
  interval), with `$__rate_interval` as Grafana makes it;
- a panel of an increase over the selected range (an instant query at the range's end, `$__range` the range);
- each alert rule as its group evaluates it (an instant query at the data's end).

Each time is the median of `--runs` answers (wall time of the HTTP request, Prometheus' own evaluation inside).
Usage: `python benchmarks/queries.py [--gpus 64 256] [--days 1 7] [--runs 3] [--settings FILE]`;
`--dashboard gpudash-by-pod --ranges 6h --steps 72 30 --cpu` times every panel of the per-pod dashboard (its
gauges too) over 6 h at 72 s and 30 s steps, as Prometheus' own CPU seconds per answer.
The machine's load changes the figures: the load average is printed with them.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

import requests
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.artifacts import build, grafana_dashboards  # noqa: E402
from generator.names import is_counter_group  # noqa: E402
from generator.preview.interpolate import Window, interpolate, step_for, variables  # noqa: E402
from generator.preview.sample import backfill_start  # noqa: E402
from generator.project import load_project  # noqa: E402
from tests.support.prometheus_server import Prometheus  # noqa: E402

SCRAPE = 30  # seconds
GPUS_PER_NODE = 8
RANGES = {"1h": 3600, "6h": 6 * 3600, "24h": 24 * 3600, "7d": 7 * 24 * 3600}
# The ranges timed unless --ranges names others: Grafana's usual horizons. 1h is there for the smoke run
# (tests/integration/test_benchmarks.py: the smallest history that draws a range, 0.05 day, half the CPU of 6 h's)
TIMED = ("6h", "24h", "7d")
TIMEOUT = 300.0  # seconds a query may take before it is reported as timed out
GRAFANA_TIMEOUT = 30.0  # Grafana's data proxy gives up after this by default
# The Prometheus servers' own limit on a query (their default is 2 minutes): the history's servers answer the
# recordings' backfill (promtool asks each rule over two hours of steps at once, which at 500 GPUs on a loaded machine
# ran past 2 minutes: the backfill failed) and the timed panels (a panel past 2 minutes was an error, not a figure)
QUERY_TIMEOUT = ("--query.timeout=1h",)


# a counter's reading per step (promql.step_reading), however the query text is packed
STEP_READING = re.compile(r"\[1ms\] ?offset\b")


def _queries(project, dashboards: tuple[str, ...] = ()) -> tuple[list[tuple[str, str, str, bool]],
                                                                  list[tuple[str, str]]]:
    """(dashboard, panel title, expr, instant) of every panel query that reads a counter per step, and (rule, expr);
    with `dashboards` (uids), every panel query of those dashboards instead (gauges too), and no rules."""
    panels = []
    for dashboard in grafana_dashboards(project):
        if dashboards and dashboard.uid not in dashboards:
            continue
        for panel in dashboard.model["panels"]:
            for target in panel.get("targets", []):
                expr = target.get("expr", "")
                # a counter read per step (promql.step_reading, ...), or from its recording (promql.counted_rules)
                if dashboards or STEP_READING.search(expr) or ":step_increase" in expr:
                    panels.append((dashboard.uid, panel.get("title", ""), expr, bool(target.get("instant"))))
    if dashboards:
        return panels, []
    rules = []
    for group in build(project).prometheus_rules["groups"]:
        for rule in group["rules"]:
            rules.append((rule.get("alert") or rule.get("record"), rule["expr"]))
    return panels, rules


def _metrics(exprs: list[str]) -> set[str]:
    return {m for e in exprs for m in re.findall(r"\b(DCGM_[A-Z0-9_]+)\b", e)}


def _openmetrics(path: Path, metrics: set[str], counters: set[str], gpus: int, start: int, samples: int) -> None:
    """Every metric of every GPU, a sample per scrape from `start`; counters grow (now and then a reset), gauges
    wander. Written series by series (promtool reads the file once per block range)."""
    rng = random.Random(7)
    with path.open("w") as out:
        for metric in sorted(metrics):
            out.write(f"# TYPE {metric} gauge\n")  # stored under its own name, as the tests do
            for g in range(gpus):
                node, index = divmod(g, GPUS_PER_NODE)
                offset = (node * 7) % SCRAPE  # each node's exporter scraped at its own offset
                held = g % 4 != 3
                pod = f',namespace="team-{node % 5}",pod="job-{node}-{index // 2}",container="main"' if held else ""
                labels = (f'{{gpu="{index}",UUID="GPU-{node}-{index}",device="nvidia{index}",modelName="NVIDIA H100",'
                          f'Hostname="gpu-node-{node}",node="gpu-node-{node}"{pod},job="dcgm-exporter",'
                          f'instance="10.0.{node // 250}.{node % 250}:9400"}}')
                value = rng.uniform(0, 100)
                lines = []
                for k in range(samples):
                    if metric in counters:
                        value = 0.0 if rng.random() < 1e-4 else value + rng.choice((0, 0, 0, 1, 3))
                    else:
                        value = min(100.0, max(0.0, value + rng.uniform(-5, 5)))
                    lines.append(f"{metric}{labels} {value:g} {start + offset + k * SCRAPE}\n")
                out.writelines(lines)
        out.write("# EOF\n")




def _cpu(prometheus: Prometheus) -> float:
    """CPU seconds (user + system) the Prometheus process has used so far."""
    fields = Path(f"/proc/{prometheus.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _time(prometheus: Prometheus, path: str, params: dict, runs: int) -> tuple[float, int | None]:
    """Median seconds of `runs` answers and the series count of the last; None series if it failed or timed out.
    With CPU: Prometheus' own CPU seconds per answer instead of the answer's wall time (other work on the machine
    does not count)."""
    seconds, series = [], None
    for _ in range(runs):
        began = _cpu(prometheus) if CPU else time.perf_counter()
        try:
            # measuring CPU, a loaded machine may take long to answer: the wall time is not the figure then
            answer = requests.post(f"{prometheus.url}/api/v1/{path}", data=params, timeout=TIMEOUT * (4 if CPU else 1))
            body = answer.json()
        except (requests.Timeout, ValueError):
            return TIMEOUT, None
        seconds.append((_cpu(prometheus) if CPU else time.perf_counter()) - began)
        if body.get("status") != "success":
            raise SystemExit(f"query failed: {body.get('error')}\n{params['query'][:300]}")
        series = len(body["data"]["result"])
    return statistics.median(seconds), series


def _cell(seconds: float) -> str:
    return f"{seconds:.2f} s" + (" (over Grafana's 30 s)" if seconds > GRAFANA_TIMEOUT else "")


def _timed(prometheus: Prometheus, what: str, path: str, params: dict, runs: int) -> tuple[str, float]:
    """One table row: the query as generated; and the query's seconds."""
    seconds, series = _time(prometheus, path, params, runs)
    answer = "timed out" if series is None else f"{series} series"
    row = f"| {what} | {_cell(seconds)} | {answer}, {len(params['query']):,} bytes |"
    return row, seconds


def run(gpus: int, days: float, runs: int, project, dashboards: tuple[str, ...] = (),
        ranges: tuple[str, ...] = TIMED, steps: tuple[int, ...] = ()) -> Iterator[str]:
    """The table's lines, each as soon as it is measured."""
    panels, rules = _queries(project, dashboards)
    exprs = [p[2] for p in panels] + [r[1] for r in rules]
    metrics = _metrics(exprs)
    counters = {m for m in metrics if m in project.catalog and project.catalog.get(m).is_counter}
    span = int(days * 86400)
    samples = span // SCRAPE
    with tempfile.TemporaryDirectory(prefix="gpudash-query-bench-") as work:
        work = Path(work)
        start = (int(time.time()) - span - 3600) // SCRAPE * SCRAPE
        end = start + span - SCRAPE  # the last scrape (an hour ago or more: all of it in the blocks)
        began = time.perf_counter()
        _openmetrics(work / "fleet.om", metrics, counters, gpus, start, samples)
        subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(work / "fleet.om"),
                        str(work / "data")], check=True, capture_output=True)
        (work / "fleet.om").unlink()
        _recorded(work, build(project).prometheus_rules, start, end)
        loaded = time.perf_counter() - began
        yield from [f"### {gpus} GPUs, {days:g} day(s) of {SCRAPE} s scrapes ({len(metrics)} metrics, "
                    f"{gpus * len(metrics)} series; written and backfilled in {loaded:.0f} s)", "",
                    f"| query | median {'Prometheus CPU' if CPU else 'answer time'} | answer, query text |",
                    "|---|---|---|"]
        at_all = variables({}, ("namespace", "pod", "node", "gpu", "cluster"))
        costliest = (0.0, "")  # the panel query that took longest (what a Grafana timeout meets first)
        with Prometheus(work, {"global": {"scrape_interval": "1m"}, "scrape_configs": []}, QUERY_TIMEOUT) as prometheus:
            for uid, title, expr, instant in panels:
                for name in ranges:
                    seconds = RANGES[name]
                    if seconds > span:
                        continue
                    for step in steps or (step_for(seconds, SCRAPE),):
                        query = interpolate(expr, {**at_all, **Window(seconds, step, SCRAPE).macros()})
                        if instant:
                            path, params = "query", {"query": query, "time": end}
                            increase = "increase over " if STEP_READING.search(expr) else ""
                            what = f"{uid} · {title} · {increase}{name} (instant)"
                        else:
                            path, params = "query_range", {"query": query, "start": end - seconds, "end": end,
                                                           "step": step}
                            what = f"{uid} · {title} · {name} at a {step:.0f} s step"
                        row, seconds = _timed(prometheus, what, path, params, runs)
                        costliest = max(costliest, (seconds, what))
                        yield row
                        if instant:
                            break
            for name, expr in rules:
                yield _timed(prometheus, f"rule {name}", "query", {"query": expr, "time": end}, runs)[0]
    yield ""
    if costliest[1]:
        yield (f"costliest panel: {costliest[1]}, {_cell(costliest[0])}"
               f"{' of Prometheus CPU' if CPU else ''} at {gpus} GPUs")
    yield (f"(load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; "
           f"median of {runs} answers each{'; Prometheus CPU seconds per answer' if CPU else ''})")


def _recorded(work: Path, rules: dict, start: int, end: int) -> None:
    """The counters' recordings the rate panels read (the rule groups gpudash-counters...) written over the fleet's history
    into work/data, as `promtool tsdb create-blocks-from rules` writes a deployment's history
    (docs/grafana-panels.md, "Counter rates"): a Prometheus of the history answers the rules' queries, its blocks are
    added."""
    groups = [g for g in rules["groups"] if is_counter_group(g["name"]) and g["rules"]]
    if not groups:
        return
    (work / "counters.yaml").write_text(yaml.safe_dump({"groups": groups}))
    with Prometheus(work, {"global": {"scrape_interval": "1m"}, "scrape_configs": []}, QUERY_TIMEOUT) as prometheus:
        first = backfill_start(start, groups[0]["interval"])  # (prometheus/prometheus#19714)
        done = subprocess.run(["promtool", "tsdb", "create-blocks-from", "rules", "--start", str(first), "--end",
                               str(end), "--eval-interval", groups[0]["interval"], "--url", prometheus.url,
                               "--output-dir", str(work / "recorded"), str(work / "counters.yaml")],
                              capture_output=True, text=True)
    if done.returncode != 0:  # (promtool logs each rule it starts: its last lines say which failed, and why)
        raise SystemExit("backfilling the counters' recordings failed: promtool tsdb create-blocks-from rules:\n"
                         + "\n".join((done.stderr + done.stdout).strip().splitlines()[-5:]))
    for block in (work / "recorded").iterdir():
        if block.is_dir():
            shutil.move(str(block), str(work / "data" / block.name))


CPU = False  # --cpu: Prometheus' CPU seconds per answer, not the answer's wall time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, nargs="+", default=[64])
    parser.add_argument("--days", type=float, nargs="+", default=[1])  # (a fraction of a day: a smoke run)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--settings", type=Path, default=None)
    parser.add_argument("--dashboard", nargs="+", default=[],
                        help="every panel query of these dashboards (uids, e.g. gpudash-by-pod), gauges too; no rules")
    parser.add_argument("--ranges", choices=sorted(RANGES), nargs="+", default=list(TIMED))
    parser.add_argument("--steps", type=int, nargs="+", default=[],
                        help="steps (seconds) to draw each range at, instead of Grafana's ~300 points")
    parser.add_argument("--cpu", action="store_true", help="time Prometheus' CPU per answer, not the answer's wall")
    args = parser.parse_args()
    global CPU
    CPU = args.cpu
    missing = [name for name in ("prometheus", "promtool") if shutil.which(name) is None]
    if missing:
        raise SystemExit(f"benchmarks/queries.py needs {' and '.join(missing)} on PATH (apt-get install prometheus)")
    project = load_project(args.settings)
    for gpus in args.gpus:
        for days in args.days:
            for line in run(gpus, days, args.runs, project, tuple(args.dashboard),
                            tuple(args.ranges), tuple(args.steps)):
                print(line, flush=True)


if __name__ == "__main__":
    main()
