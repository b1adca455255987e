"""What a build counts on, hand-edited in the build where no rule compares it with what gpudash writes: the Prometheus
exporter job's sample_limit (a scrape over it fails whole; the agent's jobs are compared whole by AG008), the units
the agent publishes each field in (the catalog's), and the EMF log group a classic agent writes (the one the stack
gives its retention). Each is a warning that names what goes wrong."""

from __future__ import annotations

from typing import Iterable

from ..output import ADDITIONAL_SCRAPE_FILE, agent_file
from ..render.agent import AGENT_KEY, log_group
from ..render.agent_otel import EXPORTER, OTEL_KEY
from ..render.scrape import SAMPLE_LIMIT
from . import Finding, Rule
from .feed_rules import _prometheus, _selection
from .subject import LintInput

NODE_GPUS = 8  # the GPUs of the largest common GPU node (p4d, p5, p6: 8), one exporter target
MIG_INSTANCES = 7  # the most instances a GPU is split into (a 1g profile of an A100 or H100)


def _samples(subject: LintInput) -> tuple[int, str]:
    """The samples one exporter target sends at a scrape on the largest common node, and how they are counted."""
    fields = sum(1 for metric in subject.catalog if metric.is_series)
    split = not subject.settings.no_mig
    instances = NODE_GPUS * (MIG_INSTANCES if split else 1)
    how = f"{fields} fields x {NODE_GPUS} GPUs" + (f" x {MIG_INSTANCES} MIG instances" if split else "")
    return fields * instances, how


def sample_limit_fits(subject: LintInput) -> Iterable[Finding]:
    jobs = [(f"{ADDITIONAL_SCRAPE_FILE} job {job.get('job_name')!r}", job) for job in subject.prometheus_jobs()
            if job.get("job_name") == subject.settings.scrape.job_name]
    needed, how = _samples(subject)
    for where, job in jobs:
        limit = job.get("sample_limit")
        if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0 or limit >= needed:
            continue  # (0: no limit)
        yield Finding("PR008", "warning", where,
                      f"sample_limit {limit}: a scrape with more samples (after metric_relabel_configs) fails whole, "
                      f"and every series of its target is dropped: each GPU of that node reads as gone from the "
                      f"panels and rules, and the GPU data missing rule fires; an exporter on a node of {NODE_GPUS} GPUs "
                      f"sends {needed:,} ({how}); fix: leave sample_limit as gpudash writes it ({SAMPLE_LIMIT}), or "
                      f"at least {needed}")


def units_kept(subject: LintInput) -> Iterable[Finding]:
    for cluster in subject.clusters():
        agent = subject.agent(cluster)
        if agent is None:
            continue
        emf = _prometheus(subject, cluster).get("emf_processor") or {}
        written = emf.get("metric_unit")
        if not isinstance(written, dict):
            continue
        where = (f"{agent_file(cluster.name)} {OTEL_KEY} {EXPORTER} metric_descriptors" if agent.otel is not None
                 else f"{agent_file(cluster.name)} {AGENT_KEY} emf_processor metric_unit")
        selectors = [s for d in emf.get("metric_declaration") or [] if isinstance(d, dict)
                     for s in d.get("metric_selectors") or []]
        published = set(_selection(subject, selectors) or ())
        for name in sorted(published | {n for n in written if n in subject.catalog}):
            meant = subject.catalog.get(name).unit.cloudwatch
            unit = written.get(name, "None")
            if unit == meant:
                continue
            yield Finding("AG009", "warning", where,
                          f"{name} is published in {unit} where its unit is {meant} (the counters CSV's help text): "
                          f"CloudWatch keeps the number as sent and only labels it (no conversion), so the graphs "
                          f"and alarm texts say {unit} of a value in {meant}; and where it was published in {meant} "
                          f"before, the metric holds two units, whose datapoints CloudWatch aggregates apart, and an "
                          f"alarm naming no unit (as gpudash's) behaves unpredictably on it (PutMetricAlarm's Unit); "
                          f"fix: leave the units as gpudash writes them (`gpudash metrics` lists each field's)")


def log_group_kept(subject: LintInput) -> Iterable[Finding]:
    """agent.pipeline: classic: the agent writes the EMF log group the cluster's CloudFormation stack creates with
    agent.log_retention_days (render/agent.unexpiring_log_groups: the JSON path gives awsemf no retention of its own;
    the OTel pipeline writes one on any group it creates, and without agent.log_group_in_stack generate warns)."""
    settings = subject.settings
    if not settings.agent.log_group_in_stack:
        return
    for cluster in subject.clusters():
        agent = subject.agent(cluster)
        if agent is None or agent.otel is not None:
            continue
        written, meant = _prometheus(subject, cluster).get("log_group_name"), log_group(cluster)
        if written == meant:
            continue
        yield Finding("AG010", "warning", f"{agent_file(cluster.name)} {AGENT_KEY} log_group_name",
                      f"{written!r} where gpudash writes {meant!r}, the group the cluster's CloudFormation stack "
                      f"creates with a retention of agent.log_retention_days ({settings.agent.log_retention_days} "
                      f"days): the agent creates {written!r} with none (its JSON path gives the group no retention), so "
                      f"it never expires and its storage grows every month beyond what `gpudash cost` prices, and "
                      f"the stack's group stays empty; fix: leave log_group_name as gpudash writes it")


RULES = (
    Rule("AG009", "the agent publishes each DCGM field in the catalog's unit (a warning)", units_kept),
    Rule("AG010", "a classic agent writes the EMF log group its cluster's stack creates with agent.log_retention_days "
                  "(a warning)", log_group_kept),
    Rule("PR008", "the Prometheus exporter job's sample_limit is not one an exporter on a node of 8 GPUs (of 7 MIG "
                  "instances each, unless exporter.mig: none) goes over (a warning)", sample_limit_fits),
)
