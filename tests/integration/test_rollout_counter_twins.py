"""A row remapped while a node's exporter pod is being replaced, judged by the `uncorrectable-rows` CloudWatch alarm
(the payloads through the model of the agent's OTel pipeline) and by its Prometheus rule (`promtool test rules` on the
generated rules): do the twins fire on the same situation?

Each GPU is alone on its node. The node's exporter pod answers scrapes 0 to 20 (the counter reads 7), misses scrape 21
(the pod being replaced: maxSurge 0, the DaemonSet default), and its replacement answers from scrape 22 on with the
counter at 8: one row was remapped between the two readings. The truth is one row remapped in the 5 minutes that hold
the replacement's first reading, whatever pod answered it (the counter is the GPU's, kept by the driver).

* "re-created": the pod evicted and re-created by its DaemonSet (a new name and address, the same revision);
* "rollout": a new exporter revision (an upgrade: a new controller-revision-hash and pod-template-generation).

The rule counts the row in both. The alarm counts it when the pod is re-created, and never across a rollout: on
agent.pipeline: otel each exporter revision is a delta series of its own (docs/cloudwatch.md, "Two exporter pods on
one node"), and the new revision's first reading is only its baseline. Not fixable without giving up what the
revision key is for (a surge pod's readings interleaved with the old pod's, a rollback counted twice): pinned as a
strict xfail with the truth, and the alarm's description says it (test_the_alarm_says_it_misses_a_rollouts_gap).
"""

from __future__ import annotations

import pytest

from tests.integration.test_device_counters import FIELDS, REPLAYS, ROWS
from tests.integration.test_mig_twins import built_with
from tests.support import cloudwatch_eval
from tests.support.alarm_requests import alarm_request
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import discovered
from tests.support.promtool_rules import parsed_rules

STEP, STEPS = 30, 60  # half an hour of 30 s scrapes, k = -1 .. 59
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
OLD_LAST, NEW_FIRST = 20, 22  # the old pod's last scrape, the replacement's first (scrape 21 missed)
# story (its node) -> the replacement's (pod name, controller-revision-hash, pod-template-generation)
STORIES = {"re-created": ("nvidia-dcgm-exporter-7tq2n", "6c9d8f7b5c", "1"),
           "rollout": ("nvidia-dcgm-exporter-k4m8x", "7f6b9c4d2a", "2")}
OLD = ("nvidia-dcgm-exporter-x2v9p", "6c9d8f7b5c", "1")
ENDS = range(60, STEPS * STEP + 1, 60)


def _pod(k: int, story: str) -> tuple[str, str, str] | None:
    """The exporter pod answering the story's scrape k (name, revision hash, generation), None: the scrape fails."""
    return OLD if k <= OLD_LAST else STORIES[story] if k >= NEW_FIRST else None


def _payload(story: str, k: int) -> str:
    if _pod(k, story) is None:
        return ""
    labels = (f'gpu="0",UUID="GPU-{story}",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="{story}",'
              f'DCGM_FI_DRIVER_VERSION="550.54.15"')
    return (f"# TYPE {REPLAYS} counter\n# TYPE {ROWS} counter\n{REPLAYS}{{{labels}}} 1000\n"
            f"{ROWS}{{{labels}}} {8 if k >= NEW_FIRST else 7}\n")


def _target(job: dict, story: str, pod: tuple[str, str, str]) -> dict[str, str]:
    """The labels the agent's scrape job gives the story's exporter pod `pod` (Kubernetes SD's meta of a DaemonSet's
    pod on the story's node)."""
    name, revision, generation = pod
    return discovered(job, {"__address__": f"10.2.{len(story)}.{sum(map(ord, name)) % 250}:9400",
                            "__meta_kubernetes_namespace": "gpu-operator", "__meta_kubernetes_pod_name": name,
                            "__meta_kubernetes_pod_node_name": story,
                            "__meta_kubernetes_pod_container_port_number": "9400",
                            "__meta_kubernetes_pod_label_app": "nvidia-dcgm-exporter",
                            "__meta_kubernetes_pod_controller_kind": "DaemonSet",
                            "__meta_kubernetes_pod_label_controller_revision_hash": revision,
                            "__meta_kubernetes_pod_label_pod_template_generation": generation})


