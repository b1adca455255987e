"""With exporter.virtual_gpus, a line per namespace adding (or averaging) GPU utilization or framebuffer used adds the
pods' copies of each GPU they share: dcgm-exporter 4.5.3 and later write each pod's own share (per-process), which
add up to the namespace's use; 4.5.2 with KUBERNETES_VIRTUAL_GPUS writes every copy as the device's whole value, so a
GPU k pods of the namespace share adds k times. Nothing the agent reads of a namespace tells the two apart (the
device's own series that 4.5.3 adds is per GPU, without the namespace), and no setting names the exporter's version:
the widget's header, the alarm's description and lint (AL019) say it, and `gpudash verify` names such GPUs ("shared
GPUs read whole"). Prometheus tells them apart per GPU by that device series: a Grafana panel and a Prometheus rule
per namespace add the pods' copies of a GPU that has one and read one copy of a GPU that has none.

The fleet of tests/support/virtual_gpus.py through the build's agent model and promtool: team-a's two pods sharing a
4.5.3 GPU read 12,000 + 9,000 MiB, their use, on both forms; team-e's two pods on the 4.5.2 node read 2 x 39,200 for
39,200 on CloudWatch, as said, and 39,200 on Prometheus. A per-pod line, a namespace's largest reading and a fleet
without the setting say nothing."""

from __future__ import annotations

import json
import re
import subprocess
from statistics import mean

import pytest

from generator.artifacts import build, notes
from generator.catalog import PER_PROCESS_COPIES_ADDED, PER_PROCESS_COPIES_ADDED_ALARM
from generator.output import encode
from generator.preview.interpolate import interpolate, variables
from generator.render.alarms import SHORT
from tests.support import cloudwatch_eval, virtual_gpus
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.cloudwatch_widgets import header, said, widgets
from tests.support.dcgm_fleet import target_labels
from tests.support.projects import defined_project
from tests.support.prometheus_server import binary
from tests.support.promtool_rules import parsed_rule_documents

STEP, END, PERIOD = 30, 1800, 300
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
VIRTUAL = "exporter:\n  virtual_gpus: true\n  mig: none\n"
FB, UTIL = "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_UTIL"
# title: (field, aggregation, grouping, said)
CASES = {"Memory by namespace": (FB, "sum", ("namespace",), True),
         "Utilization by namespace": (UTIL, "avg", ("namespace",), True),
         "Memory by pod": (FB, "sum", ("pod",), False),
         "Largest memory by namespace": (FB, "max", ("namespace",), False)}
ALARMS = "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
    f"    yield Alarm({f'a{i}'!r}, {title!r}, Condition(Query({field!r}, {how!r}, {by!r}), '>', 1),\n"
    f"                description='x', runbook='y')\n" for i, (title, (field, how, by, _)) in enumerate(CASES.items()))
DASHBOARDS = ("from generator.model import Dashboard, Panel, Query, Row\n\n\ndef dashboards(ctx):\n"
              "    yield Dashboard(id='ns', title='NS', rows=[Row('All', [\n" + "".join(
                  f"        Panel({title!r}, Query({field!r}, {how!r}, {by!r}), "
                  f"unit={'mebibyte' if field == FB else 'percent'!r}),\n"
                  for title, (field, how, by, _) in CASES.items()) + "    ])])\n")
DASHBOARD = "cloudwatch/dashboards/gpudash-gpu-cluster-ns.json"


def _built(folder, settings: str):
    project = defined_project(folder, settings, alarms=ALARMS, dashboards=DASHBOARDS)
    return project, encode(build(project))


@pytest.fixture(scope="module")
def virtual(tmp_path_factory):
    return _built(tmp_path_factory.mktemp("virtual"), VIRTUAL)


def _alarms(files) -> dict[str, dict]:
    """{alarm title: its request}."""
    return {a["Request"]["AlarmDescription"].split(". ", 1)[0]: a["Request"]
            for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]}


def _rule_groups(files) -> list[dict]:
    """The rule groups of the PrometheusRules (one object per group)."""
    return [group for resource in parsed_rule_documents(files["k8s/prometheusrule.yaml"])
            for group in resource["spec"]["groups"]]


