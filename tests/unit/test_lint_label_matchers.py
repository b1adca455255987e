"""AG001 judges an agent declaration by the points its label matchers let in, as awsemf does (metric_declaration.go:
a matcher's regex is found, unanchored, in the values of its label names joined by its separator, a missing label
read as empty; a declaration with several matchers takes a point one of them matches).

A build's agent configuration edited by hand: a matcher that no scraped point passes publishes nothing, one that asks
for a label some points lack (a pod) publishes the others alone (a GPU no pod holds goes missing from the fleet and
health views), and one loosened to pass the points the agent makes under a mark of their own (a pod's total) publishes
those too, each read by the widgets as one more reading. What each edit does is shown by pushing scrapes through the
agent model (tests/support/cloudwatch_agent, cloudwatch_otel); lint must say it, and must say nothing of edits that
change nothing.
"""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from generator.artifacts import build
from generator.lint import run
from generator.lint.feed_rules import RULES
from generator.output import encode
from generator.project import load_project
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels
from tests.support.lint_input import exporter_job_edited, lint_input

AGENT = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
CLASSIC = "agent:\n  pipeline: classic\n"
GPU_SET = ("ClusterName", "node", "gpu")
NODE = "ip-10-0-1-1"
# two GPUs of one node: GPU 0 held by ml/train (two of its GPUs on the node: GPU 0 and GPU 2), GPU 1 held by no pod
PAYLOAD = "".join(
    f"# TYPE {name} gauge\n" + "".join(
        f'{name}{{gpu="{gpu}",UUID="GPU-{gpu}",Hostname="{NODE}"{held}}} {value}\n'
        for gpu, held, value in ((0, ',pod="train",namespace="ml"', base), (1, "", base + 1),
                                 (2, ',pod="train",namespace="ml"', base + 2)))
    for name, base in (("DCGM_FI_DEV_GPU_TEMP", 60), ("DCGM_FI_DEV_POWER_USAGE", 200)))


def _edited(project, edit):
    """The project's build with its agent's publishing configuration edited in a copy: the collector configuration
    on agent.pipeline: otel, cwagentconfig.json on classic (`edit` gets its metric declarations)."""
    artifacts = build(project, grafana=False)
    agent = artifacts.agents[0]
    if agent.otel is not None:
        otel = copy.deepcopy(agent.otel)
        edit(otel["exporters"]["awsemf/gpudash"]["metric_declarations"])
        agent = replace(agent, otel=otel)
    else:
        config = copy.deepcopy(agent.config)
        edit(config["logs"]["metrics_collected"]["prometheus"]["emf_processor"]["metric_declaration"])
        agent = replace(agent, config=config)
    return replace(artifacts, agents=(agent, *artifacts.agents[1:]))


def _published(artifacts, metric: str, dims: tuple[str, ...], payload: str = PAYLOAD) -> list[tuple[str, float]]:
    """(the set's values but ClusterName, value) of each point of `metric` the agent publishes in the set `dims` at
    one scrape of `payload` (the model of the agent running the build's configuration)."""
    config, job = agent_config(encode(artifacts)[AGENT])
    agent = Agent(config, job)
    points = [p for k in range(2) for p in agent.scrape(Scrape(k * 30.0, payload, target_labels(job, NODE)))
              if p.metric == metric and set(p.dims()) == set(dims) and p.timestamp == 30.0]
    return sorted((",".join(v for d, v in sorted(p.dims().items()) if d != "ClusterName"), p.value) for p in points)


def _ag001(project, artifacts) -> list[str]:
    return [f"{f.severity} {f.where}: {f.message}" for f in run([r for r in RULES if r.id == "AG001"],
                                                                  lint_input(project, artifacts))]


def _gpu_declaration(declarations) -> dict:
    return next(d for d in declarations if [*GPU_SET] in d["dimensions"])


def _never(declarations):  # the per-GPU declaration's matcher passes no point
    for matcher in _gpu_declaration(declarations).get("label_matchers") or []:
        matcher["regex"] = "^never$"
    if "label_matcher" in _gpu_declaration(declarations):
        _gpu_declaration(declarations)["label_matcher"] = "^never$"


def _held_only(declarations):  # the per-GPU declaration passes the points of GPUs a pod holds alone
    declaration = _gpu_declaration(declarations)
    if "source_labels" in declaration:
        declaration.update(source_labels=["job", "pod"], label_matcher="^dcgm\\-exporter;.+$")
    else:
        declaration["label_matchers"] = [{"label_names": ["pod"], "separator": ";", "regex": ".+"}]


