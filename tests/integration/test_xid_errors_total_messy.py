"""DCGM_EXP_XID_ERRORS_TOTAL's per-code series added up in a messy fleet, on a real Prometheus.

Node n1's exporter writes `Hostname`, n2's (a newer exporter) `hostname`; n1's GPU 0 is read by two exporter copies
(two scrape targets of one exporter, `instance` apart); one pod name, train-0, runs in namespaces ml (n1 GPU 0) and
infer (n2 GPU 0); n2's GPU 1 is idle (no pod labels). Every code's series starts before the range (the last 20
minutes, scrapes 80 to 119), so no first event falls in it.

Truth in the range: n1 GPU 0 (ml/train-0) 3 (XID 79 at scrape 90, XID 13 at 93 and 100); n2 GPU 0 (infer/train-0) 2
(XID 31 at 85 and 95); n2 GPU 1 (idle) 1 (XID 79 at 88); the fleet 6. An alarm on more than 1 error per GPU in
5 minutes fires for n1 GPU 0 alone, at the evaluations after scrapes 93 to 102 (two errors of two codes, then two of
XID 13), and for no other GPU (none has two errors within 5 minutes).
"""

from __future__ import annotations

from generator.artifacts import build
from generator.output import encode
from tests.integration.test_xid_errors_total import FIELD, OFFSET, SCRAPES, STEP, _project
from tests.integration.test_xid_errors_total import shown  # noqa: F401 - its panels, on this module's Prometheus
from tests.support.messy_history import Series, openmetrics
from tests.support.prometheus_server import backfilled_fixture
from tests.support.promtool_rules import parsed_rules

# (node label, node, gpu, pod labels, exporter copies' instances, {code: scrapes of its errors})
GPUS = [("Hostname", "n1", 0, ("ml", "train-0"), ("10.0.0.1:9400", "10.0.0.9:9400"), {"79": (2, 90), "13": (3, 93, 100)}),
        ("hostname", "n2", 0, ("infer", "train-0"), ("10.0.0.2:9400",), {"31": (1, 85, 95)}),
        ("hostname", "n2", 1, None, ("10.0.0.2:9400",), {"79": (5, 88)})]


def _openmetrics(start: int) -> str:
    series: Series = {}
    for spelling, node, gpu, pod, instances, codes in GPUS:
        for instance in instances:
            labels = (f'gpu="{gpu}",UUID="GPU-{node}-{gpu}",device="nvidia{gpu}",modelName="NVIDIA H100 80GB HBM3",'
                      f'{spelling}="{node}",job="dcgm-exporter",instance="{instance}"')
            if pod:
                labels += f',container="main",namespace="{pod[0]}",pod="{pod[1]}"'
            for code, seen in codes.items():
                series[(FIELD, f'{labels},xid="{code}"')] = [
                    (start + OFFSET + k * STEP, str(sum(s <= k for s in seen))) for k in range(min(seen), SCRAPES)]
    return openmetrics(series)


prometheus = backfilled_fixture("xid-errors-total-messy", _openmetrics, SCRAPES * STEP, STEP)


def test_per_gpu(shown):
    assert shown["per GPU"] == {"n1 GPU 0": 3.0, "n2 GPU 0": 2.0, "n2 GPU 1": 1.0}, shown["per GPU"]


def test_per_pod(shown):
    assert shown["per pod"] == {"Pod ml/train-0": 3.0, "Pod infer/train-0": 2.0}, shown["per pod"]


def test_fleet(shown):
    assert shown["fleet"] == {FIELD: 6.0}, shown["fleet"]


ALARMS = f'''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("xid-total", "XID errors", Condition(Query("{FIELD}", "sum", ("node", "gpu"), as_increase=True), ">", 1),
                severity="critical")
'''


def _firing(end: int) -> set[tuple[str, str]]:
    """The GPUs with more than 1 error at the scrapes of the 5 minutes before the evaluation just after scrape `end`
    (a code's first error, which no increase counts, left out: none falls in the range)."""
    return {(node, str(gpu)) for _, node, gpu, _, _, codes in GPUS
            if sum(end - 10 < s <= end and s > min(seen) for seen in codes.values() for s in seen) > 1}


def test_the_alarm_rule_adds_a_gpus_codes_and_counts_its_copies_once(prometheus, tmp_path_factory):
    """A GPU's errors of its codes add up and its copies count once: n1 GPU 0 (two copies, `Hostname`) fires where
    its two codes' errors make 2 in a period, as where XID 13's alone do, and no GPU else."""
    server, start = prometheus
    files = encode(build(_project(tmp_path_factory.mktemp("xid-total-messy"), ALARMS), grafana=False))
    (expr,) = [r["expr"] for g in parsed_rules(files["prometheus/rules.yaml"])["groups"] for r in g["rules"]
               if r.get("alert") == "GpudashXidTotal"]
    fired = {end: {(s["metric"].get("node"), s["metric"].get("gpu"))
                   for s in server.query(expr, at=start + OFFSET + end * STEP + 1)} for end in range(80, SCRAPES)}
    assert fired == {end: _firing(end) for end in fired}
    assert {end for end, gpus in fired.items() if gpus} == set(range(93, 103))
