"""The agent configuration publishes what the dashboards and alarms query, whatever the settings name: the
workload's labels as the exporter writes them, user strings the agent would expand, scrape jobs Prometheus loads."""

from __future__ import annotations

import copy
import re
from dataclasses import replace
from pathlib import Path

import pytest

from generator.artifacts import build
from generator.lint import run
from generator.lint.feed_rules import RULES
from generator.output import encode
from generator.project import load_project
from tests.support import documentation
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config, exposition
from tests.support.dcgm_fleet import target_labels
from tests.support.lint_input import lint_input
from tests.support.promtool_config import promtool_check_config

ROOT = Path(__file__).resolve().parents[2]
AGENT = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
OLD_LABELS = "labels:\n  pod: pod_name\n  namespace: pod_namespace\n  container: container_name\n"


def _old_namespace_payload() -> str:
    """The sample payload as an exporter run with --use-old-namespace writes it (pod_name, pod_namespace,
    container_name instead of pod, namespace, container)."""
    sample = (ROOT / "generator/defaults/sample-exporter.prom").read_text()
    return _old_names(sample)


def _old_names(payload: str) -> str:
    """A payload's labels as an exporter run with --use-old-namespace writes them: pod_name, pod_namespace,
    container_name, and the GPU's UUID as `uuid`."""
    for old, new in (("uuid", "UUID"), ("pod_name", "pod"), ("pod_namespace", "namespace"),
                     ("container_name", "container")):
        payload = re.sub(rf'([{{,]){new}="', rf'\g<1>{old}="', payload)
    return payload


def _agent_points(files: dict[str, bytes], payload: str) -> list:
    config, job = agent_config(files[AGENT])
    agent = Agent(config, job)
    points = []
    for k in range(3):
        for node in ("gpu-node-a", "gpu-node-b"):
            served = "\n".join(line for line in payload.splitlines()
                               if line.startswith("#") or f'Hostname="{node}"' in line)
            points += agent.scrape(Scrape(k * 30, served, target_labels(job, node)))
    return points


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_an_exporter_writing_the_old_pod_labels_publishes_every_pod_in_the_per_pod_set(project_dir, pipeline):
    """labels.pod: pod_name (the exporter's --use-old-namespace): the agent's job renames the workload's labels
    to the names its dimension sets use, so every pod holding a GPU is published as [ClusterName, namespace, pod]."""
    payload = _old_namespace_payload()
    truth = {(labels["pod_namespace"], labels["pod_name"]) for _, _, labels, _ in exposition(payload)
             if "pod_name" in labels}
    assert len(truth) >= 2
    files = encode(build(load_project(project_dir(OLD_LABELS + f"agent:\n  pipeline: {pipeline}\n"))))
    points = _agent_points(files, payload)
    per_pod = {(p.dims()["namespace"], p.dims()["pod"]) for p in points
               if {"ClusterName", "namespace", "pod"} == set(p.dims())}
    assert per_pod == truth
    # the old names are not published beside the new ones
    assert not any({"pod_name", "pod_namespace", "container_name"} & set(p.dims()) for p in points)


