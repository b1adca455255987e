"""An alarm that adds up GPU memory (framebuffer used or free) over a group of GPUs, a GPU, or a pod's GPU reads on
CloudWatch what its title says: each GPU instance once.

A MIG GPU's memory is split into its instances' disjoint slices: the GPU's framebuffer used is their sum (mixed fleet:
the MIG node's GPU 0 has 19,600 + 5,000 MiB used). Pods sharing a GPU by time-slicing or MPS, on an exporter run with
KUBERNETES_VIRTUAL_GPUS (settings exporter.virtual_gpus), each get a copy of the GPU's series, which must count once.
`Query(DCGM_FI_DEV_FB_USED, "sum", ...)` was refused in every alarm whatever its grouping, and the refusal's own fix
("group it by node and gpu") was refused too. Each GPU instance is one series per scrape in the per-GPU set (pods'
copies merged per GPU instance on the OTel pipeline), so a period's SUM of a group's observations over the scrapes
per period is the group's total; on agent.pipeline: classic with exporter.virtual_gpus nothing merges the copies, and
the alarm is refused with a fix that builds.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from generator.artifacts import build
from generator.errors import InputError
from generator.model import AGGREGATIONS, GROUP_KEYS, Alarm, Condition, Query
from generator.output import encode
from generator.render.alarms import cloudwatch_alarms
from tests.support import mixed_fleet
from tests.support.agent_points import SHARED, alarm_values, alarms_through_agent, through_agent
from tests.support.projects import bundled_project, defined_project

STEP, END, PERIOD = 30, 1800, 300
FIELDS = {"DCGM_FI_DEV_FB_USED": "fb_used", "DCGM_FI_DEV_FB_FREE": "fb_free"}
GROUPS = {"all": (), "cluster": ("cluster",), "node": ("node",), "gpu": ("node", "gpu"), "index": ("gpu",),
          "pod-gpu": ("pod", "gpu")}
# (aggregation, group): a sum over any group; a mean of one GPU's (or one pod's GPU's) memory is its sum
SHAPES = [("sum", group) for group in GROUPS] + [("avg", "gpu"), ("avg", "pod-gpu")]
CASES = [(aggregation, field, group, scope) for aggregation, group in SHAPES for field in FIELDS
         for scope in ("cluster", "fleet")]
VIRTUAL = "exporter:\n  virtual_gpus: true\n"



def _rule(aggregation: str, field: str, group: str, scope: str) -> str:
    return f"{aggregation}-{FIELDS[field].replace('_', '-')}-{group}-{scope}"


def _alarms(cases) -> str:
    return "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
        f"    yield Alarm({_rule(a, f, g, s)!r}, 'X', Condition(Query({f!r}, {a!r}, {GROUPS[g]!r}), '>', 1),\n"
        f"                scope={s!r}, description='x', runbook='y')\n" for a, f, g, s in cases)


def _truth(fleet, field: str, group: str) -> dict[tuple, float]:
    """{group key: the group's memory}, each GPU instance once; a pod's on a GPU: the instances the exporter names it
    on, whole at every scrape that names it (a GPU pods share, named under each in turn, counts whole for each: the
    pod's total per GPU is made at the agent at each scrape; read as a period's SUM over its scrapes it was half)."""
    totals: dict[tuple, float] = {}
    for node in fleet:
        for gpu in node.gpus:
            for instance in gpu.instances:
                value = getattr(instance, FIELDS[field])
                if group == "pod-gpu":
                    named = node.labelled(instance, None)
                    for pod in named:
                        key = (("namespace", pod[0]), ("pod", pod[1]), ("gpu", str(gpu.index)))
                        totals[key] = totals.get(key, 0.0) + value
                    continue
                key = {"all": (), "cluster": (), "node": (("node", node.name),), "index": (("gpu", str(gpu.index)),),
                       "gpu": (("node", node.name), ("gpu", str(gpu.index)))}[group]
                totals[key] = totals.get(key, 0.0) + value
    return totals


def _built(folder, settings: str, fleet) -> tuple[dict, list]:
    requests, points = alarms_through_agent(defined_project(folder, settings, alarms=_alarms(CASES)), STEP, END, fleet)

    def rule(name: str) -> str:
        name = name.removesuffix("-warning")
        return name.split("-", 3)[-1] if name.startswith("gpudash-gpu-cluster-") else name.split("-", 2)[-1]
    return {rule(name): request for name, request in requests.items()}, points


@pytest.fixture(scope="module")
def mig(tmp_path_factory):
    return _built(tmp_path_factory.mktemp("mig"), "", mixed_fleet.FLEET)


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    return _built(tmp_path_factory.mktemp("shared"), VIRTUAL, SHARED)


def _read(request: dict, points: list) -> dict[tuple, float]:
    """{group key, the cluster left out (a fleet alarm groups by it first): the alarm's value}."""
    return {tuple(kv for kv in key if kv[0] != "ClusterName"): value
            for key, value in alarm_values(request, points, END, PERIOD).items()}


def _find(requests: dict, rule: str) -> dict:
    (found,) = [request for name, request in requests.items() if name.endswith(rule)]
    return found


@pytest.mark.parametrize("aggregation,field,group,scope", CASES)
def test_a_mig_gpus_instances_add_up_once_each(mig, aggregation, field, group, scope):
    requests, points = mig
    assert _read(_find(requests, _rule(aggregation, field, group, scope)), points) == pytest.approx(
        _truth(mixed_fleet.FLEET, field, group))


@pytest.mark.parametrize("aggregation,field,group,scope", CASES)
def test_a_gpu_pods_share_adds_up_once(shared, aggregation, field, group, scope):
    requests, points = shared
    assert _read(_find(requests, _rule(aggregation, field, group, scope)), points) == pytest.approx(
        _truth(SHARED, field, group))


@pytest.mark.parametrize("aggregation,group", [shape for shape in SHAPES if shape[1] != "pod-gpu"])
def test_classic_with_shared_gpus_refuses_with_a_fix_that_builds(tmp_path, aggregation, group):
    """agent.pipeline: classic publishes every pod's copy of a shared GPU: a total over GPUs would add it once per
    pod. The refusal names the pipeline that merges them, and grouping by pod, and both build."""
    settings = "agent:\n  pipeline: classic\n" + VIRTUAL
    case = (aggregation, "DCGM_FI_DEV_FB_USED", group, "cluster")
    for name in ("refused", "otel", "pods"):
        (tmp_path / name).mkdir()
    with pytest.raises(InputError) as refused:
        build(defined_project(tmp_path / "refused", settings, alarms=_alarms([case])))
    assert "agent.pipeline: otel" in refused.value.hint and "group it by pod" in refused.value.hint
    assert "group it by node and gpu" not in refused.value.hint
    build(defined_project(tmp_path / "otel", VIRTUAL, alarms=_alarms([case])))
    build(defined_project(tmp_path / "pods", settings, alarms=_alarms([(aggregation, "DCGM_FI_DEV_FB_USED",
                                                                         "pod-gpu", "cluster")])))


REFUSABLE = ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
             "DCGM_FI_DEV_PCIE_REPLAY_COUNTER")
PIPELINES = {"otel": "", "classic": "agent:\n  pipeline: classic\n", "otel-virtual": VIRTUAL,
             "classic-virtual": "agent:\n  pipeline: classic\n" + VIRTUAL}
# "group it by node and gpu", "take its sum or avg", "sum them": what a refusal tells the user to write instead
_GROUPING = re.compile(r"group (?:it )?by ([a-z_]+(?:(?:, | and )(?!or\b)[a-z_]+)*)")
_AGGREGATION = re.compile(r"take its ([a-z]+(?: or [a-z]+)*)")


def _refusal(project, query: Query) -> InputError | None:
    try:
        cloudwatch_alarms((Alarm("x", "X", Condition(query, ">", 1)),), project.settings, project.catalog)
    except InputError as exc:
        return exc
    return None


def _fixes(refusal: InputError, query: Query) -> list[Query]:
    text = f"{refusal} {refusal.hint}"
    fixes = [replace(query, by=tuple(re.split(r", | and ", m.group(1)))) for m in _GROUPING.finditer(text)]
    fixes += [replace(query, aggregation=name) for m in _AGGREGATION.finditer(text) for name in m.group(1).split(" or ")]
    return fixes + ([replace(query, aggregation="sum")] if "sum them" in text else [])


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
def test_every_refusal_names_a_fix_that_builds(pipeline):
    """Each alarm of a field whose MIG instances or pods' copies CloudWatch cannot always combine, under every
    aggregation and grouping, is built or refused with a fix; each grouping or aggregation a refusal names builds
    (the framebuffer's refusal named `group it by node and gpu`, refused too); none tells the user to publish
    dimensions, which the bundled settings do (a counter's max per pod was told to, and no dimension set builds it)."""
    project = bundled_project(PIPELINES[pipeline])
    refused, unfixed, failing = 0, [], []
    for metric in REFUSABLE:
        for aggregation in AGGREGATIONS:
            for by in [(), *[(key,) for key in GROUP_KEYS if key not in ("model", "container")],
                       ("node", "gpu"), ("pod", "gpu"), ("node", "mig_instance")]:
                query = Query(metric, aggregation, by)
                refusal = _refusal(project, query)
                if refusal is None:
                    continue
                refused += 1
                fixes = _fixes(refusal, query)
                unfixed += [] if fixes and "publish" not in refusal.hint else [(query, f"{refusal}", refusal.hint)]
                failing += [(query, fix, f"{_refusal(project, fix)}") for fix in fixes if _refusal(project, fix)]
    assert refused and not unfixed and not failing, (unfixed, failing)


DASHBOARD = """\
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="memory", title="Memory", rows=[Row("All", [
        Panel("Node memory used", Query("DCGM_FI_DEV_FB_USED", "sum", ("node",)), unit="mebibyte"),
        Panel("Memory free by GPU index", Query("DCGM_FI_DEV_FB_FREE", "sum", ("gpu",)), unit="mebibyte"),
    ])])
"""


@pytest.mark.parametrize("settings,fleet", [("", mixed_fleet.FLEET), (VIRTUAL, SHARED)], ids=["mig", "shared"])
def test_a_chart_of_memory_per_node_or_gpu_index_adds_each_instance_once(tmp_path, settings, fleet):
    """The widgets of the same totals (a chart per node was left out: refused) read each GPU instance once."""
    from tests.support.cloudwatch_widgets import latest_values, widgets_read

    files = encode(build(defined_project(tmp_path, settings, dashboards=DASHBOARD)))
    values = latest_values(files, through_agent(files, STEP, END, fleet, only=widgets_read(files)), END)
    for title, field, group in (("Node memory used", "DCGM_FI_DEV_FB_USED", "node"),
                                ("Memory free by GPU index", "DCGM_FI_DEV_FB_FREE", "index")):
        truth = _truth(fleet, field, group)
        assert len(values[title]) == len(truth)
        assert sorted(values[title].values()) == pytest.approx(sorted(truth.values()))


def test_a_ratio_alarm_refused_names_only_the_fix_that_builds(tmp_path):
    """A ratio of two fields has no CloudWatch form: publishing dimensions does not make one; a `cloudwatch=`
    condition does (the bundled framebuffer alarm's)."""
    ratio = "Query('DCGM_FI_DEV_FB_USED', 'max', ('pod',), over=('DCGM_FI_DEV_FB_USED', 'DCGM_FI_DEV_FB_FREE'))"
    text = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
            f"    yield Alarm('ratio', 'X', Condition({ratio}, '>', 0.9){{}})\n")
    (tmp_path / "refused").mkdir()
    with pytest.raises(InputError) as refused:
        build(defined_project(tmp_path / "refused", alarms=text.format("")))
    assert refused.value.hint == "give the Alarm a `cloudwatch=` condition"
    (tmp_path / "fixed").mkdir()
    build(defined_project(tmp_path / "fixed", alarms=text.format(
        ", cloudwatch=Condition(Query('DCGM_FI_DEV_FB_FREE', 'min', ('pod',)), '<', 1000)")))


@pytest.mark.parametrize("metric", ["DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE"])
def test_a_pods_mig_instance_refused_names_a_grouping_that_builds(metric):
    """No set is published per pod and MIG instance: the refusal told the user to publish one (the settings refuse
    the profile in the per-pod set, and publishing GPU_I_ID gave the same refusal); it names (pod, gpu) now."""
    project = bundled_project("")
    for aggregation in AGGREGATIONS:
        query = Query(metric, aggregation, ("pod", "mig_instance"))
        refusal = _refusal(project, query)
        assert refusal is not None and "publish" not in refusal.hint, refusal and refusal.hint
        fixes = _fixes(refusal, query)
        assert fixes and not [fix for fix in fixes if _refusal(project, fix)], (refusal.hint, fixes)
