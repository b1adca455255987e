"""A share of memory (framebuffer used over used + free) rolled up over MIG GPUs, on a real Prometheus.

One node, half an hour of 30 s scrapes, A100 80GB GPUs as the exporter writes them (framebuffer per MIG instance,
`GPU_I_ID`, `GPU_I_PROFILE`):

* GPU 0, whole, 0.85 used (pod `solo/w`);
* GPUs 1 and 2: namespace `spread`'s pod holds a full 3g.40gb on GPU 1 and an empty 1g.10gb on GPU 2, beside which
  an empty 2g.20gb no pod holds;
* GPU 3: namespace `together`'s pod holds the same two instances on one GPU;
* GPU 4: two instances no pod holds, each reading 0 MiB used and 0 MiB free (no memory to share out).

Of the memory the `spread` and `together` pods hold, 40,192 of 50,048 MiB is used wherever the instances sit.
"""

from __future__ import annotations

import math

from generator.model import Dashboard, Panel, Query, Row
from generator.panels import fleet_stat
from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.render import grafana as grafana_render
from tests.support.projects import project_fixture
from tests.support.prometheus_server import SCENE_RANGE, backfilled_fixture

STEP, SCRAPES, OFFSET = 30, 60, 15
NODE = "gpu-node-1"
USED, FREE = "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"
VARIABLES = ("namespace", "pod", "node", "gpu", "cluster")
FULL_3G = ("1", "3g.40gb", 40192, 0)
EMPTY_1G = ("2", "1g.10gb", 0, 9856)
# gpu -> [(GPU_I_ID, profile, used, free, namespace, pod)]; a whole GPU has no instance id
FLEET = {
    0: [("", "", 8500, 1500, "solo", "w")],
    1: [(*FULL_3G, "spread", "s")],
    2: [(*EMPTY_1G, "spread", "s"), ("3", "2g.20gb", 0, 19968, "", "")],
    3: [(*FULL_3G, "together", "t"), (*EMPTY_1G, "together", "t")],
    4: [("1", "3g.40gb", 0, 0, "", ""), ("2", "4g.40gb", 0, 0, "", "")],
}
HELD = 40192 / (40192 + 9856)  # 0.803: the spread and together pods' share of the memory they hold
# Each GPU's share: GPU 4 has none (no memory to share out), and the fleet's mean is over the GPUs that have one
GPU_SHARES = {0: 0.85, 1: 1.0, 2: 0.0, 3: HELD}
FLEET_SHARE = sum(GPU_SHARES.values()) / len(GPU_SHARES)


def _scrapes(start: int, lines_at) -> str:
    """OpenMetrics of both fields at each scrape: `lines_at(index of the field, field, timestamp)` gives its lines."""
    lines = []
    for index, name in enumerate((USED, FREE)):
        lines.append(f"# TYPE {name} gauge")
        for k in range(SCRAPES):
            lines += lines_at(index, name, start + OFFSET + k * STEP)
    return "\n".join(lines) + "\n# EOF\n"


def _openmetrics(start: int) -> str:
    def lines_at(index: int, name: str, at: int) -> list[str]:
        lines = []
        for gpu, instances in FLEET.items():
            for instance, profile, *values, namespace, pod in instances:
                labels = [f'gpu="{gpu}"', f'UUID="GPU-{gpu}"', 'modelName="NVIDIA A100-SXM4-80GB"',
                          f'Hostname="{NODE}"', f'node="{NODE}"', 'job="dcgm-exporter"']
                if instance:
                    labels += [f'GPU_I_ID="{instance}"', f'GPU_I_PROFILE="{profile}"']
                if pod:
                    labels += [f'namespace="{namespace}"', f'pod="{pod}"']
                lines.append(f"{name}{{{','.join(labels)}}} {values[index]} {at}")
        return lines
    return _scrapes(start, lines_at)


prometheus = backfilled_fixture("mig-share-rollups", _openmetrics, SCRAPES * STEP, STEP)


project = project_fixture()


def _panel(project, query: Query) -> dict:
    model = grafana_render.render(Dashboard(id="rollups", title="Roll-ups", description="Shares.", rows=[
        Row("Shares", [Panel("Share", (query,))])]), project.catalog, project.settings)
    (panel,) = [p for row in model["panels"] for p in [row, *row.get("panels", [])] if p.get("type") != "row"]
    return panel


def _shown(prometheus, project, query: Query) -> dict[str, float]:
    """{legend: value} of one panel of `query` at minute 20, the dashboard variables at All."""
    (target,) = _panel(project, query)["targets"]
    expr = interpolate(target["expr"], {**SCENE_RANGE,
                                        "__rate_interval": "2m", "__interval": "1m", **variables({}, VARIABLES)})
    server, start = prometheus
    return {render_legend(target["legendFormat"], s["metric"]): float(s["value"][1])
            for s in server.api("query", query=expr, time=start + 20 * 60)["result"]}


