"""A rule per GPU whose `cloudwatch=` condition is per MIG instance, in a cluster whose GPUs may be split and which also
holds whole GPUs (the mixed fleet: five nodes of whole GPUs beside a node of two A100s split into MIG instances).

generate refuses the rule's own condition there ("a MIG GPU's DCGM_FI_DEV_FB_USED is the sum of its instances ...
fix: group it by mig_instance ... or give the Alarm a `cloudwatch=` condition"), and the condition that fix names
reads the MIG-only set [ClusterName, node, gpu, GPU_I_ID, GPU_I_PROFILE], which holds no whole GPU. The Prometheus
rule fires for the cluster's whole GPUs over the level, gpu-node-b GPU 0 (40,000 MiB) and ip-10-0-3-7.ec2.internal
GPU 0 (30,000), as it does in a cluster saying exporter.mig: none, where the alarm reads the rule's own condition;
here no CloudWatch alarm evaluates them, and neither generate's notes nor lint said so (AL012 spoke of MIG GPUs a rule
does not evaluate, not of whole ones). Now both do, naming the setting that makes the alarm read the rule's own
condition where no GPU is split; judging the whole GPUs beside the MIG instances would take a set of whole GPUs alone
in a cluster that also publishes MIG instances, which the agents' declarations do not make.
"""

from __future__ import annotations

import json

from generator.artifacts import build, notes
from generator.lint.runner import lint
from generator.model import Query
from generator.output import encode
from tests.support import cloudwatch_eval, mixed_fleet
from tests.support.agent_points import scrapes
from tests.support.cloudwatch_agent import Agent, agent_config
from tests.support.projects import defined_project
# the rule per GPU, per MIG instance on CloudWatch
from tests.unit.test_cloudwatch_condition_per_mig_instance_in_mixed_fleet import ALARM

END = 900


def test_a_split_clusters_whole_gpus_are_said_unwatched(tmp_path):
    project = defined_project(tmp_path, "clusters:\n  - {name: split, region: us-east-1}\n", alarms=ALARM,
                              dashboards="def dashboards(ctx):\n    return []\n")
    whole = {gpu for gpu, value in mixed_fleet.truth(Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu")),
                                                     {n.name: n.name for n in mixed_fleet.WHOLE},
                                                     fleet=mixed_fleet.WHOLE).items() if value > 15000}
    assert whole == {"gpu-node-b GPU 0", "ip-10-0-3-7.ec2.internal GPU 0"}  # whole GPUs the rule fires for
    artifacts = build(project, grafana=False)
    files = encode(artifacts)
    config, job = agent_config(files["k8s/cwagent-prometheus-config-split.yaml"])
    points = Agent(config, job).run(scrapes(job, 30, END, mixed_fleet.FLEET))
    firing = set()
    for item in json.loads(files["cloudwatch/alarms.json"])["alarms"]:
        for key, state in cloudwatch_eval.alarm(item["Request"], points, END).items():
            labels = dict(key)
            if state == "ALARM" and "GPU_I_ID" not in labels:
                firing.add(f"{labels['node']} GPU {labels['gpu']}")
    said = [note.message for note in notes(project) if "gpu-fb-high" in note.message]
    said += [f.message for f in lint(project, artifacts) if f.rule != "AL021" and "gpu-fb-high" in f.message]
    assert firing == set(), sorted(firing)  # the alarm reads MIG instances alone
    unread = ("alarm 'gpu-fb-high' does not evaluate whole GPUs on CloudWatch (its Prometheus rule does): its "
              "`cloudwatch=` condition reads MIG instances alone")
    assert [m for m in said if m.startswith(unread)] and len([m for m in said if m.startswith(unread)]) == 2, said
    assert all("exporter.mig: none" in m for m in said if m.startswith(unread)), said
