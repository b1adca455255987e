"""Several exporter DaemonSets in one cluster (exporter.more_daemonsets): a Helm release per node pool, and one in
another namespace. The Prometheus rule judges every exporter DaemonSet kube-state-metrics labels, each apart
(data_missing.prometheus_expression); the CloudWatch agent keeps the counts of each DaemonSet the settings name with
[ClusterName, namespace, daemonset], and each has its own data-missing alarm of the same metric math.

Each story is an hour of three pools, a per 30 s step, healthy until minute 20, the change until minute 40, healthy
again after. The CloudWatch alarms are judged over what the agent model publishes of it (cloudwatch_eval, at every
length of the evaluation range), the rule by promtool; each minute both forms must say what the story's truth says
(quiet until minute 20 and from minute 46, the missing pool's alarm from minute 30 until 40), and name the same
DaemonSet.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.integration.test_data_missing import (CHANGE, CLEARED_BY, FIRED_BY, RECOVER, _alone, _in_alarm, _labels,
                                                 _moved, _one_gpu_page, _per_target, _promtool_values, _target,
                                                 _up_values)
from tests.support import kube_state
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config, scrape_jobs
from tests.support.dcgm_fleet import STEP, discovered
from tests.support.promtool_batches import TOO_MANY_SAMPLES
from tests.support.promtool_rules import SAMPLES, evaluated_at, judged_rules, rule_groups

STEPS = 120  # an hour of 30 s steps
CLUSTER = "gpu-cluster"
AGENT_FILE = f"k8s/cwagent-prometheus-config-{CLUSTER}.yaml"
# (namespace, DaemonSet) -> its GPU nodes: two releases per node pool in `monitoring`, a third in another namespace
POOLS = {("monitoring", "gpu-metrics-pool-a"): tuple(f"ip-10-0-1-{i}" for i in range(1, 13)),
         ("monitoring", "gpu-metrics-pool-b"): ("ip-10-0-2-1",),
         ("gpu-pools", "pool-c-dcgm-exporter"): ("ip-10-0-3-1",)}
NODE_INDEX = {node: i for i, node in enumerate(n for nodes in POOLS.values() for n in nodes)}
SETTINGS = (f"clusters:\n  - {{name: {CLUSTER}, region: us-east-1}}\n"
            "exporter:\n  deployment: helm\n  namespace: monitoring\n  daemonset: gpu-metrics-pool-a\n"
            "  more_daemonsets: [gpu-metrics-pool-b, gpu-pools/pool-c-dcgm-exporter]\n")
ALARM = f"gpudash-{CLUSTER}-gpu-data-missing-critical"
B = ("monitoring", "gpu-metrics-pool-b")


def _alarm_of(daemonset: tuple[str, str]) -> str:
    return f"{ALARM}-{daemonset[0]}-{daemonset[1]}"


@pytest.fixture(scope="module")
def pools(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pools")
    (folder / "gpudash.yaml").write_text(SETTINGS)
    project = load_project(folder / "gpudash.yaml")
    return project, encode(build(project))


def _story(gone: tuple[str, ...] = (), zero: bool = False, agent: bool = True, rollout: str | None = None,
           deleted: str | None = None, pools: dict = POOLS) -> dict:
    """Per pool, per step: its nodes' exporters ("1" answering, "." no exporter pod) and its desired, available and
    updated counts; `gone`: the pools whose exporter pods are gone from minute 20 to 40; `zero`: every GPU node group
    at zero then (no node, no exporter, desired 0); `agent`: the CloudWatch agent runs then; `rollout`: the pool whose
    exporters a RollingUpdate (maxUnavailable 1) replaces from minute 20, one node a minute (its pod gone a minute,
    the next one's deleted as soon as the new one is available: one unavailable all along, the updated count rising);
    `deleted`: the pool removed, its DaemonSet with it (no counts: None)."""
    during = range(CHANGE // STEP, RECOVER // STEP)
    story = {}
    for (namespace, name), nodes in pools.items():
        off = zero or name in gone or name == deleted
        answering = {node: "".join("." if off and k in during else "1" for k in range(STEPS)) for node in nodes}
        desired = tuple(0 if zero and k in during else len(nodes) for k in range(STEPS))
        available = [0 if off and k in during else len(nodes) for k in range(STEPS)]
        updated = list(desired)
        if name == rollout:
            start = CHANGE // STEP
            for i, node in enumerate(nodes):  # node i replaced in steps start + 2i and start + 2i + 1
                steps = list(answering[node])
                steps[start + 2 * i:start + 2 * i + 2] = ".."
                answering[node] = "".join(steps)
            for k in range(start, start + 2 * len(nodes)):
                available[k] -= 1
                updated[k] = (k - start) // 2
        if name == deleted:
            desired, available, updated = ([None if k in during else v for k, v in enumerate(counts)]
                                           for counts in (desired, available, updated))
        story[(namespace, name)] = (answering, tuple(desired), tuple(available), tuple(updated))
    return {"pools": story, "agent": agent}


def _gone_then_deleted(pools: dict = POOLS) -> dict:
    """Pool b's exporter pod gone at minute 20 (its desired 1, available 0), then, at minute 25, its Helm release
    uninstalled to reinstall it (the DaemonSet and its counts gone) until minute 40, when it is back and healthy."""
    story = _story(gone=("gpu-metrics-pool-b",), pools=pools)
    answering, desired, available, updated = story["pools"][B]
    deleted = range((CHANGE + 300) // STEP, RECOVER // STEP)
    desired, available, updated = (tuple(None if k in deleted else v for k, v in enumerate(counts))
                                   for counts in (desired, available, updated))
    story["pools"][B] = (answering, desired, available, updated)
    return story


KSM_MOVED = 62  # the step (minute 31) at which kube-state-metrics' pod is replaced in the story that says so


def _ksm_replaced(pools: dict = POOLS) -> dict:
    """Pool b's exporter pod gone from minute 20 to 40; kube-state-metrics' pod replaced at minute 31 (not scraped
    for one step, then at another address: its series carry another `instance`)."""
    return {**_story(gone=("gpu-metrics-pool-b",), pools=pools), "ksm_moved": KSM_MOVED}


STORIES = {
    "healthy": _story(),
    "pool b's exporter pod gone from its node": _story(gone=("gpu-metrics-pool-b",)),
    "the exporter pod of the pool in another namespace gone": _story(gone=("pool-c-dcgm-exporter",)),
    "every GPU node group scaled to zero": _story(zero=True),
    "CloudWatch agent stopped": _story(agent=False),
    # each DaemonSet judged with its own rollout: pool a's (one pod unavailable all along, its updated pods moving)
    # is its own, pool b's pod gone meanwhile is not
    "pool b's exporter pod gone while pool a rolls out": _story(gone=("gpu-metrics-pool-b",),
                                                                rollout="gpu-metrics-pool-a"),
    "pool a rolls out": _story(rollout="gpu-metrics-pool-a"),
    "pool b removed with its DaemonSet": _story(deleted="gpu-metrics-pool-b"),
    # a breach that changes cause between periods: its alarm breaches in both whatever made each breach
    "pool b's exporter pod gone, then its DaemonSet deleted": _gone_then_deleted(),
    "pool b's exporter pod gone while kube-state-metrics is replaced": _ksm_replaced(),
    # the same for CloudWatch (its agent's own job); for the rule, kube-state-metrics' namespace in `namespace`
    "pool b's exporter pod gone, then its DaemonSet deleted, kube-state-metrics without honorLabels":
        {**_gone_then_deleted(), "honor_labels": False},
}
# The truth: the exporter DaemonSets whose GPU data is missing from minute 20 to 40 (the agent stopped: every one,
# on CloudWatch; Prometheus does not watch the agent)
TRUTH = {"healthy": (), "pool b's exporter pod gone from its node": (("monitoring", "gpu-metrics-pool-b"),),
         "the exporter pod of the pool in another namespace gone": (("gpu-pools", "pool-c-dcgm-exporter"),),
         "every GPU node group scaled to zero": (), "CloudWatch agent stopped": tuple(POOLS),
         "pool b's exporter pod gone while pool a rolls out": (("monitoring", "gpu-metrics-pool-b"),),
         "pool a rolls out": (),
         # a DaemonSet the settings name gone (deleted, or its node pool removed): its counts are missing, its alarm
         # fires until it leaves exporter.more_daemonsets, and so does the rule (it read only that no exporter
         # DaemonSet at all was labelled)
         "pool b removed with its DaemonSet": (("monitoring", "gpu-metrics-pool-b"),),
         "pool b's exporter pod gone, then its DaemonSet deleted": (B,),
         "pool b's exporter pod gone while kube-state-metrics is replaced": (B,),
         "pool b's exporter pod gone, then its DaemonSet deleted, kube-state-metrics without honorLabels": (B,)}


def _expected(missing: tuple, minute: int) -> set | None:
    """What must be in ALARM at `minute` (None: a minute of firing or clearing, not judged)."""
    if minute <= CHANGE // 60 or minute >= CLEARED_BY:
        return set()
    if FIRED_BY <= minute < RECOVER // 60:
        return set(missing)
    return None


def _pod(name: str, node: str) -> str:
    return f"{name}-{NODE_INDEX[node]}"


def _pod_meta(namespace: str, name: str, node: str) -> dict[str, str]:
    """The exporter pod of a pool's release on `node`, as Kubernetes SD meets it."""
    return {"__address__": f"10.0.9.{NODE_INDEX[node]}:9400", "__meta_kubernetes_namespace": namespace,
            "__meta_kubernetes_pod_name": _pod(name, node), "__meta_kubernetes_pod_node_name": node,
            "__meta_kubernetes_pod_container_port_number": "9400",
            "__meta_kubernetes_pod_label_app_kubernetes_io_name": "dcgm-exporter"}


def _published(files, story: dict, agent_file: str = AGENT_FILE) -> list:
    """What the agent publishes of the story: each pool's exporters and kube-state-metrics' counts of every exporter
    DaemonSet (beside aws-node's, which the agent must not keep)."""
    config, job = agent_config(files[agent_file])
    ksm_job = scrape_jobs(files[agent_file])["gpudash-kube-state-metrics"]
    running = [k for k in range(STEPS) if story["agent"] or not CHANGE // STEP <= k < RECOVER // STEP]
    scrapes = [Scrape(k * STEP, _one_gpu_page(node), discovered(job, _pod_meta(namespace, name, node)))
               for (namespace, name), (answering, *_) in story["pools"].items()
               for node, steps in answering.items() for k in running if steps[k] == "1"]
    counts = [({"namespace": ns, "daemonset": ds, **kube_state.HELM_LABELS}, desired, available, updated)
              for (ns, ds), (_, desired, available, updated) in story["pools"].items()]
    (first, d, a, u), *more = counts
    assert all(o == od for _, od, _, o in more)  # kube_state serves the others' updated count as their desired
    scrapes += [kube_state.scrape(ksm_job, k * STEP, None if d[k] is None else first, d[k], a[k], u[k],
                                  more=tuple((labels, od[k], oa[k]) for labels, od, oa, _ in more if od[k] is not None))
                for k in running if k != story.get("ksm_moved")]
    return Agent(config, job, others=[ksm_job]).run(scrapes)


@pytest.mark.parametrize("name", [name for name, story in STORIES.items() if "honor_labels" not in story])
def test_each_exporter_daemonset_has_its_alarm(pools, name):
    """Pool b's exporter pod gone from its only node (or the pool's in another namespace): its DaemonSet's alarm is in
    ALARM from minute 30 to 40, the others' stay OK (before exporter.more_daemonsets the one cluster alarm read pool a
    alone and stayed OK); every node group at zero: nothing; the agent stopped: every DaemonSet's alarm. No other
    alarm of the rule fires: the per-node alarm does not see a target that is gone."""
    project, files = pools
    requests = [i["Request"] for i in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                if i["Request"]["AlarmName"].startswith(ALARM.removesuffix("-critical"))]
    assert {_alarm_of(d) for d in POOLS} <= {r["AlarmName"] for r in requests}
    points = _published(files, STORIES[name])
    wrong = {}
    for minute in range(1, STEPS // 2 + 1):
        expected = _expected(TRUTH[name], minute)
        fired = set(_in_alarm(requests, points, minute * 60))
        if expected is not None and fired != {_alarm_of(d) for d in expected}:
            wrong[minute] = sorted(fired)
    assert wrong == {}


def _values(counts: tuple) -> str:
    """promtool values of a count per step (None: no sample, a staleness marker where it stops)."""
    return " ".join("_" if v is None and (not k or counts[k - 1] is None) else "stale" if v is None else str(v)
                    for k, v in enumerate(counts))


def _rule_series(story: dict) -> list[dict]:
    """The story as the Prometheus that scrapes the exporters (gpudash's job) and kube-state-metrics holds it."""
    series = []
    ksm = 'job="kube-state-metrics",instance="10.0.2.9:8080"'
    for (namespace, name), (answering, desired, available, updated) in story["pools"].items():
        selector = f'{ksm},namespace="{namespace}",daemonset="{name}"'
        series += [{"series": f"{kube_state.DESIRED}{{{selector}}}", "values": _values(desired)},
                   {"series": f"{kube_state.AVAILABLE}{{{selector}}}", "values": _values(available)},
                   {"series": f"{kube_state.UPDATED}{{{selector}}}", "values": _values(updated)},
                   {"series": f"{kube_state.LABELS}{{{selector},{_labels(kube_state.HELM_LABELS)}}}",
                    "values": _values(tuple(None if v is None else 1 for v in desired))}]
        for node, steps in answering.items():
            # a pod replaced is a new target (another pod name) from its first answer after the gap
            cut = steps.find(".")
            parts = [(_pod(name, node), steps[:cut] + "." * (len(steps) - cut) if cut >= 0 else steps)]
            if cut >= 0 and "1" in steps[cut:]:
                start = steps.index("1", cut)
                parts.append((_pod(name, node) + "-new", "." * start + steps[start:]))
            for pod, part in parts:
                target = _labels(_target(node, pod))
                series += [{"series": f"up{{{target}}}", "values": _up_values(part)},
                           {"series": f"{SAMPLES}{{{target}}}", "values": _promtool_values(part, "1")},
                           {"series": f'DCGM_FI_DEV_GPU_TEMP{{{target},gpu="0"}}',
                            "values": _promtool_values(part, "60")}]
    series = _ksm_moved(series, story["ksm_moved"]) if "ksm_moved" in story else series
    return series if story.get("honor_labels", True) else _without_honor_labels(series)


def _ksm_moved(series: list[dict], at: int) -> list[dict]:
    """kube-state-metrics' series as a pod replaced at step `at` leaves them: the old pod's stop there (a staleness
    marker), the new one's (another `instance`) start a step later."""
    out = []
    for entry in series:
        if not entry["series"].startswith("kube_"):
            out.append(entry)
            continue
        values = entry["values"].split(" ")
        out += [{**entry, "values": " ".join(values[:at] + ["stale"] + ["_"] * (len(values) - at - 1))},
                {"series": entry["series"].replace('instance="10.0.2.9:8080"', 'instance="10.0.2.77:8080"'),
                 "values": " ".join(["_"] * (at + 1) + values[at + 1:])}]
    return out


def _rule_minutes(files, folder, stories: dict[str, list[dict]],
                  minutes: range = range(1, STEPS // 2 + 1)) -> tuple[dict[str, dict[int, set]], str, int]:
    """{story: {minute: the (namespace, daemonset) the rule fires for}} by promtool over each story's series at each of
    `minutes`, with promtool's output and exit code (its runs' joined; 1 where any failed). The rule's two alerts are
    judged apart, as test_data_missing._rules_apart judges them: the cluster's over each story as it is, the per-target
    one over every story's exporter targets in one group, each story's under its own node, address and pod, halved
    where over promtool's sample limit (it reads the targets' sample counts alone and judges each target by its own
    series). Its subqueries cost promtool a third of a story's evaluations: the mixed fleet's ten stories, 3.3 CPU-s in
    a group each, 1.0 in two groups of five."""
    from tests.support.prometheus_server import binary

    (folder / "rules.yaml").write_text(files["prometheus/rules.yaml"].decode())
    rule = next(r for g in rule_groups(files["prometheus/rules.yaml"].decode()) for r in g["rules"]
                if r.get("alert") == "GpudashGpuDataMissing")
    groups = rule_groups((folder / judged_rules(folder, "pools_test.yaml", {rule["alert"]})).read_text())
    (target,) = [r for g in groups for r in g["rules"] if r.get("alert") == rule["alert"] and _per_target(r)]
    read = set(re.findall(r"([a-zA-Z_:][a-zA-Z0-9_:]*)[{\[]", target["expr"]))  # the series it reads
    names = list(stories)
    targets = [[{**s, "series": _moved(s["series"], i)} for s in stories[name] if s["series"].split("{")[0] in read]
               for i, name in enumerate(names)]
    assert all(re.search(r'exporter_pod="[^"]', s["series"]) for part in targets for s in part)  # targets' own, all
    cases = [{"eval_time": f"{m}m", "alertname": rule["alert"], "exp_alerts": []} for m in minutes]
    fired: dict[str, dict[int, set]] = {name: {} for name in stories}
    outputs, codes = [], []

    def judge(part: str, keep, tests: list[dict], story_of) -> str:
        """promtool over `tests` with the data-missing alert `keep` picks; each alert it reports (every case expects
        none, so each failed case is one: its test's name, the time, the alerts) recorded for `story_of(name,
        labels)`. Its output."""
        (folder / part).mkdir()
        (folder / part / "rules.yaml").write_text(json.dumps({"groups": _alone(groups, keep)}))
        (folder / part / "test.yaml").write_text(json.dumps({
            "rule_files": ["rules.yaml"], "evaluation_interval": evaluated_at(tests, "30s"), "tests": tests}))
        out = subprocess.run([binary("promtool"), "test", "rules", "test.yaml"], capture_output=True, text=True,
                             cwd=folder / part)
        output = out.stdout + out.stderr
        if TOO_MANY_SAMPLES in output:
            return output
        found = re.findall(r"name: (.*?),\s*alertname: \S+, time: (\S+?),\s*exp:\[\],\s*got:\[(.*?)\n\s*\]", output,
                           re.S)
        # any other failure (an evaluation's error, a file promtool refused) is not an alert: it fails the caller
        assert (out.returncode == 0 or found) and not re.search(r"time: \S+, err: ", output), output[-3000:]
        outputs.append(output)
        codes.append(out.returncode)
        for name, time, got in found:
            hours, mins = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:0s)?", time).groups()
            for labels in re.findall(r"Labels:\{(.*?)\}", got):
                daemonset = (re.search(r'(?<![a-z_])namespace="([^"]*)"', labels)[1],
                             re.search(r'daemonset="([^"]*)"', labels)[1]) if "daemonset=" in labels else ("", "")
                fired[story_of(name, labels)].setdefault(int(hours or 0) * 60 + int(mins or 0), set()).add(daemonset)
        return output

    output = judge("cluster", lambda r: not _per_target(r),
                   [{"name": name, "interval": "30s", "input_series": series, "alert_rule_test": cases}
                    for name, series in stories.items()], lambda name, labels: name)
    assert TOO_MANY_SAMPLES not in output, output[-3000:]

    def judge_targets(part: list[int]) -> None:
        output = judge(f"targets-{part[0]}-{len(part)}", _per_target, [{
            "name": "targets", "interval": "30s", "input_series": [s for i in part for s in targets[i]],
            "alert_rule_test": cases}], lambda name, labels: names[int(re.search(r'exporter_pod="[^"]*-(\d+)"',
                                                                                  labels)[1])])
        if TOO_MANY_SAMPLES in output:
            assert len(part) > 1, output[-3000:]
            judge_targets(part[:len(part) // 2])
            judge_targets(part[len(part) // 2:])
    judge_targets([i for i, part in enumerate(targets) if part])
    return fired, "\n".join(outputs), max(codes)


def test_the_rule_names_the_same_daemonset_minute_by_minute(pools, tmp_path):
    """The rule over the same stories (but the agent's, which Prometheus does not see), by promtool: at each minute it
    fires for the DaemonSets the CloudWatch alarms name (test_each_exporter_daemonset_has_its_alarm), and no other."""
    _, files = pools
    judged = [name for name in STORIES if name != "CloudWatch agent stopped"]
    fired, output, code = _rule_minutes(files, tmp_path, {name: _rule_series(STORIES[name]) for name in judged})
    assert (code != 0) == any(fired.values()), output
    wrong = {}
    for name in judged:
        for minute in range(1, STEPS // 2 + 1):
            expected = _expected(TRUTH[name], minute)
            if expected is not None and fired[name].get(minute, set()) != expected:
                wrong[(name, minute)] = fired[name].get(minute)
    assert wrong == {}, output[-3000:]


OWN_LISTS = ("clusters:\n  - {name: a, region: us-east-1}\n  - name: b\n    region: us-east-1\n"
             "    exporter: {more_daemonsets: [pool-b, gpu-pools/pool-c]}\n"
             "exporter:\n  deployment: helm\n  namespace: monitoring\n  daemonset: pool-a\n")


def test_a_cluster_listing_its_own_daemonsets_gets_an_agent_that_keeps_and_scrapes_them(tmp_path):
    """Cluster b lists pool-b and gpu-pools/pool-c in clusters[].exporter.more_daemonsets; cluster a, listed first,
    names pool-a alone, the same first DaemonSet as b: b's agent keeps b's DaemonSets' counts and looks in gpu-pools
    (it got a's scrape config: pool-b's and pool-c's alarms read no desired count, pool c's GPUs never published)."""
    (tmp_path / "gpudash.yaml").write_text(OWN_LISTS)
    files = encode(build(load_project(tmp_path / "gpudash.yaml")))
    jobs = scrape_jobs(files["k8s/cwagent-prometheus-config-b.yaml"])
    kept = jobs["gpudash-kube-state-metrics"]["metric_relabel_configs"][0]["regex"]
    namespaces = jobs["dcgm-exporter"]["kubernetes_sd_configs"][0]["namespaces"]["names"]
    assert ("pool\\-b" in kept, "pool\\-c" in kept, "gpu-pools" in namespaces) == (True, True, True)
    a_jobs = scrape_jobs(files["k8s/cwagent-prometheus-config-a.yaml"])
    assert "pool\\-b" not in a_jobs["gpudash-kube-state-metrics"]["metric_relabel_configs"][0]["regex"]
    assert "gpu-pools" not in a_jobs["dcgm-exporter"]["kubernetes_sd_configs"][0]["namespaces"]["names"]


def test_a_healthy_cluster_listing_its_own_daemonsets_has_its_alarms_ok(tmp_path):
    """The same settings, cluster b healthy (pool-a, pool-b, gpu-pools/pool-c: every pod available), its agent run on
    its generated config: none of b's data-missing alarms is in ALARM at minute 30."""
    (tmp_path / "gpudash.yaml").write_text(OWN_LISTS)
    files = encode(build(load_project(tmp_path / "gpudash.yaml")))
    agent_file = "k8s/cwagent-prometheus-config-b.yaml"
    config, job = agent_config(files[agent_file])
    ksm_job = scrape_jobs(files[agent_file])["gpudash-kube-state-metrics"]
    pods = {("monitoring", "pool-a"): "ip-10-0-1-1", ("monitoring", "pool-b"): "ip-10-0-2-1",
            ("gpu-pools", "pool-c"): "ip-10-0-3-1"}
    scrapes = [Scrape(k * STEP, _one_gpu_page(node), discovered(job, _pod_meta(ns, name, node)))
               for (ns, name), node in pods.items() for k in range(STEPS)]
    more = tuple(({"namespace": ns, "daemonset": name, **kube_state.HELM_LABELS}, 1, 1) for ns, name in list(pods)[1:])
    scrapes += [kube_state.scrape(ksm_job, k * STEP, {"namespace": "monitoring", "daemonset": "pool-a",
                                                      **kube_state.HELM_LABELS}, 1, 1, 1, more=more)
                for k in range(STEPS)]
    points = Agent(config, job, others=[ksm_job]).run(scrapes)
    requests = [i["Request"] for i in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                if i["Request"]["AlarmName"].startswith("gpudash-b-gpu-data-missing")]
    names = [r["AlarmName"] for r in requests]
    assert [n for n in names if n.endswith(("-monitoring-pool-b", "-gpu-pools-pool-c"))], names
    assert sorted(_in_alarm(requests, points, 30 * 60)) == []


def _without_honor_labels(series: list[dict]) -> list[dict]:
    """kube-state-metrics scraped without honorLabels (a ServiceMonitor or pod job that sets the target's
    `namespace`): its series' own namespace is exported_namespace, `namespace` is kube-state-metrics' pod's."""
    def moved(entry: dict) -> dict:
        if not entry["series"].startswith("kube_"):
            return entry
        return {**entry, "series": re.sub(r'(?<![a-z_])namespace="([^"]*)"',
                                          r'namespace="kube-system",exported_namespace="\1"', entry["series"])}
    return [moved(e) for e in series]


def test_kube_state_metrics_without_honor_labels_does_not_fire_a_healthy_fleet(pools, tmp_path):
    """README (data-missing rule): kube-state-metrics scraped without honorLabels leaves the branch on exporter targets
    judged alone, as before; the rule's branches 1-3 join its series on their own (namespace, daemonset), whatever
    `namespace` holds, and each named DaemonSet's counts are looked for under `exported_namespace` too (read by
    namespace="..." alone, every named DaemonSet's counts were missing and the rule fired for good from minute 10)."""
    _, files = pools
    rule = _rule_minutes(files, tmp_path, {"healthy": _without_honor_labels(_rule_series(_story()))})[0]["healthy"]
    assert {m: s for m, s in rule.items() if m >= 10} == {}


def test_the_reason_for_the_first_daemonset_names_its_own_setting(pools):
    """The rule's branch for exporter.daemonset's DaemonSet (pool a) whose counts are gone names exporter.daemonset,
    not exporter.more_daemonsets, which does not list it."""
    _, files = pools
    text = " ".join(r["expr"] for g in rule_groups(files["prometheus/rules.yaml"].decode()) for r in g["rules"]
                    if r.get("alert") == "GpudashGpuDataMissing")
    # its counts gone, then the evidence that the Prometheus is of a cluster naming it (data_missing.Gone), its reason
    branch = re.search(r'absent_over_time\([^()]*daemonset="gpu-metrics-pool-a"\}\[5m\]\).*?, "reason", "([^"]*)"',
                       text)[1]
    assert "exporter.more_daemonsets" not in branch or "exporter.daemonset" in branch


def test_two_daemonsets_whose_namespace_and_name_join_alike_get_alarms_of_their_own(tmp_path):
    """monitoring-gpu/pool-b and monitoring/gpu-pool-b are two DaemonSets whose alarm names both ended
    -monitoring-gpu-pool-b: generate refused the settings ("is made twice", fix: rename an alarm, the cluster or
    alarms.name_prefix, none of which parts them). Each now has its alarm, over its own counts, its name ending in a
    digest of its namespace/name; a DaemonSet whose name no other meets keeps its name."""
    (tmp_path / "gpudash.yaml").write_text(
        f"clusters:\n  - {{name: {CLUSTER}, region: us-east-1}}\nexporter:\n  deployment: helm\n"
        "  namespace: monitoring\n  daemonset: dcgm-exporter\n  more_daemonsets: [monitoring-gpu/pool-b, monitoring/gpu-pool-b]\n")
    files = encode(build(load_project(tmp_path / "gpudash.yaml")))
    read = {}
    for item in json.loads(files["cloudwatch/alarms.json"])["alarms"]:
        request = item["Request"]
        if request["AlarmName"].startswith(ALARM + "-"):
            (dimensions,) = {tuple((d["Name"], d["Value"]) for d in m["MetricStat"]["Metric"]["Dimensions"])
                             for m in request["Metrics"] if "MetricStat" in m
                             and m["MetricStat"]["Metric"]["MetricName"] == kube_state.DESIRED}
            read[request["AlarmName"]] = "/".join(v for k, v in dimensions if k in ("namespace", "daemonset"))
    assert sorted(read.values()) == ["monitoring-gpu/pool-b", "monitoring/dcgm-exporter", "monitoring/gpu-pool-b"]
    tails = {daemonset: name.removeprefix(ALARM + "-") for name, daemonset in read.items()}
    assert tails["monitoring/dcgm-exporter"] == "monitoring-dcgm-exporter"
    assert {re.sub("-[0-9a-f]{8}$", "", tails[d]) for d in ("monitoring-gpu/pool-b", "monitoring/gpu-pool-b")} \
        == {"monitoring-gpu-pool-b"}


ONE_POOL = {B: POOLS[B]}  # a cluster naming one exporter DaemonSet (exporter.daemonset): the default form of the rule
ONE_STORIES = {"pool b's exporter pod gone, then its DaemonSet deleted": _gone_then_deleted(ONE_POOL),
               "pool b's exporter pod gone while kube-state-metrics is replaced": _ksm_replaced(ONE_POOL)}


def test_with_one_daemonset_named_the_rule_fires_when_the_alarm_fires(tmp_path):
    """A cluster whose only exporter DaemonSet (exporter.daemonset) breaks in two ways across periods: its pod gone at
    minute 20 and the DaemonSet deleted at 25 (the alarm reads its counts missing), or its pod gone while
    kube-state-metrics' pod is replaced at 31. The cluster's alarm is in ALARM 30-39 in both; the rule fired from 35
    in the first (`fewer exporter pods available` then `no exporter DaemonSet` never matched, and the deleted
    DaemonSet's labels were stale at its period's end) and paused at 31 and 36 in the second (another `instance`,
    and no labels at the period's end in kube-state-metrics' gap)."""
    (tmp_path / "gpudash.yaml").write_text(f"clusters:\n  - {{name: {CLUSTER}, region: us-east-1}}\nexporter:\n"
                                           f"  deployment: helm\n  namespace: {B[0]}\n  daemonset: {B[1]}\n")
    files = encode(build(load_project(tmp_path / "gpudash.yaml")))
    requests = [i["Request"] for i in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                if i["Request"]["AlarmName"] == ALARM]
    fired = _rule_minutes(files, tmp_path, {name: _rule_series(story) for name, story in ONE_STORIES.items()})[0]
    wrong = {}
    for name, story in ONE_STORIES.items():
        points = _published(files, story)
        for minute in range(1, STEPS // 2 + 1):
            expected = _expected((B,), minute)
            if expected is None:
                continue
            alarm = set(_in_alarm(requests, points, minute * 60))
            # the rule fires for the DaemonSet, or for the cluster (no exporter DaemonSet at all: no daemonset label)
            if alarm != ({ALARM} if expected else set()) or bool(fired[name].get(minute)) != bool(expected):
                wrong[(name, minute)] = (sorted(alarm), sorted(fired[name].get(minute, set())))
    assert wrong == {}


JUDGED_AT = range(16, 51)  # the minutes around the change (20-40) and the recovery, where the stories differ


def test_at_2_of_3_periods_the_rule_counts_a_daemonsets_breaching_periods_whatever_their_cause(pools, tmp_path):
    """The data-missing alarm defined at 2 of 3 periods: the rule counted each branch's periods apart (by reason and
    kube-state-metrics' `instance`), so pool b's pod gone then its DaemonSet deleted fired from minute 35 where the
    alarm fires from 30, and the kube-state-metrics replacement paused it at 41; with one DaemonSet named the same, and
    paused at 31, 36 and 41. Each DaemonSet's breaching periods are counted now: at every minute from 16 to 50 but 45
    the rule fires when the alarm does (the alarm stays in ALARM a minute longer, at 45; before minute 16 each story is
    a healthy fleet's, whose history starts without data: both forms fire at its first minutes, the alarm at 5 too)."""
    from dataclasses import replace

    one = tmp_path / "one"
    one.mkdir()
    (one / "gpudash.yaml").write_text(f"clusters:\n  - {{name: {CLUSTER}, region: us-east-1}}\nexporter:\n"
                                      f"  deployment: helm\n  namespace: {B[0]}\n  daemonset: {B[1]}\n")
    wrong = {}
    for index, (project, stories) in enumerate(((pools[0], {"gone then deleted": _gone_then_deleted(),
                                         "kube-state-metrics replaced": _ksm_replaced()}),
                             (load_project(one / "gpudash.yaml"), {"one named, gone then deleted": ONE_STORIES[
                                 "pool b's exporter pod gone, then its DaemonSet deleted"]}))):
        project = replace(project, alarms=tuple(replace(a, evaluation_periods=3, datapoints_to_alarm=2) if a.absent
                                                else a for a in project.alarms))
        files = encode(build(project))
        requests = [i["Request"] for i in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                    if i["Request"]["AlarmName"].startswith(ALARM)]
        folder = tmp_path / f"rules-{index}"
        folder.mkdir()
        fired = _rule_minutes(files, folder, {name: _rule_series(story) for name, story in stories.items()},
                              JUDGED_AT)[0]
        for name, story in stories.items():
            points = _published(files, story)
            alarm = {m for m in JUDGED_AT if _in_alarm(requests, points, m * 60)}
            assert set(range(30, 45)) <= alarm, (name, sorted(alarm))
            wrong.update({(name, m): (m in alarm, bool(fired[name].get(m))) for m in JUDGED_AT if m != 45
                          if (m in alarm) != bool(fired[name].get(m))})
    assert wrong == {}
