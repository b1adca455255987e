"""Benchmark: what each bundled panel and rule costs Prometheus per refresh, and its size.

Every panel query of every generated Grafana dashboard (gauges and counters, every dashboard) and every generated
rule, for the settings given (the defaults, or an example's: `--settings tests/golden/builds/multi-region.yaml`), as
generated and again with `exporter.virtual_gpus: true` (`--virtual-gpus both`, the default). Each is sent to a real
Prometheus holding tests/support/messy_history.py's fleet (`Hostname` and `hostname`, an exporter writing its own pod's
name as Hostname, exporters without a hostname, a node scraped without the node label, MIG instances, idle GPUs, a
time-sliced GPU whose pod label moves at every scrape, blanks, a gap, a counter reset), two hours of 30 s scrapes
backfilled as the tests do, its variables at All. Where the settings rename the workload labels (`labels.pod:
exported_pod`) the fleet's series carry those names, and where one Prometheus holds several clusters
(`prometheus_label`) each replica of the fleet is one of them.

Per query: its bytes, and Prometheus' own CPU seconds (user + system, from /proc: the machine's other load does not
count) per answer, as an instant query at the data's end (a stat or bar panel, a rule's evaluation) and as a range
query over `--range` at Grafana's step for a graph of about 300 points (rules: instant only), the mean of `--runs`
answers. The counters' recordings (rule group gpudash-counters) are not backfilled: a rate panel reading them costs
what reading a recorded series costs, not what the rule does (the rule's own row says that).

Usage: `python benchmarks/panels.py [--gpus 33] [--runs 3] [--range 1h] [--settings FILE] [--virtual-gpus both]
[--only TITLE ...]`. The load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.artifacts import build, grafana_dashboards  # noqa: E402
from generator.preview.interpolate import Window, interpolate, step_for, variables  # noqa: E402
from generator.project import load_project  # noqa: E402
from tests.support import messy_history  # noqa: E402
from tests.support.prometheus_server import Prometheus  # noqa: E402

from benchmarks._timing import SMOKE  # noqa: E402
from benchmarks.rules import cpu_seconds  # noqa: E402

SPAN = 2 * 3600  # seconds of history
RANGES = {"15m": 900, "1h": 3600}
VARIABLES = ("namespace", "pod", "node", "gpu", "cluster")


def settings_file(source: Path | None, virtual_gpus: bool, folder: Path) -> Path:
    """A settings file: `source`'s settings (the defaults' where None) with exporter.virtual_gpus set as asked. A
    relative path of `source` (its counters CSV, its definitions) is made absolute."""
    settings = (yaml.safe_load(source.read_text()) or {}) if source else {}
    if settings.get("counters"):
        settings["counters"] = str((source.parent / settings["counters"]).resolve())
    for kind, folder_ in (settings.get("definitions") or {}).items():
        if folder_:
            settings["definitions"][kind] = str((source.parent / folder_).resolve())
    settings.setdefault("exporter", {})["virtual_gpus"] = virtual_gpus
    path = folder / f"gpudash-{'vg' if virtual_gpus else 'plain'}.yaml"
    path.write_text(yaml.safe_dump(settings))
    return path


def queries(project) -> tuple[list[tuple[str, str, str]], list[tuple[str, str]]]:
    """(dashboard uid, panel title, expr) of every panel target, and (rule name, expr) of every rule."""
    panels = [(dashboard.uid, panel.get("title", ""), target["expr"])
              for dashboard in grafana_dashboards(project) for panel in dashboard.model["panels"]
              for target in panel.get("targets", []) if target.get("expr")]
    rules = [(rule.get("alert") or rule.get("record"), rule["expr"])
             for group in build(project).prometheus_rules["groups"] for rule in group["rules"]]
    return panels, rules


def fleet_openmetrics(project, metrics: set[str], gpus: int, start: int) -> tuple[str, int]:
    """messy_history's fleet of at least `gpus` GPUs from `start` as OpenMetrics, its workload labels spelled as the
    settings read them and, with several clusters on one Prometheus, each replica given a cluster's label; and its
    GPU count."""
    replicas = -(-gpus // messy_history.gpus(1))
    text = messy_history.openmetrics(messy_history.history(replicas, SPAN // messy_history.SCRAPE, metrics, start))
    labels = project.settings.labels
    renamed = {"pod": labels.pod, "namespace": labels.namespace, "container": labels.container}
    clusters = [c.prometheus_label for c in project.settings.clusters if c.prometheus_label]

    def spelled(line: str) -> str:
        if not line.startswith("DCGM_"):
            return line
        for old, new in renamed.items():
            if new != old:
                line = line.replace(f',{old}="', f',{new}="')
        if clusters:
            replica = int(re.search(r'instance="10\.(\d+)\.', line)[1])
            line = line.replace("{", f'{{{labels.cluster}="{clusters[replica % len(clusters)]}",', 1)
        return line
    return "\n".join(spelled(line) for line in text.split("\n")), messy_history.gpus(replicas)


def _cpu_per_answer(prometheus: Prometheus, path: str, params: dict, runs: int) -> tuple[float, int]:
    """Prometheus' CPU seconds per answer (the mean of `runs`) and the series of the last answer."""
    before = cpu_seconds(prometheus.process.pid)
    series = 0
    for _ in range(runs):
        series = len(prometheus.api(path, **params)["result"])
    return (cpu_seconds(prometheus.process.pid) - before) / runs, series