def _job_named(declarations):  # the per-GPU declaration keyed on the job: classic on another job's name
    declaration = _gpu_declaration(declarations)
    if "source_labels" in declaration:
        declaration.update(source_labels=["job"], label_matcher="^gpudash\\-kube\\-state\\-metrics$")
    else:  # the OTel receiver puts the job into the resource: awsemf reads the point's `job` as empty
        declaration["label_matchers"] = [{"label_names": ["job"], "separator": ";", "regex": "^dcgm\\-exporter$"}]


def _gpu_loosened(declarations):  # the per-GPU declaration's matcher passes every point, those the agent makes too
    for matcher in _gpu_declaration(declarations)["label_matchers"]:
        matcher["regex"] = ".*"


@pytest.fixture(scope="module")
def projects(tmp_path_factory):
    made = {}
    for name, settings in (("otel", ""), ("classic", CLASSIC)):
        folder = tmp_path_factory.mktemp(name)
        (folder / "gpudash.yaml").write_text(settings)
        made[name] = load_project(folder / "gpudash.yaml")
    return made


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_as_built_every_gpu_is_published_and_lint_is_quiet(projects, pipeline):
    artifacts = build(projects[pipeline], grafana=False)
    assert _published(artifacts, "DCGM_FI_DEV_GPU_TEMP", GPU_SET) == [("0," + NODE, 60.0), ("1," + NODE, 61.0),
                                                                       ("2," + NODE, 62.0)]
    assert _ag001(projects[pipeline], artifacts) == []


def _names_the_gpu_temperature_set(findings: list[str]) -> bool:
    return any("'GPU temperature'" in f and "DCGM_FI_DEV_GPU_TEMP with dimensions [ClusterName, gpu, node]" in f
               for f in findings)


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
@pytest.mark.parametrize("edit", [_never, _job_named], ids=["no point passes", "on the job"])
def test_a_matcher_that_passes_no_point_fails_ag001(projects, pipeline, edit):
    """A matcher no point passes; or one on the job: on the JSON path a declaration's source_labels read the job (here
    another job's name), on the OTel pipeline a matcher on `job` reads it as empty (the receiver makes it the
    resource's service.name). Neither publishes."""
    artifacts = _edited(projects[pipeline], edit)
    assert _published(artifacts, "DCGM_FI_DEV_GPU_TEMP", GPU_SET) == []
    findings = _ag001(projects[pipeline], artifacts)
    assert _names_the_gpu_temperature_set(findings), findings


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_a_matcher_asking_for_a_pod_fails_ag001(projects, pipeline):
    """The GPU no pod holds (GPU 1) is published nowhere per GPU: the fleet and health views lose it."""
    artifacts = _edited(projects[pipeline], _held_only)
    assert _published(artifacts, "DCGM_FI_DEV_GPU_TEMP", GPU_SET) == [("0," + NODE, 60.0), ("2," + NODE, 62.0)]
    findings = _ag001(projects[pipeline], artifacts)
    assert _names_the_gpu_temperature_set(findings), findings


def test_a_plain_matcher_loosened_to_take_the_agents_own_points_fails_ag001(projects):
    """agent.pipeline: otel: the per-GPU set also takes the points the agent makes of a GPU's temperature under a mark
    of their own (its reading once, for the fleet's mean; its flag past the alarm's level, 0 or 1) wherever they carry
    the set's names: GPU 1's line reads 61, 61 and 0 at one scrape where it reads 61 (a mean of 40.7)."""
    project = projects["otel"]
    artifacts = _edited(project, _gpu_loosened)
    published = _published(artifacts, "DCGM_FI_DEV_GPU_TEMP", GPU_SET)
    assert [value for key, value in published if key == "1," + NODE] == [0.0, 61.0, 61.0]
    findings = _ag001(project, artifacts)
    assert any("DCGM_FI_DEV_GPU_TEMP [ClusterName, node, gpu] also takes the points the agent makes under above 80="
               in f for f in findings), findings


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_edits_that_change_nothing_are_not_flagged(projects, pipeline):
    """The sets' names in another order (awsemf sorts them), the per-GPU matcher written otherwise but passing the
    same points (over the cluster's name too, which every point carries); on classic, a source label beside the job
    that any value passes."""
    def rewritten(declarations):
        declaration = _gpu_declaration(declarations)
        for each in declarations:
            for dims in each["dimensions"]:
                dims.reverse()
        if "source_labels" in declaration:
            declaration.update(source_labels=["job", "pod"], label_matcher="^dcgm\\-exporter;")
        else:
            names = declaration["label_matchers"][0]["label_names"]  # one matcher, the cluster's name first
            declaration["label_matchers"] = [{"label_names": ["ClusterName", *names], "separator": ";",
                                              "regex": "^gpu\\-cluster(?:;){%d}$" % len(names)}]

    artifacts = _edited(projects[pipeline], rewritten)
    assert _published(artifacts, "DCGM_FI_DEV_GPU_TEMP", GPU_SET) == [("0," + NODE, 60.0), ("1," + NODE, 61.0),
                                                                       ("2," + NODE, 62.0)]
    assert _ag001(projects[pipeline], artifacts) == []


