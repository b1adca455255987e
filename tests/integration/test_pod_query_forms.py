"""The per-pod panels' shorter query forms read what the longer forms read, step by step, over a messy fleet.

Prometheus evaluates every sub-expression of a range query at every step, even one that selects no series, so text
costs CPU (benchmarks/queries.py --dashboard gpudash-by-pod --cpu). A pod's pooled memory share ("Framebuffer used
share by pod") reads its used memory without the MIG blank-instance check, which the total it is filtered by
(`and`) runs over both fields (a88cfb0). Here the form with that check (`checked` forced on) and without are
evaluated on one real Prometheus over half an hour of a fleet built to hit every branch the blank checks and the
lookback take (the checks themselves change the answer on it), and must give the same series with the same values
at every 30 s step:

* node n1 (the `node` label): GPU 0 whole, pod a/x; GPU 1 MIG, a/x's 3g.40gb and 1g.10gb, whose free memory reads
  DCGM's blank for ten minutes, and b/x's 1g.10gb (one pod name in two namespaces); GPU 2 MIG, a/x's 3g.40gb writing
  its used memory and no free memory at all beside its complete 1g.10gb, and b/y's 3g.40gb; GPU 3 time-sliced, named
  under c/p or c/q by turns; GPU 4 no pod holds;
* node n2 mid-upgrade: an old exporter writing `Hostname` and a new one writing `hostname` both serve GPU 0 (pod
  d/u), each with its own reading; its exporter replaced at minute 15 (a new `instance`), one scrape of it missed.
"""

from __future__ import annotations

from generator import promql
from generator.model import Query
from generator.preview.interpolate import interpolate, variables
from generator.render.grafana import variable_scope
from tests.support.projects import project_fixture
from tests.support.prometheus_server import SCENE_RANGE, backfilled_fixture

STEP, SCRAPES, OFFSET = 30, 60, 7
USED, FREE, UTIL, TEMP = "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP"
BLANK = 9223372036854775794  # DCGM's blank of an integer field
VARIABLES = ("namespace", "pod", "node", "gpu", "cluster")


def _series(k: int) -> list[tuple[str, dict[str, str], dict[str, float]]]:
    """(exporter labels, GPU labels, {field: value}) of every series written at scrape `k`."""
    n1 = 'node="n1",Hostname="n1",instance="10.0.0.1:9400"'
    out = [(n1, {"gpu": "0", "namespace": "a", "pod": "x"}, {USED: 30000 + 100 * k, FREE: 50000 - 100 * k,
                                                          UTIL: k % 100, TEMP: 40})]
    free = BLANK if 20 <= k < 40 else 9000 - 50 * k
    out += [(n1, {"gpu": "1", "GPU_I_ID": "1", "GPU_I_PROFILE": "3g.40gb", "namespace": "a", "pod": "x"},
             {USED: 40000 - 10 * k, FREE: 192 + 10 * k, TEMP: 41}),
            (n1, {"gpu": "1", "GPU_I_ID": "2", "GPU_I_PROFILE": "1g.10gb", "namespace": "a", "pod": "x"},
             {USED: 856 + 50 * k, FREE: free, TEMP: 41}),
            (n1, {"gpu": "1", "GPU_I_ID": "3", "GPU_I_PROFILE": "1g.10gb", "namespace": "b", "pod": "x"},
             {USED: 5000, FREE: 4856, TEMP: 41}),
            (n1, {"gpu": "2", "GPU_I_ID": "1", "GPU_I_PROFILE": "3g.40gb", "namespace": "a", "pod": "x"},
             {USED: 1000 + k, TEMP: 42}),
            (n1, {"gpu": "2", "GPU_I_ID": "3", "GPU_I_PROFILE": "1g.10gb", "namespace": "a", "pod": "x"},
             {USED: 3000, FREE: 6856, TEMP: 42}),
            (n1, {"gpu": "2", "GPU_I_ID": "2", "GPU_I_PROFILE": "3g.40gb", "namespace": "b", "pod": "y"},
             {USED: 2000, FREE: 38000, TEMP: 42}),
            (n1, {"gpu": "3", "namespace": "c", "pod": "p" if k % 3 else "q"}, {USED: 5000 + k, FREE: 75000 - k,
                                                                                UTIL: 50, TEMP: 43}),
            (n1, {"gpu": "4"}, {USED: 0, FREE: 80000, UTIL: 0, TEMP: 30})]
    if k != 33:  # one missed scrape of the new exporter
        new = f'hostname="n2",instance="10.0.1.{1 if k < 30 else 2}:9400"'
        out.append((new, {"gpu": "0", "namespace": "d", "pod": "u"}, {USED: 60000, FREE: 20000, UTIL: 70, TEMP: 50}))
    if k < 45:  # the old exporter, until it is gone
        out.append(('Hostname="n2",instance="10.0.0.2:9400"', {"gpu": "0", "namespace": "d", "pod": "u"},
                    {USED: 40000, FREE: 40000, UTIL: 20, TEMP: 50}))
    return out


def _openmetrics(start: int) -> str:
    lines = []
    for field in (USED, FREE, UTIL, TEMP):
        lines.append(f"# TYPE {field} gauge")
        for k in range(SCRAPES):
            for exporter, gpu, values in _series(k):
                if field in values:
                    labels = ",".join([exporter, 'job="dcgm-exporter"', f'UUID="GPU-{"n2" if "n2" in exporter else "n1"}-{gpu["gpu"]}"',
                                       *(f'{name}="{value}"' for name, value in gpu.items())])
                    lines.append(f"{field}{{{labels}}} {values[field]} {start + OFFSET + k * STEP}")
    return "\n".join(lines) + "\n# EOF\n"


prometheus = backfilled_fixture("pod-query-forms", _openmetrics, SCRAPES * STEP, STEP)


project = project_fixture()


QUERIES = {
    "Framebuffer used share by pod": Query(USED, "avg", ("pod",), over=(USED, FREE)),
    "Framebuffer used share by namespace": Query(USED, "avg", ("namespace",), over=(USED, FREE)),
}


def _expr(project, query: Query) -> str:
    settings = project.settings
    return promql.expression(query, settings.labels, project.catalog, variable_scope(settings),
                             resolution=f"{settings.scrape.seconds}s",
                             named_within=promql.label_lookback(settings.scrape.seconds))


def _answer(prometheus, expr: str) -> dict:
    server, start = prometheus
    query = interpolate(expr, {**SCENE_RANGE, "__rate_interval": "2m", "__interval": "30s", **variables({}, VARIABLES)})
    result = server.api("query_range", query=query, start=start, end=start + SCRAPES * STEP + 60, step=STEP)["result"]
    return {tuple(sorted(s["metric"].items())): s["values"] for s in result}


def test_the_share_reads_the_same_at_every_run(prometheus, project):
    """One query over the same data answers the same each time: a pod on a GPU two exporters serve (0.5 and 0.75) read
    0.5 in some runs and 0.75 in others at every step, and a time-sliced GPU 53 s after its last scrape read the older
    copy's 5,057 or the newest 5,059 MiB (a88cfb0: topk by GPU of equal totals, the tie broken by series order)."""
    expr = _expr(project, QUERIES["Framebuffer used share by pod"])
    answers = [_answer(prometheus, expr) for _ in range(6)]
    assert all(answer == answers[0] for answer in answers)
