"""`gpudash verify` of a cluster saying exporter.mig: none whose alarm reads the rule's own condition, not its
`cloudwatch=` one per MIG instance (as 45c6b5c4 and b94ead6d left it).

Since 45c6b5c4, where no GPU is split an alarm reads the rule's own condition in place of a `cloudwatch=` condition
per MIG instance (render/alarms.cloudwatch_condition), and the cluster's agent declares what that alarm reads
(render/cloudwatch.reads_by_cluster). verify's sample (b94ead6d, checks.cloudwatch.sampled_metrics) is those reads
filtered by project.used_metrics(), which still takes `(a.cloudwatch or a.condition).query`: the `cloudwatch=`
condition's field. The story: a rule per GPU on DCGM_FI_DEV_GPU_UTIL (which MIG does not report), its CloudWatch form
per MIG instance on DCGM_FI_PROF_GR_ENGINE_ACTIVE; two clusters, `split` and `plain` (exporter.mig: none), no
CloudWatch dashboard. plain's alarm reads DCGM_FI_DEV_GPU_UTIL per GPU and its agent publishes it; used_metrics() is
{DCGM_FI_PROF_GR_ENGINE_ACTIVE}, so verify samples nothing in plain and says "no CloudWatch widget or alarm of plain
reads a DCGM metric ... nothing to look for", ok -- also when plain's agent publishes nothing at all (stopped, or its
ConfigMap never applied): the one alarm of plain never sees data and verify passes it.
"""

from __future__ import annotations


from generator.artifacts import build
from generator.checks import cloudwatch as checks_cloudwatch
from generator.clients.options import Options
from generator.output import encode
from generator.render.cloudwatch import reads_by_cluster
from tests.support import mixed_fleet
from tests.support.agent_points import scrapes
from tests.support.cloudwatch_agent import Agent, agent_config
from tests.support.projects import defined_project
from tests.unit.test_verify_sets_per_cluster import _Listed  # ListMetrics over datapoints

ALARM = '''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("gpu-busy", "GPU busy",
                Condition(Query("DCGM_FI_DEV_GPU_UTIL", "avg", ("node", "gpu")), ">", 90),
                cloudwatch=Condition(Query("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "avg", ("node", "gpu", "mig_instance")),
                                     ">", 0.9))
'''
NO_DASHBOARDS = "def dashboards(ctx):\n    return []\n"
SETTINGS = """clusters:
  - {name: split, region: us-east-1}
  - {name: plain, region: us-east-1, exporter: {mig: none}}
"""


def _points(files, cluster: str):
    config, job = agent_config(files[f"k8s/cwagent-prometheus-config-{cluster}.yaml"])
    return Agent(config, job).run(scrapes(job, 30, 300, mixed_fleet.FLEET))


def test_verify_does_not_pass_a_plain_cluster_whose_agent_publishes_nothing(tmp_path, monkeypatch):
    project = defined_project(tmp_path, SETTINGS, alarms=ALARM, dashboards=NO_DASHBOARDS)
    reads = reads_by_cluster(project.cloudwatch_definitions(), project.alarms, project.catalog, project.settings)
    assert set(reads["plain"]) == {"DCGM_FI_DEV_GPU_UTIL"}  # plain's alarm reads the rule's field (45c6b5c4)
    files = encode(build(project, grafana=False))
    assert any(p.metric == "DCGM_FI_DEV_GPU_UTIL" for p in _points(files, "plain"))  # what a healthy plain publishes
    # plain's agent publishes nothing (stopped, or its ConfigMap not applied); split's is healthy
    monkeypatch.setattr(checks_cloudwatch, "for_verify", lambda options: _Listed(_points(files, "split")))
    options = Options(timeout=30)
    options.start()
    (check,) = [c for c in checks_cloudwatch.checks(project, options) if c.name == "plain metrics"]
    assert check.status != "ok", (check.status, check.detail)