def _metric_relabeled(rule: dict):
    """An edit of the OTel pipeline's exporter job: `rule` appended to its metric_relabel_configs."""
    def edit(otel):
        job = otel["receivers"]["prometheus/gpudash"]["config"]["scrape_configs"][0]
        job.setdefault("metric_relabel_configs", []).append(rule)
    return edit


def _otel_edited(project, edit):
    artifacts = build(project, grafana=False)
    agent = artifacts.agents[0]
    otel = copy.deepcopy(agent.otel)
    edit(otel)
    return replace(artifacts, agents=(replace(agent, otel=otel), *artifacts.agents[1:]))


@pytest.mark.parametrize("rule, published", [
    pytest.param({"action": "labeldrop", "regex": "ClusterName"}, [], id="dropped"),
    pytest.param({"action": "replace", "target_label": "ClusterName", "replacement": "other"}, [],
                 id="renamed"),
    pytest.param({"action": "labeldrop", "regex": "pci_bus_id"}, [("0," + NODE, 60.0), ("1," + NODE, 61.0),
                                                                  ("2," + NODE, 62.0)], id="another-label"),
])
def test_a_metric_relabel_rule_taking_the_cluster_name_away_fails_ag002(projects, rule, published):
    """agent.pipeline: otel attaches ClusterName as a target label (relabel_configs), which the job's
    metric_relabel_configs run after: a rule there that drops it or rewrites it leaves no point under the cluster's
    name, and every widget and alarm (WHERE ClusterName = 'gpu-cluster') reads nothing."""
    project = projects["otel"]
    artifacts = _otel_edited(project, _metric_relabeled(rule))
    config, job = agent_config(encode(artifacts)[AGENT])
    agent = Agent(config, job)
    points = [p for k in range(2) for p in agent.scrape(Scrape(k * 30.0, PAYLOAD, target_labels(job, NODE)))
              if p.metric == "DCGM_FI_DEV_GPU_TEMP" and set(p.dims()) == set(GPU_SET) and p.timestamp == 30.0
              and p.dims()["ClusterName"] == "gpu-cluster"]
    assert sorted((f"{p.dims()['gpu']},{p.dims()['node']}", p.value) for p in points) == published
    findings = [f.message for f in run([r for r in RULES if r.id == "AG002"], lint_input(project, artifacts))]
    assert bool(findings) == (not published), findings
    assert all("metric_relabel_configs" in f for f in findings), findings


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_a_job_no_longer_writing_the_node_fails_ag002(projects, pipeline):
    """The per-GPU set [ClusterName, node, gpu] needs `node`, which the agent's exporter job writes from the pod's
    __meta_kubernetes_pod_node_name (the exporter writes no `node`): with that rule gone (or reading a meta label
    Kubernetes SD does not give) no point carries it and the fleet and health views read nothing."""
    def without_node(job):
        job["relabel_configs"] = [r for r in job["relabel_configs"] if r.get("target_label") != "node"]

    artifacts = exporter_job_edited(build(projects[pipeline], grafana=False), without_node)
    assert _published(artifacts, "DCGM_FI_DEV_GPU_TEMP", GPU_SET) == []
    findings = [f.message for f in run([r for r in RULES if r.id == "AG002"], lint_input(projects[pipeline], artifacts))]
    assert any("'node'" in f for f in findings), findings


