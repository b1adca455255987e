"""Benchmark: what each generated Prometheus rule costs a real Prometheus at fleet size, and its size.

The fleet is tests/support/messy_history.py's (mixed_fleet's nodes repeated until it holds `--gpus` GPUs:
`Hostname` and `hostname`, an exporter writing its own pod name as Hostname, exporters without a hostname, a node
scraped without the node label, MIG instances, idle GPUs, a time-sliced GPU whose pod label moves at every scrape,
DCGM's not-supported blank; near the end a gap in a node's data, a counter reset, blank temperatures, a target with
no GPU data, an exporter pod unavailable), two hours of 30 s scrapes written as OpenMetrics and backfilled into a
real Prometheus (`promtool tsdb create-blocks-from openmetrics`, as the tests do).

Each rule is evaluated as its group evaluates it (instant queries) at `--evaluations` instants 30 s apart at the
data's end; the figure is Prometheus' own CPU (user + system, from /proc) per evaluation, the median of `--runs`
passes. Each alert is timed as one expression (all that gpudash generated before recording rules) and as generated:
where it reads a period more than once, its recording rule then the alert reading it back. Prometheus cannot be
handed recorded samples at past instants, so the alert's own part is timed on a second Prometheus backfilled with
the recording rule's answers at the same instants (a range query at the evaluations' step): its cost, not its
answer. `--variants` adds user-defined alarms at M of N (built by the product as a user's definitions would be).
The counters' recording rules the rate panels read (group gpudash-counters, promql.counted_rules) are timed too, each
as its group evaluates it (every scrape interval, 30 s: twice per minute where the alerts' group runs every minute):
a row per rule, and the sums per evaluation of each group.

`--compare SCRAPES` times nothing: it runs the user-defined alarms in both forms side by side in `promtool test rules`
over SCRAPES scrapes of the fleet (`--gpus`: promtool allows a query 10,000 samples, about a dozen GPUs here) and
says whether they give the same series and values at every evaluation `--every` seconds apart
(messy_history.differential).

Usage: `python benchmarks/rules.py [--gpus 64 256] [--evaluations 10] [--runs 3] [--variants]`,
`python benchmarks/rules.py --gpus 11 --compare 110 [--every 60]`. The load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.project import load_project  # noqa: E402
from generator.promql import counted_fields  # noqa: E402
from generator.render.alarms import counted_group, prometheus_expression, prometheus_rules  # noqa: E402
from tests.support import messy_history  # noqa: E402
from tests.support.prometheus_server import Prometheus  # noqa: E402

from benchmarks._timing import SMOKE  # noqa: E402

# seconds of history (at the smallest size, GPUDASH_BENCH_SMOKE=1, what the rules read back: it shows the script runs)
SPAN = 2700 if SMOKE else 2 * 3600
# user-defined alarms a user may write, as (base alarm, evaluation periods, datapoints to alarm, missing data)
VARIANTS = (("gpu-temp-critical", 3, 2, "missing"),) if SMOKE else (
    ("pcie-replays", 3, 2, "missing"), ("gpu-temp-critical", 3, 2, "missing"), ("gpu-idle", 3, 2, "notBreaching"),
    ("uncorrectable-rows", 3, 3, "missing"))


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def evaluation_cpu(prometheus: Prometheus, exprs: list[str], instants: list[int], runs: int) -> tuple[float, int]:
    """Prometheus' CPU seconds per evaluation of `exprs` in turn (median of `runs` passes over `instants`), and the
    series the last expression answered at the last instant."""
    per_pass = []
    answered = 0
    for _ in range(runs):
        before = cpu_seconds(prometheus.process.pid)
        for at in instants:
            for expr in exprs:
                answered = len(prometheus.query(expr, at=at))
        per_pass.append((cpu_seconds(prometheus.process.pid) - before) / len(instants))
    return statistics.median(per_pass), answered


def rule_sets(project, variants: bool) -> list[tuple[str, str, list[dict]]]:
    """(name, the rule's condition as one expression, its rules as generated: the recording rules it reads, if
    any, then the alert) per alert."""
    sets = []
    alarms = [(a.id, a) for a in project.alarms]
    if variants:
        by_id = dict(alarms)
        alarms += [(f"{base} {m} of {n} {missing}",
                    replace(by_id[base], evaluation_periods=n, datapoints_to_alarm=m, missing_data=missing))
                   for base, n, m, missing in VARIANTS if base in by_id]
    for name, alarm in alarms:
        rules = [r for g in prometheus_rules((alarm,), project.catalog, project.settings)["groups"]
                 for r in g["rules"]]
        recorded, alerts = [r for r in rules if "record" in r], [r for r in rules if "alert" in r]
        single = [prometheus_expression(alarm, project.catalog, project.settings)] + [r["expr"] for r in alerts[1:]]
        for k, alert in enumerate(alerts):
            sets.append((name + (f" ({k + 1})" if len(alerts) > 1 else ""), single[k], recorded + [alert]))
    return sets


def counter_group(project) -> dict:
    """The counters' recording rules of the build (the group the rate panels read), as generated."""
    counted = counted_fields([q for d in project.grafana_definitions() for q in d.queries() if not q.raw_promql],
                             project.catalog)
    return counted_group(counted, project.catalog, project.settings) or {"interval": "", "rules": []}


