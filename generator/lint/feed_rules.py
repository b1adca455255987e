"""Consistency rules: what the dashboards query must be what the agent and scrape job deliver."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import yaml

from ..artifacts import GrafanaDashboard
from ..project import Project
from ..promql import gpu_identity
from ..render.agent import AGENT_KEY
from ..render.scrape import EXPORTER_LABELS, TARGET_LABELS
from . import Finding, Rule, schema_message
from .promql_checks import parse, selectors

AGENT_FILE = "k8s/cwagent-prometheus-config.yaml"
AGENT_ADDED_DIMENSIONS = ("ClusterName",)  # the agent adds these itself


@dataclass(frozen=True)
class FeedSubject:
    project: Project
    files: dict[str, bytes]
    dashboards: list[GrafanaDashboard]
    cwagent_schema: Path | None

    def agent_config(self) -> dict[str, Any]:
        documents = list(yaml.safe_load_all(self.files[AGENT_FILE]))
        return json.loads(next(d for d in documents if AGENT_KEY in d.get("data", {}))["data"][AGENT_KEY])

    def scrape_job(self) -> dict[str, Any]:
        documents = list(yaml.safe_load_all(self.files[AGENT_FILE]))
        scrape = yaml.safe_load(next(d for d in documents if "prometheus.yaml" in d.get("data", {}))
                                ["data"]["prometheus.yaml"])
        return scrape["scrape_configs"][0]


def _declarations(subject: FeedSubject) -> list[dict[str, Any]]:
    prometheus = subject.agent_config()["logs"]["metrics_collected"]["prometheus"]
    return prometheus.get("emf_processor", {}).get("metric_declaration", [])


def declarations_complete(subject: FeedSubject) -> Iterable[Finding]:
    for index, declaration in enumerate(_declarations(subject)):
        for key in ("source_labels", "metric_selectors", "dimensions"):
            if not declaration.get(key):
                yield Finding("AG003", "error", f"{AGENT_FILE} metric_declaration[{index}]",
                              f"no {key}: the agent silently drops this declaration")


def used_metrics_selected(subject: FeedSubject) -> Iterable[Finding]:
    patterns = [re.compile(p) for d in _declarations(subject) for p in d.get("metric_selectors", [])]
    used = set(subject.project.used_metrics())
    for name in sorted(used):
        if not any(p.search(name) for p in patterns):
            kind = subject.project.catalog.get(name).kind if name in subject.project.catalog else "?"
            why = " (the agent drops histograms)" if kind == "histogram" else ""
            yield Finding("AG001", "error", AGENT_FILE,
                          f"{name} is queried by a definition but the agent does not ship it{why}")


def _published_labels(subject: FeedSubject) -> set[str]:
    labels = set(TARGET_LABELS) | set(EXPORTER_LABELS) | {m.name for m in subject.project.catalog.labels()}
    # The labels that identify a GPU (cluster, each spelling of the node) are grouped on even
    # where a series lacks some of them: a missing one groups as empty, which changes nothing.
    labels.update(gpu_identity(subject.project.settings.labels))
    for rule in subject.scrape_job().get("metric_relabel_configs", []):
        if rule.get("action") == "labeldrop":
            labels = {label for label in labels if not re.fullmatch(rule["regex"], label)}
    return labels


def dimensions_published(subject: FeedSubject) -> Iterable[Finding]:
    labels = _published_labels(subject) | set(AGENT_ADDED_DIMENSIONS)
    for dimension in subject.project.settings.cloudwatch["dimensions"]:
        if dimension not in labels:
            yield Finding("AG002", "error", "settings cloudwatch.dimensions",
                          f"dimension {dimension!r} is not a label on the scraped DCGM series")


def _grouping_labels(expr: str) -> set[str]:
    return {label.strip() for group in re.findall(r"\bby \(([^)]*)\)", expr) for label in group.split(",")
            if label.strip()}


def labels_delivered(subject: FeedSubject) -> Iterable[Finding]:
    available = _published_labels(subject)
    for dashboard in subject.dashboards:
        for panel in dashboard.model.get("panels", []):
            for target in panel.get("targets", []):
                expr = target.get("expr")
                if not expr:
                    continue
                try:
                    used = {label for s in selectors(parse(expr)) for label in s.labels}
                except ValueError:
                    continue
                used |= _grouping_labels(expr)
                for label in sorted(used - available - {"__name__"}):
                    yield Finding("PR001", "error", f"grafana/{dashboard.uid}.json panel {panel.get('title')!r}",
                                  f"label {label!r} is not on the series the scrape job delivers")


def label_mode(subject: FeedSubject) -> Iterable[Finding]:
    labels = subject.project.settings.labels
    if labels.pod.startswith("exported_"):
        yield Finding("PR002", "warning", "settings labels.pod",
                      "the generated scrape job and ServiceMonitor keep the workload pod as `pod`; "
                      "exported_pod only fits a ServiceMonitor without honorLabels")


def agent_schema(subject: FeedSubject) -> Iterable[Finding]:
    if subject.cwagent_schema is None:
        return
    import jsonschema

    validator = jsonschema.Draft4Validator(json.loads(subject.cwagent_schema.read_text()))
    for error in validator.iter_errors(subject.agent_config()):
        path = "/".join(str(p) for p in error.absolute_path)
        yield Finding("AG004", "error", f"{AGENT_FILE} {AGENT_KEY}", f"schema: {path}: {schema_message(error)}")


RULES = (
    Rule("AG001", "every metric the definitions query is shipped by the CloudWatch agent", used_metrics_selected),
    Rule("AG002", "every CloudWatch dimension is a label on the scraped series", dimensions_published),
    Rule("AG003", "no agent metric declaration lacks source_labels, metric_selectors or dimensions",
         declarations_complete),
    Rule("AG004", "cwagentconfig.json validates against the agent's schema (--cwagent-schema)", agent_schema),
    Rule("PR001", "every label a query uses is delivered by the scrape job", labels_delivered),
    Rule("PR002", "the workload-pod label setting matches the generated scrape configs", label_mode),
)