def test_an_exporter_writing_the_old_names_keeps_a_pods_gpus_apart_in_the_per_pod_totals(project_dir):
    """--use-old-namespace also writes a GPU's UUID as `uuid`; the agent's pipeline merges a GPU's series by UUID,
    so unrenamed every GPU of a pod read as one (a pod on two GPUs drawing 280 and 220 W showed 280 W on 1 GPU).
    The per-pod totals of the old names equal the truth, as the current names' do."""
    import json

    from tests.support import cloudwatch_eval, mixed_fleet
    from tests.support.dcgm_fleet import EXPORTER_NAMESPACE, discovered

    node = next(n for n in mixed_fleet.FLEET if n.name == "ip-10-0-3-7.ec2.internal")
    meta = {"__address__": "10.0.3.7:9400", "__meta_kubernetes_namespace": EXPORTER_NAMESPACE,
            "__meta_kubernetes_pod_name": node.exporter_pod, "__meta_kubernetes_pod_node_name": node.name,
            "__meta_kubernetes_pod_container_port_number": "9400",
            "__meta_kubernetes_pod_label_app": "nvidia-dcgm-exporter"}
    totals = {}
    for settings, written in ((OLD_LABELS, _old_names), ("{}\n", lambda text: text)):
        files = encode(build(load_project(project_dir(settings))))
        config, job = agent_config(files[AGENT])
        agent = Agent(config, job)
        points = agent.run([Scrape(30.0 * k, written(mixed_fleet.payload(node, 30 * k)), discovered(job, meta))
                            for k in range(20)])
        body = json.loads(json.loads(files["cloudwatch/dashboards/gpudash-gpu-cluster-by-pod.json"])["DashboardBody"])
        widgets = {w["properties"]["title"]: w["properties"] for w in body["widgets"] if w["type"] == "metric"}
        totals[settings] = {title: {label: sorted({round(v, 1) for v in series.values()}) for label, series in
                                    cloudwatch_eval.widget(widgets[title], points, 300.0, 600.0).items()}
                            for title in ("Power draw of each pod's GPUs", "Pods on GPUs", "Framebuffer used by pod")}
    pod = "Pod team-f/trainer.v2-0"
    assert totals[OLD_LABELS]["Power draw of each pod's GPUs"][pod] == [500.0]  # 280 + 220 W
    assert totals[OLD_LABELS]["Pods on GPUs"][pod] == [2.0]
    assert totals[OLD_LABELS] == totals["{}\n"]


def _without_renames(artifacts):
    """The build with the agent's scrape job keeping the exporter's label names (as before it renamed them)."""
    agent = artifacts.agents[0]
    scrape = copy.deepcopy(agent.scrape)
    job = scrape["scrape_configs"][0]
    job["metric_relabel_configs"] = [rule for rule in job["metric_relabel_configs"]
                                     if rule.get("target_label") not in ("pod", "namespace", "container")
                                     and rule.get("action") != "labeldrop"]
    return replace(artifacts, agents=(replace(agent, scrape=scrape), *artifacts.agents[1:]))


def test_lint_reads_the_published_labels_from_the_settings(project_dir):
    """AG002 derives the labels the agent's series carry from `labels:` and the job's relabeling: with the exporter's
    old pod labels, a job that does not rename them publishes no per-pod set, and lint says so."""
    project = load_project(project_dir(OLD_LABELS + "agent:\n  pipeline: classic\n"))
    artifacts = build(project)
    ag002 = [r for r in RULES if r.id == "AG002"]
    assert run(ag002, lint_input(project, artifacts)) == []
    findings = run(ag002, lint_input(project, _without_renames(artifacts)))
    assert {f.message for f in findings} >= {
        "dimension 'pod' is not a label on the scraped DCGM series: the agent emits no metric with this set",
        "dimension 'namespace' is not a label on the scraped DCGM series: the agent emits no metric with this set"}
    # the defaults' names need no rename, and lint does not ask for one
    defaults = load_project(project_dir("agent:\n  pipeline: classic\n"))
    assert run(ag002, lint_input(defaults, build(defaults))) == []


def test_verify_reads_the_pod_labels_under_the_names_the_settings_give(project_dir):
    """`gpudash verify` on an exporter writing pod_name: busy GPUs held by pods carry pod labels (not 'busy GPUs
    without a pod label'), and a GPU that really lacks them is still named."""
    from generator.checks.exporter import analyse

    project = load_project(project_dir(OLD_LABELS))
    checks = {c.name: c for c in analyse(project, _old_namespace_payload(), "node")}
    assert checks["pod labels"].status == "ok", checks["pod labels"].detail
    unheld = _old_namespace_payload().replace('pod_name="trainer-0"', 'job_name="trainer-0"')
    checks = {c.name: c for c in analyse(project, unheld, "node")}
    assert checks["pod labels"].status == "fail" and "without a pod label" in checks["pod labels"].detail


COUNTER = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"
GPU_LABELS = 'gpu="0",UUID="GPU-0",Hostname="h",pod="p",namespace="ml",modelName="A100",device="nvidia0"'