@pytest.mark.parametrize("mark, metric, dims", [
    ("pod_total", "DCGM_FI_DEV_POWER_USAGE", ("ClusterName", "namespace", "pod", "pod_total")),
    ("readings", "DCGM_FI_DEV_POWER_USAGE", ("ClusterName", "readings")),
])
def test_a_marked_sets_matcher_passing_none_of_its_points_fails_ag001(projects, mark, metric, dims):
    """agent.pipeline: otel: the set of a pod's total power per scrape (ml/train's GPUs 0 and 2: 402 W) and that of
    each GPU's reading once (the fleet's values past their LIMIT), their declaration given a matcher on the mark that
    passes no value the agent gives it."""
    project = projects["otel"]

    def never(declarations):
        declaration = next(d for d in declarations if any(set(each) == set(dims) for each in d["dimensions"])
                           and f"^{metric}$" in d["metric_name_selectors"])
        declaration["label_matchers"] = [{"label_names": [mark], "separator": ";", "regex": "^never$"}]

    assert _published(build(project, grafana=False), metric, dims)
    artifacts = _edited(project, never)
    assert _published(artifacts, metric, dims) == []
    findings = _ag001(project, artifacts)
    assert any(metric in f and mark in f for f in findings), findings


# Hand-edited matchers judged over points shaped like the real exporter's (series_labels.REAL_VALUES): one that
# constrains a value's format alone passes every real point; one that picks some values drops the others.
def _also_matching(label: str, regex: str, which=None):
    """An edit: the per-GPU declaration (or the one `which` picks) passes a point only where `label` matches `regex`
    (anchored at its start) too: on the JSON path a second source label, on the OTel pipeline a seventh name of its
    one matcher."""
    def edit(declarations):
        declaration = (which or _gpu_declaration)(declarations)
        if "source_labels" in declaration:
            declaration.update(source_labels=["job", label], label_matcher="^dcgm\\-exporter;" + regex.lstrip("^"))
        else:
            (matcher,) = declaration["label_matchers"]
            matcher["label_names"] = [*matcher["label_names"], label]
            matcher["regex"] = matcher["regex"].rstrip("$") + ";" + regex.lstrip("^")
    return edit


EVERY_GPU_PUBLISHED = [("0," + NODE, 60.0), ("1," + NODE, 61.0), ("2," + NODE, 62.0)]


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
@pytest.mark.parametrize("label, regex", [("gpu", "^[0-9]+$"), ("UUID", "^GPU-")], ids=["gpu digits", "UUID GPU-"])
def test_a_matcher_on_a_values_format_passes_every_point_and_lint_is_quiet(projects, pipeline, label, regex):
    """Every real value of the label passes (a GPU's index is digits, its UUID GPU-..., ...): nothing is dropped, and
    lint, which once read each value as a placeholder and failed these, says nothing."""
    artifacts = _edited(projects[pipeline], _also_matching(label, regex))
    assert _published(artifacts, "DCGM_FI_DEV_GPU_TEMP", GPU_SET) == EVERY_GPU_PUBLISHED
    assert _ag001(projects[pipeline], artifacts) == []


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_a_matcher_that_drops_gpu_0_fails_ag001(projects, pipeline):
    """`gpu` by ^[1-9]$ drops GPU 0 (and GPU 10 on, of a node of 16): its line is missing from every per-GPU view."""
    artifacts = _edited(projects[pipeline], _also_matching("gpu", "^[1-9]$"))
    assert _published(artifacts, "DCGM_FI_DEV_GPU_TEMP", GPU_SET) == EVERY_GPU_PUBLISHED[1:]
    findings = _ag001(projects[pipeline], artifacts)
    assert _names_the_gpu_temperature_set(findings), findings


def test_a_hostname_matcher_on_node_names_fails_ag001_as_exporters_without_node_name_write_their_pod(projects):
    """`Hostname` by ^ip- passes a node EKS names by IP, but an exporter run without NODE_NAME writes its own pod's name
    there (the reference A10G payload's Hostname is nvidia-dcgm-exporter-48cwd), and the main branch writes
    `hostname`: those GPUs are dropped, and lint says so."""
    project = projects["classic"]
    artifacts = _edited(project, _also_matching("Hostname", "^ip-"))
    assert _published(artifacts, "DCGM_FI_DEV_GPU_TEMP", GPU_SET) == EVERY_GPU_PUBLISHED
    own_pod = PAYLOAD.replace(f'Hostname="{NODE}"', 'Hostname="nvidia-dcgm-exporter-48cwd"')
    assert _published(artifacts, "DCGM_FI_DEV_GPU_TEMP", GPU_SET, own_pod) == []
    assert _names_the_gpu_temperature_set(_ag001(project, artifacts))


POD_SET = ("ClusterName", "namespace", "pod")
# GPU 0 held by web-1, GPU 1 by train-0, both in ml (the per-pod set's field: the SM clock)
POD_PAYLOAD = "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n" + "".join(
    f'DCGM_FI_DEV_SM_CLOCK{{gpu="{gpu}",UUID="GPU-{gpu}",Hostname="{NODE}",pod="{pod}",namespace="ml"}} {clock}\n'
    for gpu, pod, clock in ((0, "web-1", 1400), (1, "train-0", 1500)))