def test_a_mig_gpu_without_memory_leaves_the_fleets_and_nodes_share_as_the_other_gpus_give_it(prometheus, project):
    """A MIG GPU whose instances read 0 used and 0 free has no share (0 / 0); the fleet's mean share (the default
    "Framebuffer in use") and the node's are the other GPUs' mean, not NaN; no GPU's line reads NaN."""
    fleet = _shown(prometheus, project, fleet_stat(USED, "In use", over=(USED, FREE)).queries[0])
    assert list(fleet.values()) and all(math.isclose(v, FLEET_SHARE) for v in fleet.values()), fleet
    node = _shown(prometheus, project, Query(USED, "avg", ("node",), over=(USED, FREE)))
    assert node.keys() == {NODE} and math.isclose(node[NODE], FLEET_SHARE), node
    gpus = _shown(prometheus, project, Query(USED, "avg", ("node", "gpu"), over=(USED, FREE)))
    assert gpus.keys() == {f"{NODE} GPU {gpu}" for gpu in GPU_SHARES} and all(
        math.isclose(gpus[f"{NODE} GPU {gpu}"], share, abs_tol=1e-12) for gpu, share in GPU_SHARES.items()), gpus


def test_a_namespaces_mean_share_is_the_share_of_the_memory_its_pods_hold(prometheus, project):
    """Per pod the mean share is pooled: the spread pod and the together pod both read 0.803. A namespace's is the
    same memory: `spread` read 0.5 (the mean of its two GPUs' shares, 1 and 0) where `together` read 0.803; and
    GPUs no pod holds make no namespace line (they made "Namespace " with an empty name)."""
    pods = _shown(prometheus, project, Query(USED, "avg", ("pod",), over=(USED, FREE)))
    assert {line: round(value, 9) for line, value in pods.items() if line != "Pod solo/w"} == \
        {"Pod spread/s": round(HELD, 9), "Pod together/t": round(HELD, 9)}, pods
    namespaces = _shown(prometheus, project, Query(USED, "avg", ("namespace",), over=(USED, FREE)))
    assert namespaces.keys() == {"Namespace solo", "Namespace spread", "Namespace together"}, namespaces
    assert math.isclose(namespaces["Namespace spread"], HELD) and math.isclose(namespaces["Namespace together"], HELD)
    assert "Per namespace: the sum of DCGM_FI_DEV_FB_USED of the GPUs and MIG instances its pods hold over the sum " \
           "of their DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE" in \
           _panel(project, Query(USED, "avg", ("namespace",), over=(USED, FREE)))["description"]


# Node gpu-node-2 mid-upgrade: the old exporter (Hostname) and the new one (hostname) both serve it, each with its
# own reading of the memory, taken at another moment: GPU 0 is MIG (pod x/m's 3g.40gb and 1g.10gb), GPU 1 whole
# (pod x/w). Each exporter's reading is a true share (GPU 0: 0.62 or 0.72; GPU 1: 0.5 or 0.75); the used memory of
# one beside the free memory of the other is no reading (GPU 1: 60,000 used + 40,000 free of its 80,000 MiB).
COPIES = {'Hostname="gpu-node-2",instance="10.0.0.1:9400"': {("0", "1", "3g.40gb"): (30000, 10000),
                                                            ("0", "2", "1g.10gb"): (1000, 9000),
                                                            ("1", "", ""): (40000, 40000)},
          'hostname="gpu-node-2",instance="10.0.0.2:9400"': {("0", "1", "3g.40gb"): (35000, 5000),
                                                            ("0", "2", "1g.10gb"): (1000, 9000),
                                                            ("1", "", ""): (60000, 20000)}}
COPY_SHARES = {"gpu-node-2 GPU 0": {31000 / 50000, 36000 / 50000}, "gpu-node-2 GPU 1": {0.5, 0.75}}
# gpu-node-3's MIG GPU 0: its 1g.10gb writes its used memory (1,000 MiB) and no series of its free memory: the GPU
# has no share (it read 31,000 / 41,000 = 0.756: the 1g's used over the 3g's memory and its own used)
ONE_FIELD = {USED: {("1", "3g.40gb"): 30000, ("2", "1g.10gb"): 1000}, FREE: {("1", "3g.40gb"): 10000}}


def _copies_openmetrics(start: int) -> str:
    def lines_at(index: int, name: str, at: int) -> list[str]:
        lines = []
        for copy, readings in COPIES.items():
            for (gpu, instance, profile), values in readings.items():
                labels = [copy, f'gpu="{gpu}"', 'job="dcgm-exporter"', 'namespace="x"',
                          f'pod="{"m" if instance else "w"}"']
                if instance:
                    labels += [f'GPU_I_ID="{instance}"', f'GPU_I_PROFILE="{profile}"']
                lines.append(f"{name}{{{','.join(labels)}}} {values[index]} {at}")
        return lines + [f'{name}{{node="gpu-node-3",gpu="0",GPU_I_ID="{instance}",GPU_I_PROFILE="{profile}",'
                        f'job="dcgm-exporter",namespace="x",pod="o"}} {value} {at}'
                        for (instance, profile), value in ONE_FIELD[name].items()]
    return _scrapes(start, lines_at)


