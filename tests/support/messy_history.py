"""A messy fleet's history of 30 s scrapes, for a backfilled Prometheus (OpenMetrics) or `promtool test rules`
(input series), and a differential of two forms of the rules over it.

The fleet is tests/support/mixed_fleet.py's nodes, repeated (`replicas`): `Hostname` and `hostname` spellings, an
exporter writing its own pod name as Hostname, exporters without a hostname, MIG instances with device fields
repeated, idle GPUs, the same pod name in two namespaces, a time-sliced GPU whose pod label moves at every scrape,
DCGM's not-supported blank. Over it, near the end of the history (where a rule evaluated then reads it), per node
of each replica: a 7.5-minute gap in one node's data (`up` 0, its series stale), a counter reset on another, a
stretch of blank temperatures, a node scraped without the `node` label, a target that brings no GPU data for
12.5 minutes (`scrape_samples_post_metric_relabeling` 0), an exporter pod unavailable meanwhile; temperatures
crossing the thresholds, PCIe replays in bursts, utilization moving around the idle threshold. A series that
leaves a target's scrape gets a staleness marker at that scrape, as Prometheus writes it (the OpenMetrics form
has none: a backfill cannot write one).
"""

from __future__ import annotations

import functools
import json
import subprocess
from dataclasses import replace
from pathlib import Path

from tests.support import mixed_fleet

SCRAPE = 30  # seconds between scrapes
EXPORTER_NAMESPACE = "gpu-operator"
JOB = "gpu-metrics"
STALE = "stale"
Series = dict[tuple[str, str], list[tuple[int, str]]]  # (metric, labels) -> [(second, value or STALE)]


def fleet(replicas: int) -> list[tuple[int, int, mixed_fleet.Node]]:
    """(replica, node index, node): mixed_fleet's nodes `replicas` times, each replica's nodes, exporter pods and GPU
    UUIDs its own; the workload pods keep their names (one pod name on as many nodes as there are replicas)."""
    return [(r, n, replace(node, name=f"{node.name}-{r}", exporter_pod=f"{node.exporter_pod}-{r}"))
            for r in range(replicas) for n, node in enumerate(mixed_fleet.FLEET)]


def gpus(replicas: int) -> int:
    return replicas * sum(len(node.gpus) for node in mixed_fleet.FLEET)