def _pod_declaration(declarations) -> dict:
    return next(d for d in declarations if [*POD_SET] in d["dimensions"])


_web_pods_only = _also_matching("pod", "^web-", _pod_declaration)  # pods named web-* alone
_pod_names_only = _also_matching("pod", "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", _pod_declaration)  # as Kubernetes names


def _pod_lines(artifacts) -> list[tuple[str, float]]:
    return _published(artifacts, "DCGM_FI_DEV_SM_CLOCK", POD_SET, POD_PAYLOAD)


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_a_pod_matcher_that_drops_other_pods_fails_ag001_and_one_on_the_names_shape_does_not(projects, pipeline):
    project = projects[pipeline]
    assert _pod_lines(build(project, grafana=False)) == [("ml,train-0", 1500.0), ("ml,web-1", 1400.0)]
    artifacts = _edited(project, _web_pods_only)
    assert _pod_lines(artifacts) == [("ml,web-1", 1400.0)]
    assert any("DCGM_FI_DEV_SM_CLOCK with dimensions [ClusterName, namespace, pod]" in f
               for f in _ag001(project, artifacts))
    artifacts = _edited(project, _pod_names_only)
    assert _pod_lines(artifacts) == [("ml,train-0", 1500.0), ("ml,web-1", 1400.0)]
    assert _ag001(project, artifacts) == []


def test_a_second_matcher_passing_every_gpu_index_takes_the_agents_own_points_and_fails_ag001(projects):
    """agent.pipeline: otel: a second matcher on `gpu` by ^[0-9]+$ beside the one keeping the marks empty (awsemf takes
    a point one matcher passes) also takes the points the agent makes of a GPU's temperature under a mark, which carry
    the GPU's index: GPU 1's line reads 61, 61 and 0 at one scrape. Read as a placeholder, the index failed the regex
    and lint said nothing."""
    project = projects["otel"]

    def second(declarations):
        _gpu_declaration(declarations)["label_matchers"].append({"label_names": ["gpu"], "separator": ";",
                                                                 "regex": "^[0-9]+$"})
    artifacts = _edited(project, second)
    assert [v for key, v in _published(artifacts, "DCGM_FI_DEV_GPU_TEMP", GPU_SET) if key == "1," + NODE] == \
        [0.0, 61.0, 61.0]
    assert any("DCGM_FI_DEV_GPU_TEMP [ClusterName, node, gpu] also takes the points the agent makes under" in f
               for f in _ag001(project, artifacts))


def test_a_pod_matcher_on_the_pods_totals_that_drops_other_pods_fails_ag001(projects):
    """agent.pipeline: otel: the pods' totals (made by the agent under pod_total) published for web-* pods alone."""
    project = projects["otel"]

    def web_totals(declarations):
        declaration = next(d for d in declarations if ["ClusterName", "namespace", "pod", "pod_total"] in d["dimensions"])
        declaration["label_matchers"] = [{"label_names": ["pod"], "separator": ";", "regex": "^web-"}]
    findings = _ag001(project, _edited(project, web_totals))
    assert any("[ClusterName, namespace, pod, pod_total]: the declaration's label matchers pass only some of the "
               "points the agent makes under pod_total" in f for f in findings), findings


def test_a_node_mean_matcher_on_the_nodes_name_shape_passes_every_node_and_lint_is_quiet(projects):
    """agent.pipeline: otel: the node's totals and counts published as before; lint, which judged the kinds a NODE_MEAN
    declaration publishes by a point carrying node_mean alone (the node read as empty), said each kind the widgets
    read was published nowhere."""
    project = projects["otel"]

    def on_node_names(declarations):
        for declaration in declarations:
            if any("node_mean" in dims for dims in declaration["dimensions"]):
                (matcher,) = declaration["label_matchers"]
                matcher["label_names"] = [*matcher["label_names"], "node"]
                matcher["regex"] = matcher["regex"].rstrip("$") + ";[a-z0-9]"
    artifacts = _edited(project, on_node_names)
    node_set = ("ClusterName", "node", "node_mean")
    assert _published(artifacts, "DCGM_FI_DEV_GPU_TEMP", node_set) == \
        _published(build(project, grafana=False), "DCGM_FI_DEV_GPU_TEMP", node_set) != []
    assert _ag001(project, artifacts) == []