def _replays(config, job, step: float, delay: float, phase: float, offset: float = 17.0) -> float:
    """The per-GPU increase of PCIe replays the OTel pipeline publishes over 12 steps of `step` seconds (3 replays
    a step), awsemf handling each point `delay` s after its scrape and sweeping its cache at `phase` + k * 300 s."""
    agent = Agent(config, job)
    agent.sweep_phase, agent.processing_delay = phase, delay
    scrapes = [Scrape(offset + k * step, f"# TYPE {COUNTER} counter\n{COUNTER}{{{GPU_LABELS}}} {3 * k}\n",
                      target_labels(job, "ip-10-0-1-1")) for k in range(13)]
    return sum(p.value for p in agent.run(scrapes) if p.metric == COUNTER and ("gpu", "0") in p.dimensions)


def test_the_longest_scrape_and_flush_the_settings_accept_keep_every_counter_increase_on_otel(project_dir):
    """awsemf forgets a counter's reading at the first sweep (every 15 minutes, the fork's cleanInterval) that finds
    it 15 minutes old, and handles a point up to the scrape and batch timeouts after its scrape. At 5 minutes
    between scrapes (the longest interval that divides the default period) and the longest flush, every increase is
    published whenever the sweep falls; at 900 s between readings a node whose scrapes fall just before the sweep
    publishes none."""
    files = encode(build(load_project(project_dir("scrape:\n  interval: 5m\nagent:\n  force_flush_interval: 30\n"))))
    config, job = agent_config(files[AGENT])
    worst = 10 + 30  # the scrape timeout and the batch timeout written for these settings
    for phase in [17.0 + k for k in range(0, 900, 13)] + [17.0 + 300 + worst - 1, 17.0 + worst - 1]:
        assert _replays(config, job, 300.0, worst, phase) == 36, phase
    assert _replays(config, job, 900.0, 2.0, 17.0 + 1.0) == 0  # the bound matters: readings 900 s apart


@pytest.mark.parametrize("pipeline, interval, period, seconds", [("classic", "5m", 300, 300), ("otel", "15m", 900, 900)])
def test_a_scrape_interval_the_agents_counter_cache_cannot_span_is_refused(cli, tmp_path, pipeline, interval, period,
                                                                           seconds):
    """A scrape interval the pipeline's cache cannot span (classic: 5 minutes; otel: 15) is refused with one message
    naming the setting and the cache's memory, exit 2, nothing built."""
    (tmp_path / "gpudash.yaml").write_text(f"scrape:\n  interval: {interval}\ncloudwatch:\n  period: {period}\n"
                                           f"agent:\n  pipeline: {pipeline}\n")
    code, out, err = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "b"))
    assert code == 2 and not (tmp_path / "b").exists()
    ttl = {"classic": 300, "otel": 900}[pipeline]
    assert f"gpudash.yaml:2: scrape.interval {seconds} s" in err and f"forgets a counter's previous reading {ttl} s" in err
    assert "Traceback" not in err


def test_a_flush_interval_that_holds_readings_past_the_minute_is_refused(cli, tmp_path):
    """agent.force_flush_interval above 30 s: the now values and the data-missing alarm would read a minute still
    waiting in the agent. 12m scrapes (period 3600) with a 30 s batch timeout are within awsemf's 15 minutes: accepted
    on otel (classic's 5 minutes refuse the interval itself)."""
    (tmp_path / "gpudash.yaml").write_text("agent:\n  force_flush_interval: 60\n")
    code, _, err = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "b"))
    assert code == 2 and "gpudash.yaml:2: " in err and "agent.force_flush_interval 60 s" in err, err
    for pipeline in ("otel", "classic"):
        (tmp_path / "gpudash.yaml").write_text("scrape:\n  interval: 12m\ncloudwatch:\n  period: 3600\nagent:\n"
                                               f"  force_flush_interval: 30\n  pipeline: {pipeline}\n")
        code, _, err = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "b"))
        assert ("forgets a counter's previous reading 300 s" in err) == (pipeline == "classic"), (pipeline, err)


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_lint_refuses_an_agent_config_whose_counter_readings_outlive_the_cache(project_dir, pipeline):
    project = load_project(project_dir(f"agent:\n  pipeline: {pipeline}\n"))
    artifacts = build(project)
    ag006 = [r for r in RULES if r.id == "AG006"]
    assert run(ag006, lint_input(project, artifacts)) == []
    agent = artifacts.agents[0]
    scrape, otel = copy.deepcopy(agent.scrape), copy.deepcopy(agent.otel)
    for job in scrape["scrape_configs"] + (otel["receivers"]["prometheus/gpudash"]["config"]["scrape_configs"]
                                           if otel else []):
        job["scrape_interval"] = "5m" if pipeline == "classic" else "15m"
    edited = replace(artifacts, agents=(replace(agent, scrape=scrape, otel=otel), *artifacts.agents[1:]))
    findings = run(ag006, lint_input(project, edited))
    seconds = 300 if pipeline == "classic" else 900
    assert findings and all(f.severity == "error" and f"scrape.interval {seconds} s" in f.message for f in findings)