def _recorded_openmetrics(prometheus: Prometheus, recorded: list[dict], instants: list[int], path: Path) -> None:
    """The recording rules' answers at `instants` (one range query each, the instants its steps), as OpenMetrics."""
    step = instants[1] - instants[0] if len(instants) > 1 else 30
    with path.open("w") as out:
        for rule in recorded:
            data = prometheus.api("query_range", query=rule["expr"], start=instants[0], end=instants[-1], step=step)
            out.write(f"# TYPE {rule['record']} gauge\n")
            for series in data["result"]:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted({**series["metric"],
                                                                    **rule.get("labels", {})}.items()))
                out.writelines(f"{rule['record']}{{{labels}}} {value} {at}\n" for at, value in series["values"])
        out.write("# EOF\n")


def run(gpus: int, evaluations: int, runs: int, project, variants: bool) -> Iterator[str]:
    sets = rule_sets(project, variants)
    counters = counter_group(project)
    text = " ".join(r["expr"] for _, _, rules in sets for r in rules) + " ".join(r["expr"] for r in counters["rules"])
    metrics = set(re.findall(r"\b(DCGM_[A-Z0-9_]+)\b", text))
    with tempfile.TemporaryDirectory(prefix="gpudash-rule-bench-") as work:
        work = Path(work)
        start = (int(time.time()) - SPAN - 3600) // messy_history.SCRAPE * messy_history.SCRAPE
        began = time.perf_counter()
        replicas = -(-gpus // messy_history.gpus(1))
        series = messy_history.history(replicas, SPAN // messy_history.SCRAPE, metrics, start)
        (work / "fleet.om").write_text(messy_history.openmetrics(series))
        subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(work / "fleet.om"),
                        str(work / "data")], check=True, capture_output=True)
        (work / "fleet.om").unlink()
        end = start + SPAN - messy_history.SCRAPE
        written = len(series)
        del series
        instants = [end - (evaluations - 1 - i) * 30 for i in range(evaluations)]
        yield (f"### {messy_history.gpus(replicas)} GPUs ({written} series, 2 h of {messy_history.SCRAPE} s "
               f"scrapes, written and backfilled in {time.perf_counter() - began:.0f} s); Prometheus CPU per "
               f"evaluation, median of {runs} passes of {evaluations} evaluations")
        yield ""
        yield "| rule | one expression: bytes, CPU | as generated: bytes (record + alert), CPU | alerts at the last |"
        yield "|---|---|---|---|"
        with Prometheus(work, {"global": {"scrape_interval": "1m"}, "scrape_configs": []}) as prometheus:
            shipped = {alarm.id for alarm in project.alarms}
            alerts = 0.0  # the shipped alerts' group(s), one evaluation, as generated
            for name, single, rules in sets:
                recorded, alert = rules[:-1], rules[-1]
                seconds, answered = evaluation_cpu(prometheus, [single], instants, runs)
                row = f"| {name} | {len(single.encode())} B, {seconds:.3f} s |"
                alone = answered
                if not recorded:
                    assert single == alert["expr"]
                    alerts += seconds if name.split(" (")[0] in shipped else 0
                    yield f"{row} the same |  {answered} |"
                    continue
                recording, _ = evaluation_cpu(prometheus, [r["expr"] for r in recorded], instants, runs)
                folder = work / re.sub(r"\W+", "-", name)
                folder.mkdir()
                _recorded_openmetrics(prometheus, recorded, instants, folder / "recorded.om")
                subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(folder / "recorded.om"),
                                str(folder / "data")], check=True, capture_output=True)
                with Prometheus(folder, {"global": {"scrape_interval": "1m"}, "scrape_configs": []}) as second:
                    reading, answered = evaluation_cpu(second, [alert["expr"]], instants, runs)
                size = " + ".join(str(len(r["expr"].encode())) for r in rules)
                alerts += recording + reading if name.split(" (")[0] in shipped else 0
                yield (f"{row} {size} B, {recording + reading:.3f} s ({recording:.3f} recording + {reading:.3f} "
                       f"alert) | {alone} (as generated: {answered}) |")
            recordings = 0.0
            for rule in counters["rules"]:  # each evaluated alone at the instants, as its group evaluates it
                seconds, answered = evaluation_cpu(prometheus, [rule["expr"]], instants, runs)
                recordings += seconds
                yield (f"| counters: {rule['record']} | {len(rule['expr'].encode())} B, {seconds:.3f} s | the same | "
                       f"{answered} |")
        interval = counters["interval"]
        yield ""
        yield (f"Per evaluation: the shipped alerts {alerts:.3f} s (their group runs at the Prometheus' evaluation "
               f"interval), the counters' recordings {recordings:.3f} s (their group every {interval}, the scrape "
               f"interval).")
    yield ""
    yield f"(load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"


