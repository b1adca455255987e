"""MIG with exporter.virtual_gpus: a MIG GPU whose instances pods share, beside whole GPUs with and without pods.

One node whose exporter (4.5.3+, KUBERNETES_VIRTUAL_GPUS) writes, for each MIG instance pods hold, framebuffer used
(a per-process field) as the instance's own series (no pod) plus one copy per pod carrying the pod's processes'
share, and engine activity (not per process) as one copy per holding pod, each the instance's reading. Half an hour
of 30 s scrapes backfilled into a real Prometheus, each reading moving a little every scrape.

- GPU 0 split in two MIG instances: instance 1 shared by pods ml/a and ml/b (shares 5,000 and 3,000 MiB of the
  instance's 10,000), instance 2 held by ml/c (7,000 of 15,000).
- GPU 1 whole, held by ml/d (19,000 of 20,000 MiB; utilization 58 of 60 %).
- GPU 2 whole, no pod (its own series only).
- GPU 3 whole, shared by time-slicing between ml/e and ml/f (shares 12,000 and 9,000 MiB of 30,000; 30 and 25 % of
  80 %).

Along the half hour: instance 1's own framebuffer series reads DCGM's blank at odd scrapes (its pods' shares written
all along), as does GPU 1's own utilization; ml/b leaves instance 1 at scrape 20; instance 2 writes nothing from
scrape 40 on (no staleness marker); GPU 3's own series of both per-process fields read only DCGM's blank from
scrape 44 to 51 (longer than the look-back), and at odd scrapes after, its pods' shares written all along.

The truth at an instant, each reading at its latest within the look-back (promql.label_lookback: 4 scrape
intervals, 120 s), a pod's share never the device's reading: a GPU's framebuffer used is its instances' readings
added (each instance once, whatever pods share it); its engine activity the mean of its instances (each once);
utilization on the MIG GPU 100 times that mean; per pod its own share of framebuffer, the activity of the instance
it holds; a count of GPUs over the fleet or a node, each GPU with a reading of the device within the look-back
(its own series where it has a sample, not its pods' shares). Before, when instance 1's own series read the blank
just after instance 2's last sample left the look-back, GPU 0 read both instances (25,008.1 MiB for 10,004.2, the
fleet's total 45,316.7 for 30,312.8) for up to a scrape interval past the look-back: a step of the late tier's
subquery reads a sample up to a scrape interval older than the step, and only the exporter's copy as a whole was held
to the look-back, not each of its MIG instances.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from generator.model import Query
from generator.project import load_project
from generator.promql import expression, label_lookback
from generator.render.alarms import rule_step
from generator.resources import default_counters
from tests.integration.test_blank_mean_lookback import HOW
from tests.support.blank_scene import END, STEP, STEPS, read_instants
from tests.support.panel_expression import panel_expression
from tests.support.prometheus_server import backfilled_fixture
from tests.support.shown_truth import off_truth

UTIL, FB, ACTIVE = "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
NODE = "ip-10-0-2-1"
LOOKBACK = 4 * STEP
# (gpu, MIG instance or None): (pods: (namespace, pod, fb share, util share)), device fb, device util, activity
UNITS = {(0, "1"): ((("ml", "a", 5000, None), ("ml", "b", 3000, None)), 10000, None, 0.5),
         (0, "2"): ((("ml", "c", 7000, None),), 15000, None, 0.2),
         (1, None): ((("ml", "d", 19000, 58),), 20000, 60, 0.6),
         (2, None): ((), 300, 0, 0.1),
         (3, None): ((("ml", "e", 12000, 30), ("ml", "f", 9000, 25)), 30000, 80, 0.8)}


NOT_SUPPORTED = 9223372036854775794
B_LEFT, GONE = 20, 40  # ml/b's copies end at scrape 20; instance 2 of GPU 0 writes nothing from scrape 40
OWN_BLANK = (44, 52)  # GPU 3's own per-process series read only the blank at these scrapes


def holders(unit, k: int):
    return tuple(p for p in UNITS[unit][0] if not (p[1] == "b" and k >= B_LEFT))


def reading(field: str, unit, k: int) -> float | None:
    _, fb, util, active = UNITS[unit]
    if unit == (0, "2") and k >= GONE:
        return None
    if k % 2 and (field == FB and unit == (0, "1") or field == UTIL and unit == (1, None)):
        return NOT_SUPPORTED  # the unit's own series reads DCGM's blank at odd scrapes
    if unit == (3, None) and field in (FB, UTIL) and (OWN_BLANK[0] <= k < OWN_BLANK[1] or k > OWN_BLANK[1] and k % 2):
        return NOT_SUPPORTED  # a run of blanks longer than the look-back, then at odd scrapes
    if field == FB:
        return fb + k / 10
    if field == UTIL:
        return None if util is None else util + k / 10
    return active + k / 1000


def openmetrics(start: int) -> str:
    lines = []
    for field in (FB, UTIL, ACTIVE):
        lines.append(f"# TYPE {field} gauge")
        for k in range(STEPS):
            for gpu, instance in UNITS:
                pods = holders((gpu, instance), k)
                value = reading(field, (gpu, instance), k)
                if value is None:
                    continue
                mig = f',GPU_I_ID="{instance}",GPU_I_PROFILE="3g.40gb"' if instance else ""
                base = (f'gpu="{gpu}",UUID="GPU-{NODE}-{gpu}",device="nvidia{gpu}",modelName="NVIDIA A100-SXM4-80GB",'
                        f'Hostname="{NODE}"{mig},DCGM_FI_DRIVER_VERSION="570.133.20",node="{NODE}",'
                        f'job="dcgm-exporter",instance="10.0.2.1:9400"')
                per_process = field in (FB, UTIL)
                written = [("", value)] if per_process or not pods else []
                for v, (namespace, pod, fb, util) in enumerate(pods):
                    share = (fb if field == FB else util) if per_process else value
                    if value == NOT_SUPPORTED and not per_process:
                        share = value
                    if share is None:
                        continue
                    written.append((f',container="main",namespace="{namespace}",pod="{pod}",'
                                    f'pod_uid="uid-{namespace}-{pod}",vgpu="{v}"', share))
                lines += [f'{field}{{{base}{more}}} {w:g} {start + k * STEP}' for more, w in written]
    return "\n".join(lines) + "\n# EOF\n"


def latest(field: str, unit, t: float) -> float | None:
    read = [value for k in range(STEPS) if t - LOOKBACK < k * STEP <= t
            and (value := reading(field, unit, k)) is not None and value != NOT_SUPPORTED]
    return read[-1] if read else None


def named(unit, t: float) -> set:
    """The pods a scrape within the look-back before `t` named on `unit` (a GPU or MIG instance)."""
    return {p for k in range(STEPS) if t - LOOKBACK < k * STEP <= t and reading(FB, unit, k) is not None
            for p in holders(unit, k)}


def per_gpu(field: str, t: float) -> dict[int, float]:
    """Each GPU's value: summed framebuffer over its instances, mean activity over them; utilization the device's on
    a whole GPU, 100 times the mean activity on a MIG GPU."""
    groups = defaultdict(list)
    for unit in UNITS:
        value = latest(ACTIVE if field == UTIL and unit[1] else field, unit, t)
        if value is not None:
            groups[unit[0]].append(value)
    out = {}
    for gpu, values in groups.items():
        mig = any(u[1] for u in UNITS if u[0] == gpu)
        if field == FB:
            out[gpu] = sum(values)
        elif field == UTIL and mig:
            out[gpu] = 100 * sum(values) / len(values)
        else:
            out[gpu] = sum(values) / len(values)
    return out


backfilled = backfilled_fixture("mig-virtual-gpus-lookback", openmetrics, END, STEP)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mig-virtual-gpus-lookback")
    wanted = {UTIL, FB, ACTIVE, "DCGM_FI_DRIVER_VERSION"}
    (folder / "counters.csv").write_text("\n".join(
        line for line in default_counters().read_text().splitlines()
        if line and not line.startswith("#") and line.split(",")[0].strip() in wanted) + "\n")
    (folder / "gpudash.yaml").write_text("exporter:\n  virtual_gpus: true\n")
    return load_project(folder / "gpudash.yaml", folder / "counters.csv")


def _expr(project, field, how, by):
    return panel_expression(project, Query(field, how, by))


@pytest.mark.parametrize("field", [FB, ACTIVE, UTIL])
@pytest.mark.parametrize("how", ["avg", "sum", "max"])
@pytest.mark.parametrize("key", [None, "gpu"])
def test_fleet_and_per_gpu(project, backfilled, field, how, key):
    prometheus, start = backfilled
    by = () if key is None else ("node", "gpu")
    shown = read_instants(prometheus, start, _expr(project, field, how, by),
                  (lambda m: "all") if key is None else (lambda m: m["gpu"]))

    def truth(t):
        values = per_gpu(field, t)
        if key is None:
            return {"all": HOW[how](list(values.values()))} if values else {}
        return {str(g): v for g, v in values.items()}
    wrong = off_truth(shown, truth)
    assert not wrong, f"instants: (shown, true) {dict(list(wrong.items())[:3])} ({len(wrong)} of {len(shown)})"


@pytest.mark.parametrize("field", [FB, ACTIVE, UTIL])
@pytest.mark.parametrize("how", ["avg", "sum", "max"])
def test_per_pod(project, backfilled, field, how):
    prometheus, start = backfilled
    shown = read_instants(prometheus, start, _expr(project, field, how, ("pod",)),
                          lambda m: f"{m['namespace']}/{m['pod']}")

    def truth(t):
        out = {}
        for unit in UNITS:
            for namespace, pod, fb, util in named(unit, t):
                if field == FB:
                    v = fb
                elif field == ACTIVE or unit[1]:
                    v = latest(ACTIVE, unit, t) * (100 if field == UTIL else 1)
                else:
                    v = util
                out[f"{namespace}/{pod}"] = v
        return out
    wrong = off_truth(shown, truth)
    assert not wrong, f"instants: (shown, true) {dict(list(wrong.items())[:3])} ({len(wrong)} of {len(shown)})"



@pytest.mark.parametrize("how", ["avg", "sum", "max"])
def test_a_namespaces_framebuffer_adds_the_shares_of_its_pods_each_instances_latest_scrape_wrote(project, backfilled,
                                                                                                   how):
    """Per namespace, each GPU's use is its pods' shares added, of the pods each instance's latest scrape within the
    look-back wrote (a pod gone within the look-back adds no share, though the per-pod panel shows it for the
    look-back: ml/b's 3,000 MiB from 600 to 690 s), its instances' added on a MIG GPU; the namespace's mean or total
    over those GPUs. Its largest is a pod's, as the per-pod panel shows it (ml/e's 12,000 MiB of GPU 3, not the
    21,000 its two pods use)."""
    prometheus, start = backfilled
    shown = read_instants(prometheus, start, _expr(project, FB, how, ("namespace",)), lambda m: m["namespace"])

    def truth(t):
        if how == "max":
            shares = [fb for unit in UNITS for _, _, fb, _ in named(unit, t)]
            return {"ml": max(shares)} if shares else {}
        gpus = defaultdict(float)
        for unit in UNITS:
            scrapes = [k for k in range(STEPS) if t - LOOKBACK < k * STEP <= t and reading(FB, unit, k) is not None]
            for _, _, fb, _ in holders(unit, scrapes[-1]) if scrapes else ():
                gpus[unit[0]] += fb
        return {"ml": HOW[how](list(gpus.values()))} if gpus else {}
    wrong = off_truth(shown, truth)
    assert not wrong, f"instants: (shown, true) {dict(list(wrong.items())[:3])} ({len(wrong)} of {len(shown)})"


@pytest.mark.parametrize("field, key", [(FB, None), (ACTIVE, None), (UTIL, None), (FB, "node"), (ACTIVE, "node"),
                                        (UTIL, "node"), (FB, "namespace"), (ACTIVE, "namespace"), (UTIL, "namespace"),
                                        (FB, "pod"), (UTIL, "pod")])
def test_a_count_of_gpus_counts_each_gpu_once_with_a_reading(project, backfilled, field, key):
    """GPUs reporting a field, over the fleet, per node, per namespace and per pod: the MIG GPU once, GPU utilization
    by its stand-in (engine activity) on its instances, as the namespace's mean reads it (per namespace, 1 GPU for 2
    before). Over the fleet and per node a GPU counts with a reading of the device within the look-back, as the
    per-GPU panels read it (its own series where it has a sample): GPU 3, whose own series read only the blank from
    scrape 44 to 51 while its two pods' shares read, is not counted from 120 s into that run (4 GPUs for 3 before),
    nor GPU 0 at the end, whose instance 1's own series read the blank at the last scrape (3 for 2 before). Per
    namespace and pod, a GPU counts under each pod a scrape within the look-back named on it, its share a reading."""
    prometheus, start = backfilled
    by = () if key is None else (key,)
    name = {None: lambda m: "all", "node": lambda m: m["node"], "namespace": lambda m: m["namespace"],
            "pod": lambda m: f"{m['namespace']}/{m['pod']}"}[key]
    shown = read_instants(prometheus, start, _expr(project, field, "count", by), name)

    def truth(t):
        if key in (None, "node"):
            gpus = set(per_gpu(field, t))
            return {"all" if key is None else NODE: len(gpus)} if gpus else {}
        gpus = defaultdict(set)
        for unit in UNITS:
            for namespace, pod, _, _ in named(unit, t):
                gpus[namespace if key == "namespace" else f"{namespace}/{pod}"].add(unit[0])
        return {group: len(held) for group, held in gpus.items()}
    wrong = off_truth(shown, truth)
    assert not wrong, f"instants: (shown, true) {dict(list(wrong.items())[:3])} ({len(wrong)} of {len(shown)})"


PERIOD = 2 * STEP  # an alert's period shorter than GPU 3's run of blanks


@pytest.mark.parametrize("field", [FB, UTIL])
@pytest.mark.parametrize("key", [None, "node"])
def test_a_rules_count_of_gpus_counts_each_gpu_with_a_device_reading_in_its_period(project, backfilled, field, key):
    """An alert rule's count of GPUs reporting a field over its period counts a GPU with a reading of the device in
    the period (its own series where it has a sample, not its pods' shares): GPU 3, whose own series read only the
    blank from scrape 44 to 51, is not counted for the periods within that run (4 GPUs for 3 before)."""
    prometheus, start = backfilled
    settings = project.settings
    expr = expression(Query(field, "count", () if key is None else (key,)), settings.labels, project.catalog,
                      gauge_window=f"{PERIOD}s", per_instance=True, resolution=rule_step(settings),
                      hold=f"{settings.scrape.seconds}s", named_within=label_lookback(settings.scrape.seconds))
    shown = read_instants(prometheus, start, expr, (lambda m: "all") if key is None else (lambda m: m[key]))

    def truth(t):
        gpus = {unit[0] for unit in UNITS for k in range(STEPS) if t - PERIOD < k * STEP <= t
                and (value := reading(ACTIVE if field == UTIL and unit[1] else field, unit, k)) is not None
                and value != NOT_SUPPORTED}
        return {"all" if key is None else NODE: len(gpus)} if gpus else {}
    wrong = off_truth(shown, truth)
    assert not wrong, f"instants: (shown, true) {dict(list(wrong.items())[:3])} ({len(wrong)} of {len(shown)})"