def test_the_cache_rules_title_names_each_pipelines_cache():
    """`gpudash lint --rules` printed AG006 as forgetting a reading after "(5 minutes)", classic's cache alone, where
    the OTel pipeline's (the fork's awsemf cache, tests/support/cloudwatch_otel.CACHE_TTL) keeps it 15 (seen on main
    8fbc7f2e); the check itself used both."""
    from tests.support.cloudwatch_otel import CACHE_TTL as OTEL_CACHE

    (title,) = [r.summary for r in RULES if r.id == "AG006"]
    assert OTEL_CACHE == 900 and "(5 minutes on agent.pipeline: classic, 15 on otel)" in title, title


@pytest.mark.parametrize("pipeline", ["otel", "classic"])
def test_a_dollar_in_the_namespace_reaches_cloudwatch_as_written(project_dir, pipeline):
    """cloudwatch.namespace GPU$Prod/DCGM: the agent reads its collector configuration in two passes that expand
    `$` (the classic path's translator copies the JSON's namespace and log group into it too); every string the
    settings give is escaped, so the agent publishes into the namespace the dashboards and alarms query, and lint
    reads the namespace as the agent does."""
    from tests.support.cloudwatch_otel import _unescape

    namespace = "GPU$Prod/$1${X}$$/DCGM"
    project = load_project(project_dir(f'cloudwatch:\n  namespace: "{namespace}"\nagent:\n  pipeline: {pipeline}\n'))
    artifacts = build(project)
    files = encode(artifacts)
    config, job = agent_config(files[AGENT])
    sample = (ROOT / "generator/defaults/sample-exporter.prom").read_text()
    payload = "\n".join(line for line in sample.splitlines() if line.startswith("#") or 'Hostname="gpu-node-a"' in line)
    published = {p.namespace for p in Agent(config, job).scrape(Scrape(0, payload, target_labels(job, "gpu-node-a")))}
    if pipeline == "classic":  # the JSON model publishes the JSON's namespace: read it as the collector does
        published = {_unescape(n) for n in published}
        prometheus = config["logs"]["metrics_collected"]["prometheus"]
        assert _unescape(prometheus["log_group_name"]) == "/aws/containerinsights/gpu-cluster/prometheus"
    assert published == {namespace}
    queried = {request.request.get("Namespace") for request in artifacts.alarms} - {None}
    assert queried <= {namespace}
    assert [f for f in run([r for r in RULES if r.id == "AG001"], lint_input(project, artifacts))
            if "publishes into" in f.message] == []


def test_the_kube_state_metrics_job_name_is_reserved(cli, project_dir, tmp_path):
    """scrape.job_name gpudash-kube-state-metrics would give the agent's prometheus.yaml two jobs of one name, which
    Prometheus refuses (the agent scrapes nothing): settings refuse it, exit 2, naming the setting and its line; the
    agent's configuration with another name loads."""
    (tmp_path / "gpudash.yaml").write_text("alarms:\n  expected_gpus: kube-state-metrics\n"
                                           "scrape:\n  job_name: gpudash-kube-state-metrics\n")
    code, _, err = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "b"))
    assert code == 2 and not (tmp_path / "b").exists()
    assert "gpudash.yaml:4: scrape.job_name 'gpudash-kube-state-metrics'" in err and "Traceback" not in err
    project = load_project(project_dir("alarms:\n  expected_gpus: kube-state-metrics\nscrape:\n  job_name: gpu-metrics\n"))
    scrape = build(project).agents[0].scrape
    assert [job["job_name"] for job in scrape["scrape_configs"]] == ["gpu-metrics", "gpudash-kube-state-metrics"]
    assert promtool_check_config(tmp_path, scrape)[0] == 0
    scrape["scrape_configs"][0]["job_name"] = "gpudash-kube-state-metrics"  # what the settings allowed before
    code, text = promtool_check_config(tmp_path, scrape)
    assert code != 0 and "multiple scrape configs with job name" in text