def run(source: Path | None, virtual_gpus: bool, gpus: int, runs: int, span: str,
        only: tuple[str, ...] = ()) -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="gpudash-panel-bench-") as work:
        work = Path(work)
        project = load_project(settings_file(source, virtual_gpus, work))
        panels, rules = queries(project)
        if only:
            panels = [p for p in panels if p[1] in only]
            rules = [r for r in rules if r[0] in only]
        metrics = set(re.findall(r"\b(DCGM_[A-Z0-9_]+)\b", " ".join(e for *_, e in panels + rules)))
        start = (int(time.time()) - SPAN - 3600) // messy_history.SCRAPE * messy_history.SCRAPE
        end = start + SPAN - messy_history.SCRAPE
        text, fleet_gpus = fleet_openmetrics(project, metrics, gpus, start)
        (work / "fleet.om").write_text(text)
        subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(work / "fleet.om"),
                        str(work / "data")], check=True, capture_output=True)
        seconds = RANGES[span]
        step = step_for(seconds, messy_history.SCRAPE)
        macros = {**variables({}, VARIABLES), **Window(seconds, step, messy_history.SCRAPE).macros()}
        yield (f"### {source or 'the defaults'}, exporter.virtual_gpus: {str(virtual_gpus).lower()}: {fleet_gpus} "
               f"GPUs of messy_history, 2 h of 30 s scrapes; Prometheus CPU per answer, mean of {runs}")
        yield ""
        yield f"| dashboard · panel / rule | bytes | instant | range {span} at a {step:.0f} s step | series |"
        yield "|---|---|---|---|---|"
        total = [0, 0.0, 0.0]
        with Prometheus(work, {"global": {"scrape_interval": "1m"}, "scrape_configs": []}) as prometheus:
            for what, expr, ranged in [(f"{uid} · {title}", expr, True) for uid, title, expr in panels] + \
                    [(f"rule {name}", expr, False) for name, expr in rules]:
                query = interpolate(expr, macros)
                instant, series = _cpu_per_answer(prometheus, "query", {"query": query, "time": end}, runs)
                cells = f"{instant:.3f} s |"
                if ranged:
                    over, series = _cpu_per_answer(prometheus, "query_range", {
                        "query": query, "start": end - seconds, "end": end, "step": step}, runs)
                    cells += f" {over:.3f} s |"
                    total[2] += over
                else:
                    cells += " |"
                total[0] += len(expr.encode())
                total[1] += instant
                yield f"| {what} | {len(expr.encode()):,} | {cells} {series} |"
        yield f"| all | {total[0]:,} | {total[1]:.3f} s | {total[2]:.3f} s | |"
    yield ""
    yield f"(load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=11 if SMOKE else 33)
    parser.add_argument("--runs", type=int, default=1 if SMOKE else 3)
    parser.add_argument("--range", choices=sorted(RANGES), default="15m" if SMOKE else "1h")
    parser.add_argument("--settings", type=Path, default=None)
    parser.add_argument("--virtual-gpus", choices=("both", "on", "off"), default="off" if SMOKE else "both")
    parser.add_argument("--only", nargs="+", default=[], help="only these panel titles and rule names")
    args = parser.parse_args()
    missing = [name for name in ("prometheus", "promtool") if shutil.which(name) is None]
    if missing:
        raise SystemExit(f"benchmarks/panels.py needs {' and '.join(missing)} on PATH (apt-get install prometheus)")
    for virtual_gpus in {"both": (False, True), "on": (True,), "off": (False,)}[args.virtual_gpus]:
        for line in run(args.settings, virtual_gpus, args.gpus, args.runs, args.range, tuple(args.only)):
            print(line, flush=True)


if __name__ == "__main__":
    main()