def _rules(files) -> dict[str, str]:
    """{alert title: its description}."""
    rules = _rule_groups(files)
    return {rule["annotations"]["summary"].split(" on ", 1)[0]: rule["annotations"]["description"]
            for group in rules for rule in group["rules"] if "alert" in rule}


def _panels(files) -> dict[str, str]:
    """{Grafana panel title: its description}."""
    (path,) = [p for p in files if p.startswith("grafana/") and p.endswith("-ns.json")]
    return {panel["title"]: panel.get("description", "") for panel in json.loads(files[path])["panels"]}


def test_each_line_per_namespace_of_the_pods_copies_says_what_an_older_exporter_writes(virtual):
    project, files = virtual
    text = header(files, DASHBOARD)
    alarms, rules, panels = _alarms(files), _rules(files), _panels(files)
    largest = re.compile("largest|4.5.3")  # the Prometheus forms read each GPU's copies right on both versions
    noted = {note.message.split("'")[1] for note in notes(project)
             if note.rule == "AL019" and PER_PROCESS_COPIES_ADDED in note.message}
    for index, (title, (_, _, _, expected)) in enumerate(CASES.items()):
        assert said(text, title, PER_PROCESS_COPIES_ADDED) == expected, title
        description = alarms[title]["AlarmDescription"]  # whole, or its short form where room runs out
        assert (PER_PROCESS_COPIES_ADDED_ALARM in description or SHORT[PER_PROCESS_COPIES_ADDED_ALARM] in description) \
            == expected, title
        assert (f"a{index}" in noted) == expected, title
        assert not largest.search(rules[title]) and not largest.search(panels[title]), title


def test_without_the_setting_nothing_is_said(tmp_path):
    project, files = _built(tmp_path, "exporter:\n  mig: none\n")
    assert PER_PROCESS_COPIES_ADDED not in header(files, DASHBOARD)
    assert not any(PER_PROCESS_COPIES_ADDED_ALARM in a["AlarmDescription"] for a in _alarms(files).values())
    assert not any(PER_PROCESS_COPIES_ADDED in note.message for note in notes(project))


def _fb_truth() -> dict[str, float]:
    """{namespace: the sum of its pods' framebuffer copies}: each pod's share on the 4.5.3 node, the device's whole
    value on the 4.5.2 node (team-e: two pods of one 39,200 MiB GPU, 78,400)."""
    totals: dict[str, float] = {}
    for node in virtual_gpus.FLEET:
        for gpu in node.gpus:
            for holder in gpu.holders:
                totals[holder.namespace] = totals.get(holder.namespace, 0.0) + \
                    virtual_gpus.pod_value(node, gpu, holder, FB)
    return totals