def compare(project, replicas: int, scrapes: int, every: int, variants: tuple = VARIANTS) -> str:
    """Each user-defined alarm of `variants` as one expression and as generated (recording rules, then the alert),
    over the messy fleet's history in `promtool test rules`: the same series and values at every evaluation `every`
    seconds apart (tests/support/messy_history.differential); promtool's verdict."""
    by_id = {a.id: a for a in project.alarms}
    forms = []
    for i, (base, n, m, missing) in enumerate(variants):
        alarm = replace(by_id[base], id=f"v{i}-{base}"[:31], evaluation_periods=n, datapoints_to_alarm=m,
                        missing_data=missing)
        rules = [r for g in prometheus_rules((alarm,), project.catalog, project.settings)["groups"]
                 for r in g["rules"]]
        old = [{"alert": rules[-1]["alert"], "expr": prometheus_expression(alarm, project.catalog, project.settings)}]
        forms.append((f"{base} {m} of {n} {missing}", (old, rules)))
    text = " ".join(r["expr"] for _, pair in forms for rules in pair for r in rules)
    metrics = set(re.findall(r"\b(DCGM_[A-Z0-9_]+)\b", text))
    series = messy_history.input_series(messy_history.history(replicas, scrapes, metrics))
    end = (scrapes - 1) * messy_history.SCRAPE // every * every
    content = messy_history.differential(forms, every, end, [series])
    with tempfile.TemporaryDirectory(prefix="gpudash-rule-compare-") as work:
        work = Path(work)
        (work / "rules.json").write_text(json.dumps(content["rules"]))
        (work / "test.json").write_text(json.dumps({"rule_files": ["rules.json"], "evaluation_interval": f"{every}s",
                                                    "tests": content["tests"]}))
        result = subprocess.run(["promtool", "test", "rules", "test.json"], capture_output=True, text=True, cwd=work)
    verdict = "equal" if result.returncode == 0 else "DIFFERENT"
    return (f"{verdict}: {len(forms)} alarms over {messy_history.gpus(replicas)} GPUs, {scrapes} scrapes, compared "
            f"every {every} s\n" + (result.stdout[-6000:] + result.stderr[-2000:] if result.returncode else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, nargs="+", default=[64])
    parser.add_argument("--evaluations", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--settings", type=Path, default=None)
    parser.add_argument("--variants", action="store_true", help="also user-defined M-of-N alarms")
    parser.add_argument("--compare", type=int, metavar="SCRAPES", default=0,
                        help="compare the user-defined alarms' two forms over this many scrapes instead of timing")
    parser.add_argument("--every", type=int, default=60, help="seconds between the compared evaluations")
    args = parser.parse_args()
    missing = [name for name in ("prometheus", "promtool") if shutil.which(name) is None]
    if missing:
        raise SystemExit(f"benchmarks/rules.py needs {' and '.join(missing)} on PATH (apt-get install prometheus)")
    project = load_project(args.settings)
    if args.compare:
        print(compare(project, -(-args.gpus[0] // messy_history.gpus(1)), args.compare, args.every))
        return
    for gpus in args.gpus:
        for line in run(gpus, args.evaluations, args.runs, project, args.variants):
            print(line, flush=True)


if __name__ == "__main__":
    main()