def test_a_long_alarm_description_gives_way_in_its_notes_and_keeps_its_runbook_and_who_made_it(project_dir,
                                                                                               monkeypatch):
    """A 63-character exporter.namespace makes the data-missing alarms' descriptions longer than CloudWatch's 1,024
    characters: their notes give way (whole sentences left out, counted at the end), and each keeps whole its own
    sentence, its runbook and who made it (definition, rule); descriptions that fit are whole."""
    from generator.render import alarm_text

    namespace = "gpu-" + "o" * 59
    project = load_project(project_dir(f"exporter:\n  namespace: {namespace}\n"))
    descriptions = {a.request["AlarmName"]: a.request["AlarmDescription"] for a in build(project).alarms}
    cut = {name: text for name, text in descriptions.items() if alarm_text.NOTES_DOC in text}
    assert cut, "no description reached the limit"
    for name, text in descriptions.items():
        assert len(text) <= 1024 and alarm_text.ELIDED not in text
        rule = re.search(r" Managed by gpudash \(([^()]*), rule ([a-z0-9-]+)\)\.", text)
        assert rule and name.find(rule.group(2)) >= 0, text  # who made it, whole
        if "data-missing" in name:  # the runbook, whole
            assert " Runbook: Run `gpudash verify`. Then, by the alert's reason: " in text and \
                "the cwagent-prometheus Deployment and its logs. Managed by gpudash (" in text, text
    monkeypatch.setattr(alarm_text, "DESCRIPTION_LIMIT", 100_000)
    whole = {a.request["AlarmName"]: a.request["AlarmDescription"] for a in build(project).alarms}
    monkeypatch.undo()
    for name, text in cut.items():
        kept, _, mark = text.rpartition(" [")
        assert re.fullmatch(r"(\d+ notes? shortened)?(, )?(\d+ notes? left out)?: " + re.escape(alarm_text.NOTES_DOC)
                            + r"\]", mark), mark
        # what is kept is the whole description's: its own sentence, runbook and who made it, then the notes kept
        # (the last in short form: the DaemonSet read and what is not seen, each with what it does not fire for). An
        # alarm whose meaning gpudash writes holds all its sentences before its runbook where they fit (render/alarms
        # _about): cut, its first stays there and the others become notes; so the whole's part before the runbook
        # starts with the kept one, and the runbook and who made it are the whole's
        head, made, notes = kept.partition(" Managed by gpudash (")
        own, runbook, steps = head.partition(alarm_text.RUNBOOK)
        whole_own, _, whole_rest = whole[name].partition(alarm_text.RUNBOOK)
        assert runbook and whole_own.startswith(own) and whole_rest.startswith(steps + made), name
        assert notes.endswith("."), name
        if "shortened" in mark and "data-missing" in name:
            assert "does not fire for" in notes.lower(), notes
        assert len(text) > 700  # the room is used
    # the same rule with a short namespace: whole, no mark (the idle alarms and framebuffer-full give way whatever the
    # namespace: their evaluation-range and pods-named-in-turn notes in short form)
    short = {a.request["AlarmName"]: a.request["AlarmDescription"] for a in build(load_project(project_dir(""))).alarms}
    assert not any(alarm_text.NOTES_DOC in text for name, text in short.items() if "data-missing" in name)
    assert [name for name, text in short.items() if alarm_text.NOTES_DOC in text] == [
        name for name in short if "-gpu-idle-" in name or "-framebuffer-full-" in name]


