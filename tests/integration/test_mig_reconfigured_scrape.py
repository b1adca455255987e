"""A total of a field a GPU's MIG instances add up (framebuffer used) and a mean of one they average (graphics engine
activity), on a real Prometheus scraping an exporter: an instance the exporter no longer serves is no instance of the
GPU, though the look-back still holds its samples.

Two nodes, scraped every second (the panel's query made for 30 s scrapes, scaled), each read with its node selected
by a build with and without exporter.virtual_gpus: n1's exporter writes framebuffer used as each instance's own
series and its pod's copy (KUBERNETES_VIRTUAL_GPUS, 4.5.3+; the pod's processes use all of it), n2's as the pod's
copy alone (the setting off, or before 4.5.3); engine activity as the pod's copy on both. GPU 0 split into two 3g.40gb
instances (20,000 and 12,000 MiB; engine 0.6 and 0.2), reconfigured after scrape 8 into three 2g.20gb instances
(5,000 MiB each; engine 0.1, 0.1 and 0.4); after scrape 16 the third instance is gone. GPU 1 whole (10,000 MiB,
engine 0.5). Three scrapes fail (every series marked stale, as at any failed scrape: the look-back bridges it): one
within the look-back after the reconfiguration (scrape 11), one after the look-back (14), one within the look-back
after the third instance went (18). Prometheus marks a series the exporter stops serving stale at the next scrape.
The truth at an instant: the GPUs and instances of the latest scrape that answered: an instance the exporter stopped
serving while it served the GPU's others is no instance of the GPU, at a failed scrape too.
Before, the look-back's instances were those with a sample within it, stale-marked or not: for about the look-back
after the reconfiguration GPU 0 read 47,000 MiB for 15,000 (the old instances' latest readings beside the new ones),
its engine activity 0.28 for 0.2; and after that, at a failed scrape within the look-back (the late tier, which
read every instance with a reading within it), 47,000 for 15,000 and 15,000 for 10,000 MiB.
"""

from __future__ import annotations

import pytest

from generator.model import Query
from generator.preview.interpolate import interpolate, variables
from generator.project import load_project
from generator.resources import default_counters
from tests.support.panel_expression import panel_expression
from tests.support.prometheus_server import SCENE_RANGE, scraped_every
from tests.support.replay_exporter import ReplayExporter
from tests.support.late_scrape import CLOSE_SCRAPES, FAILED as LATE_FAILED, LATE as LATE_GONE, LATE_SCRAPES, late_values
from tests.support.scrape_scene import CountedAnswers, scraped_until

USED, ENGINE = "DCGM_FI_DEV_FB_USED", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
RECONFIGURED, FAILS, GONE, SCRAPES = 8, (11, 14, 18), 16, 20
DEVICE = 'modelName="NVIDIA H100 80GB HBM3",DCGM_FI_DRIVER_VERSION="535.161.08"'
# node: whether its exporter writes framebuffer used as each instance's own series beside its pod's copy (4.5.3+ with
# KUBERNETES_VIRTUAL_GPUS), or as the pod's copy alone (the setting off, or before 4.5.3)
NODES = {"n1": True, "n2": False}


def instances(n: int) -> dict[str, list[tuple[str, str, dict[str, float]]]]:
    """What the exporter's nth answer (from 1) serves: per GPU, its (MIG instance, profile, reading per field)."""
    if n <= RECONFIGURED:
        mig = [("1", "3g.40gb", {USED: 20000, ENGINE: 0.6}), ("2", "3g.40gb", {USED: 12000, ENGINE: 0.2})]
    else:
        mig = [("3", "2g.20gb", {USED: 5000, ENGINE: 0.1}), ("4", "2g.20gb", {USED: 5000, ENGINE: 0.1}),
               ("5", "2g.20gb", {USED: 5000, ENGINE: 0.4})][:2 if n > GONE else 3]
    return {"0": mig, "1": [("", "", {USED: 10000, ENGINE: 0.5})]}


def payload(node: str, n: int) -> str:
    if n in FAILS:
        return "garbage{ 1\n"
    lines = []
    for field in (USED, ENGINE):
        lines.append(f"# TYPE {field} gauge")
        for gpu, held in instances(n).items():
            for instance, profile, read in held:
                mig = f',GPU_I_ID="{instance}",GPU_I_PROFILE="{profile}"' if instance else ""
                series = (f'{field}{{gpu="{gpu}",UUID="GPU-{node}-{gpu}",device="nvidia{gpu}",{DEVICE},'
                          f'Hostname="{node}"{mig}')
                if field == USED and NODES[node]:  # a per-process field (KUBERNETES_VIRTUAL_GPUS, 4.5.3+): own series
                    lines.append(f"{series}}} {read[field]}")
                lines.append(f'{series},container="main",namespace="ml",pod="p{gpu}{instance}",'
                             f'pod_uid="uid-p{gpu}{instance}"}} {read[field]}')
    return "\n".join(lines) + "\n"


def _project(folder, settings: str):
    """The project of `settings` (a settings file's text, "" the defaults) counting framebuffer used and engine
    activity alone."""
    (folder / "counters.csv").write_text("\n".join(
        line for line in default_counters().read_text().splitlines()
        if line and not line.startswith("#") and line.split(",")[0].strip() in (USED, ENGINE)) + "\n")
    (folder / "gpudash.yaml").write_text(settings or "{}\n")
    return load_project(folder / "gpudash.yaml", folder / "counters.csv")