def test_what_the_note_says_holds_on_the_agent_model(virtual):
    """CloudWatch: the widget and the alarm per namespace read the 4.5.3 pods' shares added (team-a 21,000 MiB on
    one GPU) and the 4.5.2 pods' whole copies added (team-e 78,400 for 39,200)."""
    _, files = virtual
    config, job = agent_config(files[AGENT_FILE])
    points = Agent(config, job).run([Scrape(float(k * STEP), virtual_gpus.payload(node), target_labels(job, node.name))
                                     for k in range(-1, END // STEP) for node in virtual_gpus.FLEET])
    truth = _fb_truth()
    assert truth["team-a"] == 21000 and truth["team-e"] == 78400
    (properties,) = [p for _, p in widgets(files) if p.get("title", "").startswith("Memory by namespace")]
    lines = cloudwatch_eval.widget(properties, points, 0, END)
    assert {label: series[END - PERIOD] for label, series in lines.items()} == pytest.approx(truth)
    request = _alarms(files)["Memory by namespace"]
    (metric,) = request["Metrics"]
    read = cloudwatch_eval.metrics_insights(metric["Expression"], points, END - PERIOD, END, PERIOD)
    assert {dict(key)["namespace"]: series[END - PERIOD] / request["Threshold"] for key, series in read.items()} \
        == pytest.approx(truth)


def _use(field: str) -> dict[str, dict[tuple, float]]:
    """{namespace: {GPU: its use of the GPU}}: its pods' own shares added up on the 4.5.3 node, the device's value
    once where the exporter writes each copy as it (4.5.2, the setting off)."""
    use: dict[str, dict[tuple, float]] = {}
    for node in virtual_gpus.FLEET:
        for gpu in node.gpus:
            for holder in gpu.holders:
                per_gpu = use.setdefault(holder.namespace, {})
                value = virtual_gpus.pod_value(node, gpu, holder, field)
                key = (node.name, gpu.index)
                per_gpu[key] = per_gpu.get(key, 0.0) + value if node.mode == "per-process" else value
    return use


def _fleet_series(values=lambda labels, value: f"{value}x40") -> list[dict[str, str]]:
    """promtool's input series of both fields, each node's payload (`values`: a series' samples, 40 scrapes of its
    value unless told)."""
    series = []
    for node in virtual_gpus.FLEET:
        for line in virtual_gpus.payload(node).splitlines():
            if line.startswith((f"{FB}{{", f"{UTIL}{{")):
                labels, value = line.rsplit(" ", 1)
                labels = f'{labels[:-1]},node="{node.name}",instance="{node.name}:9400"}}'
                series.append({"series": labels, "values": values(labels, value)})
    return series


def _promtool(tmp_path, exprs: dict[str, str], series: list[dict[str, str]] | None = None,
              key: str = "namespace") -> dict[str, dict[str, float]]:
    """{name: {namespace (`key`): value}} of each expression at 15 minutes, promtool on `series` (the fleet's,
    constant)."""
    series = _fleet_series() if series is None else series
    found = {}
    for name, expr in exprs.items():
        for macro, value in (("$__rate_interval", "2m"), ("$__interval", "30s"), ("$__range", "5m")):
            expr = expr.replace(macro, value)
        expr = interpolate(expr, variables({}, ("cluster", "namespace", "pod", "node", "gpu")))  # each at All
        test = {"rule_files": [], "evaluation_interval": "30s", "tests": [{
            "interval": "30s", "input_series": series,
            "promql_expr_test": [{"expr": expr, "eval_time": "15m", "exp_samples": []}]}]}
        (tmp_path / f"{name}.json").write_text(json.dumps(test))
        out = subprocess.run([binary("promtool"), "test", "rules", str(tmp_path / f"{name}.json")],
                             capture_output=True, text=True)
        # evaluated, no parse error: nothing (SUCCESS, none expected) or what it got
        assert out.returncode == 0 or "got:" in out.stdout + out.stderr, out.stdout + out.stderr
        report = (out.stdout + out.stderr).split("got:")[-1]
        found[name] = {dict(re.findall(r'(\w+)="([^"]*)"', labels)).get(key): float(value)
                       for labels, value in re.findall(r"\{([^}]*)\} ([0-9.E+e-]+)", report)}
    return found


def test_the_panels_read_a_namespaces_use_on_both_exporter_versions(virtual, tmp_path):
    """Grafana: the panels' sum and mean per namespace (promtool on the fleet's series) read each namespace's use of a
    GPU: team-a's two 4.5.3 shares of 12,000 and 9,000 MiB of one GPU read 21,000 (the largest copy read 12,000), the
    MPS pair of team-f 9,000 + 6,000 MiB 15,000; team-e's two 4.5.2 copies of its 39,200 MiB GPU read once. The same
    of utilization (team-a 30 + 25 %). A namespace's largest reading stays its largest pod's (team-a 12,000)."""
    _, files = virtual
    (path,) = [p for p in files if p.startswith("grafana/") and p.endswith("-ns.json")]
    panels = {p.get("title"): p["targets"][0]["expr"] for p in json.loads(files[path])["panels"] if "targets" in p}
    found = _promtool(tmp_path, {"fb": panels["Memory by namespace"], "util": panels["Utilization by namespace"],
                                 "largest": panels["Largest memory by namespace"]})
    fb = {namespace: sum(per_gpu.values()) for namespace, per_gpu in _use(FB).items()}
    assert fb["team-a"] == 21000 and fb["team-e"] == 39200 and fb["team-f"] == 15000
    assert found["fb"] == pytest.approx(fb), found
    util = {namespace: mean(per_gpu.values()) for namespace, per_gpu in _use(UTIL).items()}
    assert util["team-a"] == 55 and util["team-e"] == 80
    assert found["util"] == pytest.approx(util), found
    # a namespace's largest reading is its largest pod's, as the CloudWatch form's over the per-pod set
    largest = {holder.namespace: 0.0 for node in virtual_gpus.FLEET for gpu in node.gpus for holder in gpu.holders}
    for node in virtual_gpus.FLEET:
        for gpu in node.gpus:
            for holder in gpu.holders:
                value = virtual_gpus.pod_value(node, gpu, holder, FB)
                largest[holder.namespace] = max(largest[holder.namespace], value)
    assert largest["team-a"] == 12000 and largest["team-f"] == 9000
    assert found["largest"] == pytest.approx(largest), found


def test_a_panel_reads_a_namespaces_use_through_a_failed_scrape_and_a_gpu_taken_since(virtual, tmp_path):
    """The 4.5.3 node's scrape at 15 minutes failed (its series marked stale): its GPUs' shares are read from the
    scrape before and still added (the device's series read at the copies' latest scrape), team-a 21,000 not 12,000.
    An idle GPU of the node without the setting (its device series until 13 minutes) taken by two pods of team-x
    named in turn (one per scrape, each copy the device's 5,000 MiB): 5,000, its pods' copies not added for a device
    series from before they came. Team-a's pod on 12,000 MiB gone at 14 minutes (within the panel's look-back): 9,000,
    its last share neither added nor read as the namespace's largest."""
    _, files = virtual
    (path,) = [p for p in files if p.startswith("grafana/") and p.endswith("-ns.json")]
    (expr,) = [p["targets"][0]["expr"] for p in json.loads(files[path])["panels"]
               if p.get("title") == "Memory by namespace"]
    failed = _fleet_series(lambda labels, value: f"{value}x29 stale {value}x9" if "gpu-node-on" in labels
                           else f"{value}x40")
    idle = 'UUID="GPU-gpu-node-off-1"'
    taken = [s for s in _fleet_series() if idle not in s["series"]]
    (device,) = [s["series"] for s in _fleet_series() if idle in s["series"] and s["series"].startswith(FB)]
    taken.append({"series": device, "values": "200x25 stale"})
    for k, pod in enumerate(("p1", "p2")):  # from 13 minutes, one of them per scrape
        taken.append({"series": f'{device[:-1]},container="main",namespace="team-x",pod="{pod}"}}', "values": " ".join(
            "_" if step < 26 else "5000" if step % 2 == k else "stale" for step in range(40))})
    left = _fleet_series(lambda labels, value: f"{value}x27 stale" if 'namespace="team-a",pod="ts-0"' in labels
                         else f"{value}x40")
    found = {"failed": _promtool(tmp_path, {"failed": expr}, failed)["failed"],
             "taken": _promtool(tmp_path, {"taken": expr}, taken)["taken"],
             "left": _promtool(tmp_path, {"left": expr}, left)["left"]}
    use = {namespace: sum(per_gpu.values()) for namespace, per_gpu in _use(FB).items()}
    assert found["failed"] == pytest.approx(use), found
    assert found["taken"] == pytest.approx({**use, "team-x": 5000}), found
    assert found["left"] == pytest.approx({**use, "team-a": 9000}), found


def test_a_panel_reads_one_copy_of_a_gpu_whose_pods_just_left_an_older_exporter(virtual, tmp_path):
    """The 4.5.2 node's pods all leave at 14 minutes and its exporter then writes the freed GPU's own series (300 MiB,
    no pod): its latest scrape names no pod, so the GPU holds none and team-e has no line, as the per-pod panels show
    no pod on a GPU found idle. Its two copies of 39,200 MiB (each the device's value) were once added as 4.5.3 shares
    (78,400, and a mean of 160 %), then read once for the panel's look-back (39,200 MiB of a GPU using 300)."""
    import re as re_

    _, files = virtual
    (path,) = [p for p in files if p.startswith("grafana/") and p.endswith("-ns.json")]
    exprs = {p.get("title"): p["targets"][0]["expr"] for p in json.loads(files[path])["panels"] if "targets" in p}
    series: list[dict[str, str]] = []
    for each in _fleet_series():
        if "gpu-node-old" in each["series"]:
            each = dict(each, values=f'{each["values"].split("x")[0]}x27 stale')
            device = re_.sub(r',container="[^"]*",namespace="[^"]*",pod="[^"]*",pod_uid="[^"]*",vgpu="[^"]*"', "",
                             each["series"])
            assert device != each["series"]
            if not any(known["series"] == device for known in series):
                series.append({"series": device, "values": "_x27 300x12" if device.startswith(FB) else "_x27 0x12"})
        series.append(each)
    found = _promtool(tmp_path, {"fb": exprs["Memory by namespace"], "util": exprs["Utilization by namespace"]},
                      series)
    assert "team-e" not in found["fb"] and "team-e" not in found["util"], found
    assert found["fb"] and found["util"], found  # the other namespaces' lines are read


RULES = "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
    f"    yield Alarm('fb{threshold}', 'Memory over {threshold}', Condition(Query({FB!r}, 'sum', ('namespace',)), '>', "
    f"{threshold}), description='x', runbook='y')\n" for threshold in (20000, 40000))


def test_the_rules_judge_a_namespaces_use_on_both_exporter_versions(tmp_path):
    """Prometheus: the rule adding framebuffer used per namespace over 20,000 MiB judges each namespace's use of its
    GPUs (promtool on the rule's expression over the fleet's series): team-a's 21,000 of two 4.5.3 pods on one GPU
    breach (their largest copy, 12,000, did not), team-f's 15,000 and team-c's 19,000 do not; over 40,000, team-e's
    39,200 (two 4.5.2 copies of one GPU) does not breach."""
    (tmp_path / "project").mkdir()
    project = defined_project(tmp_path / "project", VIRTUAL, alarms=RULES, dashboards=DASHBOARDS)
    rules = _rule_groups(encode(build(project, grafana=False)))
    exprs = {rule["annotations"]["summary"].split(" on ", 1)[0]: rule["expr"]
             for group in rules for rule in group["rules"] if "alert" in rule}
    found = _promtool(tmp_path, {name: exprs[name] for name in ("Memory over 20000", "Memory over 40000")})
    use = {namespace: sum(per_gpu.values()) for namespace, per_gpu in _use(FB).items()}
    assert set(found["Memory over 20000"]) == {ns for ns, value in use.items() if value > 20000} \
        == {"team-a", "team-d", "team-e"}
    assert found["Memory over 40000"] == {}


CONTAINER = ("from generator.model import Dashboard, Panel, Query, Row\n\n\ndef dashboards(ctx):\n"
             "    yield Dashboard(id='ns', title='NS', rows=[Row('All', [\n"
             f"        Panel('Memory by container', Query({FB!r}, 'sum', ('container',)), unit='mebibyte'),\n"
             f"        Panel('Utilization by container', Query({UTIL!r}, 'avg', ('container',)), unit='percent'),\n"
             "    ])])\n")


def test_a_panel_per_container_adds_the_pods_shares_named_with_their_namespaces(tmp_path):
    """Grafana, a line per container (every pod of the fleet runs one, `main`): its use of each GPU is its pods'
    shares added on the 4.5.3 node (GPU 0: team-a's 12,000 + 9,000 and team-b's ts-0 at 0; GPU 1 19,000; GPU 3
    9,000 + 6,000), the device's value once elsewhere (25,000; the 4.5.2 pair's 39,200): 119,200 MiB, a mean of
    utilization of 67.6 %. Seen: 64,200 and 75 %: the pods' shares were matched with the pods the GPU's latest scrape
    named on their namespace, which a line per container does not carry, so the 4.5.3 node's GPUs were left out
    (and two pods of one name in two namespaces, team-a/ts-0 and team-b/ts-0, were one). The GPUs no pod holds (their
    own series alone) show under no container: they read as a container without a name, 500 MiB and 0 %."""
    project = defined_project(tmp_path / "project" if (tmp_path / "project").mkdir() is None else None, VIRTUAL,
                              dashboards=CONTAINER)
    files = encode(build(project))
    (path,) = [p for p in files if p.startswith("grafana/") and p.endswith("-ns.json")]
    panels = {p.get("title"): p["targets"][0]["expr"] for p in json.loads(files[path])["panels"] if "targets" in p}
    found = _promtool(tmp_path, {"fb": panels["Memory by container"], "util": panels["Utilization by container"]},
                      key="container")
    per_gpu = {field: {} for field in (FB, UTIL)}  # the namespaces' uses of each GPU added (one per GPU but GPU 0 of
    for field, use in per_gpu.items():  # the 4.5.3 node, where they are shares)
        for by_gpu in _use(field).values():
            for key, value in by_gpu.items():
                use[key] = use.get(key, 0.0) + value
    assert sum(per_gpu[FB].values()) == 119200 and mean(per_gpu[UTIL].values()) == pytest.approx(67.6)
    assert found == {"fb": {"main": pytest.approx(119200)}, "util": {"main": pytest.approx(67.6)}}, found


CONTAINER_RULES = "from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n" + "".join(
    f"    yield Alarm({alarm!r}, {title!r}, Condition(Query({field!r}, {how!r}, ('container',)), '>', {threshold}),\n"
    f"                description='x', runbook='y')\n"
    for alarm, title, field, how, threshold in (("fb-low", "Memory over 100", FB, "sum", 100),
                                                ("fb-below", "Memory over 119000", FB, "sum", 119000),
                                                ("fb-above", "Memory over 119500", FB, "sum", 119500),
                                                ("util-below", "Utilization over 67", UTIL, "avg", 67),
                                                ("util-above", "Utilization over 68", UTIL, "avg", 68)))


def test_the_rules_per_container_judge_the_pods_shares_not_the_gpus_no_pod_holds(tmp_path):
    """Prometheus, a rule per container (the agent publishing `container` with the pods' dimensions): it judges the
    container `main` by its pods' shares as the panel reads them (119,200 MiB, 67.6 %), and the GPUs no pod holds
    (their own series alone, 500 MiB and 0 %) are no container's. Seen: a rule's steps read the device's own series
    too, so 'Memory over 100' fired on a container without a name (the idle GPUs' 500 MiB), as the panel per
    container showed one before a56900da."""
    (tmp_path / "project").mkdir()
    settings = VIRTUAL + "cloudwatch:\n  dimensions: [ClusterName, namespace, pod, container]\n"
    project = defined_project(tmp_path / "project", settings, alarms=CONTAINER_RULES, dashboards=DASHBOARDS)
    rules = _rule_groups(encode(build(project, grafana=False)))
    exprs = {rule["annotations"]["summary"].split(" on ", 1)[0]: rule["expr"]
             for group in rules for rule in group["rules"] if "alert" in rule}
    found = _promtool(tmp_path, exprs, key="container")
    assert {name: set(fired) for name, fired in found.items()} == {
        "Memory over 100": {"main"}, "Memory over 119000": {"main"}, "Memory over 119500": set(),
        "Utilization over 67": {"main"}, "Utilization over 68": set()}, found


CONTAINER_LINES = ("from generator.model import Dashboard, Panel, Query, Row\n\n\ndef dashboards(ctx):\n"
                   "    yield Dashboard(id='ns', title='NS', rows=[Row('All', [\n" + "".join(
                       f"        Panel({f'{how} {field}'!r}, Query({field!r}, {how!r}, ('container',))),\n"
                       for field in (FB, UTIL) for how in ("sum", "avg", "max", "min", "count")) + "    ])])\n")


@pytest.mark.parametrize("settings", [VIRTUAL, "exporter:\n  mig: none\n"], ids=["virtual_gpus", "without"])
def test_a_line_per_container_is_drawn_for_the_containers_alone(tmp_path, settings):
    """Grafana, every aggregation of a line per container, with exporter.virtual_gpus and without: the GPUs no pod
    holds (their series carry no pod, no container) are no container's. Seen: the largest, least and count per
    container drew a container without a name beside `main` (largest memory 30,000 MiB, utilization 90 %: the
    device's own series of the held 4.5.3 GPUs and the idle GPUs), on both settings, as a line per namespace once
    drew "Namespace " (a line per pod or namespace reads pod!=\"\", a line per container did not)."""
    (tmp_path / "project").mkdir()
    project = defined_project(tmp_path / "project", settings, dashboards=CONTAINER_LINES)
    files = encode(build(project))
    # the dashboard and the parts it is cut into when one ConfigMap cannot hold it (gpudash-ns-2, ...)
    paths = [p for p in files if re.fullmatch(r"grafana/gpudash-ns(-\d+)?\.json", p)]
    panels = {p.get("title"): p["targets"][0]["expr"] for path in paths for p in json.loads(files[path])["panels"]
              if "targets" in p}
    assert len(panels) == 10
    found = _promtool(tmp_path, panels, key="container")
    assert {title: set(lines) for title, lines in found.items()} == {title: {"main"} for title in panels}, found