copies = backfilled_fixture("mig-share-copies", _copies_openmetrics, SCRAPES * STEP, STEP)


def test_a_gpu_two_exporters_read_has_the_share_one_of_them_read(copies, project):
    """Used and free memory are taken from one exporter's reading: the share of a GPU (MIG or whole) that two
    exporters serve is one of their shares. It read the larger used of one over that plus the larger free of the
    other: GPU 0 0.655 (36,000 / 55,000 of 50,000 MiB), GPU 1 0.6 (60,000 / 100,000 of 80,000 MiB). A MIG GPU an
    instance of which writes one field and no series of the other has no share (gpu-node-3 read 0.756), nor does
    the pod holding it."""
    shown = _shown(copies, project, Query(USED, "avg", ("node", "gpu"), over=(USED, FREE)))
    assert shown.keys() == COPY_SHARES.keys(), shown
    assert all(any(math.isclose(value, share) for share in COPY_SHARES[line]) for line, value in shown.items()), shown
    assert "Pod x/o" not in _shown(copies, project, Query(USED, "avg", ("pod",), over=(USED, FREE)))


# Node gpu-node-5 mid-upgrade, exporter 2 not the higher on every instance: MIG GPU 0's 3g.40gb reads 35,000 used by
# exporter 1 and 30,000 by exporter 2, its 1g.10gb 1,000 and 9,000 (exporter 1's share 36,000 / 50,000 = 0.72,
# exporter 2's 39,000 / 50,000 = 0.78); whole GPU 1 0.5 and 0.75. Pod x/m holds both instances, x/w the whole GPU.
# The GPUs carry their UUID (the upgraded exporter names the node otherwise than the old one).
MIXED = {'Hostname="gpu-node-5",instance="10.0.0.5:9400"': {("0", "1", "3g.40gb"): (35000, 5000),
                                                           ("0", "2", "1g.10gb"): (1000, 9000),
                                                           ("1", "", ""): (40000, 40000)},
         'hostname="gpu-node-5",instance="10.0.0.6:9400"': {("0", "1", "3g.40gb"): (30000, 10000),
                                                           ("0", "2", "1g.10gb"): (9000, 1000),
                                                           ("1", "", ""): (60000, 20000)}}
MIXED_SHARES = {"Pod x/m": {36000 / 50000, 39000 / 50000}, "Pod x/w": {0.5, 0.75}}


def _mixed_openmetrics(start: int) -> str:
    def lines_at(index: int, name: str, at: int) -> list[str]:
        return [f'{name}{{{copy},gpu="{gpu}",UUID="GPU-5-{gpu}",job="dcgm-exporter",namespace="x",'
                f'pod="{"m" if instance else "w"}"'
                + (f',GPU_I_ID="{instance}",GPU_I_PROFILE="{profile}"' if instance else "") + f"}} {values[index]} {at}"
                for copy, readings in MIXED.items() for (gpu, instance, profile), values in readings.items()]
    return _scrapes(start, lines_at)


mixed = backfilled_fixture("mig-share-mixed", _mixed_openmetrics, SCRAPES * STEP, STEP)


def test_a_pods_share_of_a_gpu_two_exporters_read_is_one_exporters(mixed, project):
    """Per pod (the panel's lookback: each GPU's copy chosen once), used and free memory come from one exporter's
    copy, the same one for each MIG instance: x/w read 0.6 (60,000 used of one beside 40,000 free of the other, of an
    80,000 MiB GPU), x/m 0.698 (each field's larger copy: 44,000 / 63,000) where the exporters read 0.72 and 0.78;
    with each field's copy chosen apart (d468274), neither pod showed (the copies' node spellings differ)."""
    shown = _shown(mixed, project, Query(USED, "avg", ("pod",), over=(USED, FREE)))
    assert shown.keys() == MIXED_SHARES.keys(), shown
    assert all(any(math.isclose(value, share) for share in MIXED_SHARES[pod]) for pod, value in shown.items()), shown


def test_a_gpus_share_two_exporters_read_is_one_exporters_on_each_instance(mixed, project):
    """Per GPU, the MIG GPU's instances are read from one exporter's copy: it read 0.88 (44,000 / 50,000: each
    instance's larger used) where the exporters read 0.72 and 0.78."""
    shown = _shown(mixed, project, Query(USED, "avg", ("node", "gpu"), over=(USED, FREE)))
    shares = {"gpu-node-5 GPU 0": MIXED_SHARES["Pod x/m"], "gpu-node-5 GPU 1": MIXED_SHARES["Pod x/w"]}
    assert shown.keys() == shares.keys(), shown
    assert all(any(math.isclose(value, share) for share in shares[gpu]) for gpu, value in shown.items()), shown