def truth() -> set[int]:
    """The ends of the 5-minute windows holding the replacement's first reading (the row's remap)."""
    return {end for end in ENDS if end // STEP - 11 < NEW_FIRST <= end // STEP - 1}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return built_with(tmp_path_factory.mktemp("rollout-counter-twins"), {}, FIELDS)


@pytest.fixture(scope="module")
def alarm_fires(built) -> dict[str, set[int]]:
    """{story: the ends at which the CloudWatch alarm is in ALARM for its GPU}."""
    files, _ = built
    config, job = agent_config(files[AGENT_FILE])
    scrapes = []
    for story in STORIES:
        for k in range(-1, STEPS):
            pod = _pod(k, story) or OLD  # a failed scrape is the old pod's target, gone
            scrapes.append(Scrape(float(k * STEP), _payload(story, k), _target(job, story, pod)))
    points = Agent(config, job).run(scrapes)
    rows = alarm_request(files, "uncorrectable-rows")
    return {story: set() for story in STORIES} | cloudwatch_eval.fired_at(rows, points, ENDS, "node")


def _stored(story: str) -> list[dict[str, str]]:
    """The story's row counter as Prometheus stores it from the generated scrape job (`node`, `exporter_pod` and
    `instance` of each pod), on promtool's grid (scrape k at (k + 1) x 30 s): the old pod's series marked stale at the
    missed scrape, the replacement's from its first."""
    labels = (f'gpu="0",UUID="GPU-{story}",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="{story}",'
              f'DCGM_FI_DRIVER_VERSION="550.54.15",node="{story}"')
    out = []
    for pod in (OLD, STORIES[story]):
        values = []
        for k in range(-1, STEPS):
            answering = _pod(k, story)
            values.append(str(8 if k >= NEW_FIRST else 7) if answering == pod
                          else "stale" if k == OLD_LAST + 1 and pod == OLD else "_")
        out.append({"series": f'{ROWS}{{{labels},exporter_pod="{pod[0]}",instance="{pod[0]}:9400"}}',
                    "values": " ".join(values)})
    return out


def test_the_rule_counts_a_row_remapped_while_the_exporter_pod_is_replaced(built):
    """The rule fires at the ends of the windows holding the replacement's first reading, in both stories."""
    import yaml

    from tests.support.promtool_rules import expected_alert, promtool_test

    _, folder = built
    groups = parsed_rules((folder / "rules.yaml").read_text())["groups"]
    (rule,) = [r for g in groups for r in g["rules"] if r["labels"]["gpudash_rule"] == "uncorrectable-rows"]
    fires = truth()
    assert fires == set(range(720, 961, 60))
    checks = [{"eval_time": f"{end}s", "alertname": rule["alert"],
               "exp_alerts": [expected_alert(folder, rule["alert"], node=story, gpu="0") for story in STORIES
                              if end in fires]} for end in ENDS]
    promtool_test(folder, "rollout_counter_twins.yaml", [{
        "interval": f"{STEP}s", "input_series": [s for story in STORIES for s in _stored(story)],
        "alert_rule_test": checks}], evaluation_interval=f"{STEP}s")


def test_the_alarm_counts_a_row_remapped_while_the_pod_is_re_created(alarm_fires):
    assert alarm_fires["re-created"] == truth()


@pytest.mark.xfail(strict=True, reason="agent.pipeline: otel keys a counter's deltas by exporter revision: the new "
                                       "revision's first reading is its baseline, the row remapped in the rollout's "
                                       "gap is counted nowhere (the rule counts it)")
def test_the_alarm_counts_a_row_remapped_during_a_rollout_as_its_rule_does(alarm_fires):
    assert alarm_fires["rollout"] == truth()


def test_the_alarm_says_it_misses_a_rollouts_gap(built):
    """What the user reads where the alarm and its rule part: the counter alarms' descriptions on agent.pipeline: otel
    say a rollout's gap is lost."""
    files, _ = built
    for rule in ("uncorrectable-rows", "pcie-replays"):
        description = alarm_request(files, rule)["AlarmDescription"]
        assert "rollout" in description and len(description) <= 1024, (rule, description)