@pytest.fixture(scope="module")
def scraped(tmp_path_factory):
    """The Prometheus scraping both nodes' exporters, and each node's scrape times."""
    exporters = {node: CountedAnswers(lambda n, node=node: payload(node, n)) for node in NODES}
    with ReplayExporter(exporters["n1"]) as one, ReplayExporter(exporters["n2"]) as two:
        addresses = {"n1": one.address, "n2": two.address}
        with scraped_until(tmp_path_factory, "mig-reconfigured", list(addresses.values()),
                       lambda: all(e.served >= SCRAPES for e in exporters.values())) as prometheus:
            prometheus.remember_answers()  # it scrapes no more; a panel reading alike in both builds is asked once
            yield prometheus, {node: sorted(float(at) for series in prometheus.query(f'up{{instance="{address}"}}[10m]')
                                            for at, _ in series["values"]) for node, address in addresses.items()}


@pytest.mark.parametrize("field, how", [(USED, "sum"), (ENGINE, "avg")])
@pytest.mark.parametrize("by", [(), ("gpu",)])
@pytest.mark.parametrize("settings", ["", "exporter:\n  virtual_gpus: true\n"], ids=["defaults", "virtual_gpus"])
@pytest.mark.parametrize("node", NODES)
def test_mig_instances_the_exporter_no_longer_serves_are_left_out(scraped, tmp_path_factory, field, how, by, settings,
                                                                  node):
    prometheus, scrapes = scraped
    scrapes = scrapes[node]
    assert len(scrapes) >= SCRAPES
    project = _project(tmp_path_factory.mktemp("mig-reconfigured"), settings)
    settings = project.settings
    expr = panel_expression(project, Query(field, how, by))
    expr = interpolate(scraped_every(expr, settings.scrape.seconds, 1), {**SCENE_RANGE, **variables({"node": node},
                                                                                        ("namespace", "pod", "node",
                                                                                         "gpu"))})
    wrong = {}
    for n, at in enumerate(scrapes[:SCRAPES], start=1):
        answered = n - 1 if n in FAILS else n  # the latest scrape that answered
        truth = {gpu: sum(read[field] for _, _, read in held) / (len(held) if how == "avg" else 1)
                 for gpu, held in instances(answered).items()}
        truth = truth if by else {"all": sum(truth.values()) / (len(truth) if how == "avg" else 1)}
        shown = {s["metric"].get("gpu", "all"): float(s["value"][1]) for s in prometheus.query(expr, at + 0.5)}
        if set(shown) != set(truth) or any(abs(shown[k] - truth[k]) > 1e-9 for k in truth):
            wrong[n] = (shown, truth)
    assert not wrong, f"scrape: (shown, true) {wrong}"


@pytest.mark.parametrize("field, how, truth", [(USED, "sum", 10000), (ENGINE, "avg", 0.1)])
@pytest.mark.parametrize("settings", ["", "exporter:\n  virtual_gpus: true\n"], ids=["defaults", "virtual_gpus"])
@pytest.mark.parametrize("node", NODES)
def test_a_mig_instance_gone_at_a_late_scrape_is_left_out_at_the_failed_scrape_after(tmp_path, field, how, truth,
                                                                                     settings, node):
    """Instance 5 of GPU 0 (2g.20gb, 5,000 MiB, engine 0.4) is gone from scrape 7 on, instances 3 and 4 (5,000 MiB,
    engine 0.1 each) served until scrape 8 failed; framebuffer used written as NODES says (n1: each instance's own
    series beside its pod's copy). Read 15 s after the failed scrape, GPU 0 holds instances 3 and 4: 10,000 MiB,
    engine 0.1, in both builds, with scrape 7 late and with scrapes 6 (late) and 7 within one step. Before, the late
    tier's test of a series the exporter stopped serving read each series' latest sample at the steps of the scrape
    interval, which saw no sample of the late scrape 7: 15,000 MiB, engine 0.2; by the step whose interval holds the
    sample alone, scrapes 6 and 7 read alike: the same."""
    from tests.support.promtool_rules import promtool_test

    held = {"3": {USED: 5000, ENGINE: 0.1}, "4": {USED: 5000, ENGINE: 0.1}, "5": {USED: 5000, ENGINE: 0.4}}
    target = f'instance="{node}:9400",job="dcgm"'

    def series(scrapes: dict[int, int]) -> list[dict[str, str]]:
        written = [{"series": f"up{{{target}}}", "values": late_values(lambda n: 0 if n == LATE_FAILED else 1,
                                                                          scrapes)}]
        for instance, read in held.items():
            device = (f'gpu="0",UUID="GPU-{node}-0",device="nvidia0",{DEVICE},Hostname="{node}",'
                      f'GPU_I_ID="{instance}",GPU_I_PROFILE="2g.20gb",{target}')
            copy = f'{device},container="main",namespace="ml",pod="p0{instance}",pod_uid="uid-p0{instance}"'
            for name in (USED, ENGINE):
                for labels in (device, copy) if name == USED and NODES[node] else (copy,):
                    written.append({"series": f"{name}{{{labels}}}", "values": late_values(
                        lambda n, instance=instance, value=read[name]:
                        None if n == LATE_FAILED or instance == "5" and n >= LATE_GONE else value, scrapes)})
        return written
    project = _project(tmp_path, settings)
    assert project.settings.scrape.seconds == 30
    expr = interpolate(panel_expression(project, Query(field, how, ("gpu",))),
                       {**SCENE_RANGE, **variables({"node": node}, ("namespace", "pod", "node", "gpu"))})
    (tmp_path / "rules.yaml").write_text("groups: []\n")
    promtool_test(tmp_path, "late.yaml", [{"interval": "1s", "input_series": series(scrapes), "promql_expr_test": [
        {"expr": expr, "eval_time": f"{scrapes[LATE_FAILED] + 15}s",
         "exp_samples": [{"labels": '{gpu="0"}', "value": truth}]}]} for scrapes in (LATE_SCRAPES, CLOSE_SCRAPES)])