@functools.lru_cache(maxsize=None)
def _bursts(r: int, k: int) -> int:
    """PCIe replays counted up to scrape k: 200 a scrape in one stretch of 20 scrapes in three."""
    return sum(200 for j in range(k + 1) if (j // 20 + r) % 3 == 0)


def _counter(metric: str, gpu, instance, elapsed: int) -> float | None:
    raw = mixed_fleet._value(metric, gpu, instance, elapsed)
    return None if raw is None else float(raw.split()[0])


def _value(metric: str, r: int, n: int, gpu, instance, k: int, scrapes: int) -> str | None:
    """The exporter's reading of `metric` at scrape k of `scrapes`: mixed_fleet's, made messy."""
    elapsed = k * SCRAPE
    if metric == "DCGM_FI_DEV_GPU_TEMP":
        if n == 2 and scrapes - 12 <= k < scrapes - 8:
            return mixed_fleet.NOT_SUPPORTED  # a stretch of blanks
        return f"{gpu.temp + 12 * ((k // 40 + r + n) % 2) - 6:g}"  # over and under the thresholds in turn
    if metric in mixed_fleet.COUNTERS:
        raw = mixed_fleet._value(metric, gpu, instance, elapsed)
        if raw is None or raw == mixed_fleet.NOT_SUPPORTED:
            return raw
        grown = float(raw.split()[0]) + (_bursts(r, k) if metric == "DCGM_FI_DEV_PCIE_REPLAY_COUNTER" else 0)
        reset = scrapes - 15
        if n == 1 and k >= reset:  # a driver reload: the counter starts again from 0
            before = _counter(metric, gpu, instance, reset * SCRAPE) + (
                _bursts(r, reset) if metric == "DCGM_FI_DEV_PCIE_REPLAY_COUNTER" else 0)
            grown -= before
        return f"{grown:.0f}"
    if metric not in mixed_fleet.FIELDS:  # a field the model has none of (remapped rows ...): growing in steps
        return f"{k // 8 + r % 2:g}"
    raw = mixed_fleet._value(metric, gpu, instance, elapsed)
    if raw is not None and raw != mixed_fleet.NOT_SUPPORTED and metric == "DCGM_FI_DEV_GPU_UTIL" and (r + n) % 2:
        return f"{float(raw) + 3 * ((k // 25 + n) % 2):g}"  # around the idle threshold
    return raw


def history(replicas: int, scrapes: int, metrics: set[str], start: int = 0) -> Series:
    """The fleet's samples from `start` (seconds) over `scrapes` scrapes of each node, at the node's own offset."""
    series: Series = {}
    nodes = fleet(replicas)
    for i, (r, n, node) in enumerate(nodes):
        offset = (i * 7) % SCRAPE
        target = f'instance="10.{r}.{n}.1:9400",job="{JOB}",exporter_pod="{node.exporter_pod}"'
        if n != 6:  # one node scraped without the node label (another scrape path)
            target += f',node="{node.name}"'
        gap = range(scrapes - 25 - r % 3, scrapes - 10 - r % 3) if n == 0 else range(0)
        no_gpu_data = range(scrapes - 30, scrapes - 5) if n == 7 else range(0)
        previous: set[tuple[str, str]] = set()
        for k in range(scrapes):
            at = start + offset + k * SCRAPE
            current: set[tuple[str, str]] = set()
            if k not in gap:
                if k not in no_gpu_data:
                    for metric in sorted(metrics):
                        for gpu in node.gpus:
                            for instance in gpu.instances:
                                value = _value(metric, r, n, gpu, instance, k, scrapes)
                                if value is None:
                                    continue
                                for pod in node.labelled(instance, k) or (None,):
                                    key = (metric, f"{mixed_fleet._labels(node, gpu, instance, pod)},{target}")
                                    series.setdefault(key, []).append((at, value))
                                    current.add(key)
                key = ("scrape_samples_post_metric_relabeling", target)
                series.setdefault(key, []).append((at, str(len(current))))
                current.add(key)
            series.setdefault(("up", target), []).append((at, "0" if k in gap else "1"))
            for key in previous - current:
                series[key].append((at, STALE))
            previous = current
    ksm = 'job="kube-state-metrics",instance="10.9.9.9:8080"'
    daemonset = f'namespace="{EXPORTER_NAMESPACE}",daemonset="nvidia-dcgm-exporter"'
    for k in range(scrapes):
        at = start + k * SCRAPE
        series.setdefault(("up", ksm), []).append((at, "1"))
        series.setdefault(("kube_daemonset_labels", f'{ksm},{daemonset},label_app="nvidia-dcgm-exporter"'),
                          []).append((at, "1"))
        for name in ("desired_number_scheduled", "number_available", "updated_number_scheduled"):
            count = len(nodes) - (1 if name == "number_available" and scrapes - 25 <= k < scrapes - 10 else 0)
            series.setdefault((f"kube_daemonset_status_{name}", f"{ksm},{daemonset}"), []).append((at, str(count)))
        for _, _, node in nodes:
            series.setdefault(("kube_pod_info", f'{ksm},namespace="{EXPORTER_NAMESPACE}",pod="{node.exporter_pod}",'
                                                f'node="{node.name}"'), []).append((at, "1"))
    return series


def openmetrics(series: Series) -> str:
    """The samples as OpenMetrics (seconds since the epoch), staleness markers left out."""
    lines = []
    for metric in sorted({m for m, _ in series}):
        lines.append(f"# TYPE {metric} gauge")
        lines += [f"{metric}{{{labels}}} {value} {at}" for (name, labels), samples in series.items() if name == metric
                  for at, value in samples if value != STALE]
    return "\n".join(lines + ["# EOF"]) + "\n"


def input_series(series: Series) -> list[dict[str, str]]:
    """The samples as promtool input series on a 1 s interval from 0 (`_xN`: N seconds without a sample)."""
    out = []
    for (metric, labels), samples in series.items():
        tokens, last = [], -1
        for at, value in samples:
            gap = at - last - 1
            if gap:
                tokens.append("_" if gap == 1 else f"_x{gap}")
            tokens.append(value)
            last = at
        out.append({"series": f"{metric}{{{labels}}}", "values": " ".join(tokens)})
    return out


def differential(forms: list[tuple[str, list[dict]]], every: int, end: int, tests_input: list[list[dict]]) -> dict:
    """A promtool unit-test file's content (rule files apart: `rules`) comparing forms of the same rules: `forms` is
    [(name, rules)], each name's rules a list of groups' rule lists, in pairs: (old rules, new rules), the last rule
    of each the one compared. Every `every` seconds up to `end`, what the two last rules give (labels and values)
    must be the same, read from the samples each group wrote at that instant; and the old one must give something
    at some instant (not a comparison of nothing). One test group per input."""
    groups, checks, some = [], [], []
    for i, (name, (old, new)) in enumerate(forms):
        compared = []
        for side, rules in (("old", old), ("new", new)):
            record = f"gpudash_check_{side}_{i}"
            groups.append({"name": f"{side}-{i}", "rules": rules[:-1] + [{"record": record,
                                                                           "expr": rules[-1]["expr"]}]})
            compared.append(f"last_over_time({record}[1ms])")
        was, now = compared
        checks.append(f'label_replace(({was} != {now}) or ({was} unless {now}) or ({now} unless {was}), '
                      f'"gpudash_check", "{name}", "", "")')
        some.append(f"(count(count_over_time(gpudash_check_old_{i}[{end}s])) > 0) * 0 + 1")
    differs = " or ".join(checks)
    tests = []
    for series in tests_input:
        tests.append({"interval": "1s", "input_series": series,
                      "promql_expr_test": [{"expr": differs, "eval_time": f"{at}s", "exp_samples": []}
                                           for at in range(every, end + 1, every)]
                      + [{"expr": expr, "eval_time": f"{end}s", "exp_samples": [{"labels": "{}", "value": 1}]}
                         for expr in some]})
    return {"rules": {"groups": groups}, "tests": tests}


def differential_failures(content: dict, every: int, folder: Path) -> str:
    """Runs a differential's content (`differential`) with `promtool test rules` in `folder`: what it printed where a
    form differed (or the old gave nothing), "" where every check passed."""
    from tests.support.prometheus_server import binary

    (folder / "rules.json").write_text(json.dumps(content["rules"]))
    (folder / "test.json").write_text(json.dumps({"rule_files": ["rules.json"], "evaluation_interval": f"{every}s",
                                                  "tests": content["tests"]}))
    result = subprocess.run([binary("promtool"), "test", "rules", "test.json"], capture_output=True, text=True,
                            cwd=folder)
    return "" if result.returncode == 0 else result.stdout[-4000:] + result.stderr[-2000:]