def test_the_documented_dashboard_limit_example_is_what_generate_says(cli, tmp_path):
    """docs/settings.md quotes generate's refusal of top_pods: 500 and top_gpus' largest value; they are the product's
    words."""
    settings = documentation.text("settings.md")
    shown = re.search(r"`cloudwatch\.top_pods 500: \.\.\. would show up to ([\d,]+) metrics` / "
                      r"`fix: set cloudwatch\.top_pods to (\d+) or less`.*?`top_gpus` at most (\d+)", settings)
    assert shown, "docs/settings.md no longer quotes the example"
    said = []
    for key in ("top_pods", "top_gpus"):
        (tmp_path / "gpudash.yaml").write_text(f"cloudwatch:\n  {key}: 500\n")
        code, _, err = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "b"))
        assert code == 2
        said.append(err)
    metrics = re.search(r"would show up to ([\d,]+) metrics", said[0]).group(1)
    largest_pods = re.search(r"set cloudwatch\.top_pods to (\d+) or less", said[0]).group(1)
    largest_gpus = re.search(r"set cloudwatch\.top_gpus to (\d+) or less", said[1]).group(1)
    assert shown.groups() == (metrics, largest_pods, largest_gpus)


def test_the_longest_scrape_interval_the_settings_accept_keeps_every_counter_increase_on_classic(project_dir):
    """The JSON path's delta cache drops, on a counter's reading a minute past its last clean-up, every reading
    stored 5 minutes ago or more by the wall clock. At the longest interval dividing the period that settings accept
    (150 s), each scrape handled up to its 10 s timeout late, every increase is published; readings 300 s apart (what
    scrape.interval 5m gave) lose the other counters' increases whenever a scrape is handled later than the last."""
    import random

    # metric_selection: all publishes the three counters per GPU, the set read here (used: energy per pod only)
    files = encode(build(load_project(project_dir("scrape:\n  interval: 150s\nagent:\n  pipeline: classic\n"
                                                  "  metric_selection: all\n"))))
    config, job = agent_config(files[AGENT])
    rates = {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER": 3, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": 1,
             "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 90_000}
    labels = 'gpu="0",UUID="GPU-0",Hostname="h",modelName="A100",device="nvidia0"'

    def published(step: float, late: tuple[float, float]) -> dict[str, float]:
        agent, draw = Agent(config, job), random.Random(1)
        points = []
        for k in range(13):
            agent.processing_delay = draw.uniform(*late)
            payload = "".join(f"# TYPE {c} counter\n{c}{{{labels}}} {rate * k}\n" for c, rate in rates.items())
            points += agent.scrape(Scrape(1_000.0 + k * step, payload, target_labels(job, "ip-10-0-1-1")))
        return {c: sum(p.value for p in points if p.metric == c and set(p.dims()) == {"ClusterName", "node", "gpu"})
                for c in rates}

    assert published(150.0, (0.0, 10.0)) == {c: 12 * rate for c, rate in rates.items()}
    lost = published(300.0, (0.05, 0.4))
    assert any(lost[c] < 12 * rate for c, rate in rates.items()), lost


def test_verify_counts_the_gpus_of_an_exporter_writing_the_old_names(tmp_path):
    """verify's "N GPUs reporting", evaluated by Prometheus' own engine (promtool): GPUs written with `uuid`
    (--use-old-namespace) count one each, beside GPUs written with `UUID` (an exporter mid-upgrade)."""
    import json
    import subprocess

    from generator.checks.prometheus import gpus_reporting
    from tests.support.prometheus_server import binary

    series = [f'DCGM_FI_DEV_GPU_TEMP{{gpu="{g}",{name}="GPU-{g}",Hostname="n{g // 4}"}}'
              for g, name in enumerate(["uuid"] * 5 + ["UUID"] * 3)]
    test = {"rule_files": [], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": [{"series": s, "values": "50x5"} for s in series],
        "promql_expr_test": [{"expr": gpus_reporting(40), "eval_time": "2m", "exp_samples": [{"labels": "{}", "value": 8}]}]}]}
    (tmp_path / "t.yaml").write_text(json.dumps(test))
    result = subprocess.run([binary("promtool"), "test", "rules", "t.yaml"], capture_output=True, text=True,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
