"""Project -> every artifact as {relative path: bytes}. Pure and deterministic."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .errors import InputError
from .markers import GRAFANA_OWNER_TAG
from .names import cloudformation_template, grafanalib_uid
from .project import Project
from .render import agent, alarms as alarm_render, cloudformation, cloudwatch, scrape
from .render import grafana as grafana_render
from .render.grafana_files import configmap, provisioning
from .serialize import to_json, to_yaml


@dataclass(frozen=True)
class GrafanaDashboard:
    uid: str
    title: str
    source: str  # definition file:line
    model: dict[str, Any]


def _grafanalib_json(item) -> dict[str, Any]:
    from grafanalib._gen import DashboardEncoder

    try:
        return json.loads(json.dumps(item.value.to_json_data(), cls=DashboardEncoder))
    except (TypeError, ValueError, AttributeError, RecursionError) as exc:  # what the user's objects hold
        raise InputError(f"the grafanalib dashboard cannot be written as JSON ({type(exc).__name__}: {exc})",
                         where=item.where, hint="give its panels grafanalib objects, text and numbers only") from None


def grafana_dashboards(project: Project) -> list[GrafanaDashboard]:
    """Every Grafana dashboard: neutral definitions rendered, grafanalib ones serialized."""
    result = [GrafanaDashboard(grafana_render.uid_for(d, project.settings), d.title, d.defined_at,
                               grafana_render.render(d, project.catalog, project.settings))
              for d in project.grafana_dashboards()]
    for item in project.grafanalib_dashboards:
        model = _grafanalib_json(item)
        model["uid"] = model.get("uid") or grafanalib_uid(model.get("title", ""))
        result.append(GrafanaDashboard(model["uid"], model.get("title", ""), str(item.source), model))
    for dashboard in result:
        tags = dashboard.model.setdefault("tags", [])
        if GRAFANA_OWNER_TAG not in tags:
            tags.append(GRAFANA_OWNER_TAG)
    seen: dict[str, str] = {}
    for dashboard in result:
        if dashboard.uid in seen:
            raise InputError(f"Grafana uid {dashboard.uid!r} is used twice (also by {seen[dashboard.uid]})",
                             where=dashboard.source, hint="give each dashboard a unique id or uid")
        seen[dashboard.uid] = dashboard.source
    return result


def build(project: Project) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    dashboards = grafana_dashboards(project)
    configmaps = []
    for dashboard in dashboards:
        body = to_json(dashboard.model)
        files[f"grafana/{dashboard.uid}.json"] = body
        configmaps.append(configmap(dashboard.uid, body.decode(), project.settings))
    files["grafana/provisioning/gpudash-dashboards.yaml"] = to_yaml(provisioning(project.settings))
    files["k8s/grafana-dashboards.yaml"] = to_yaml(*configmaps)
    files.update(feed_files(project))
    files.update(cloudwatch_files(project))
    files.update(rule_files(project))
    return files


def cloudwatch_files(project: Project) -> dict[str, bytes]:
    """CloudWatch dashboards, the PutMetricAlarm requests and the same as CloudFormation."""
    settings = project.settings
    dashboards = cloudwatch.dashboards(project.cloudwatch_dashboards(), project.catalog, settings)
    requests = alarm_render.cloudwatch_alarms(project.alarms, settings, project.catalog)
    files = {f"cloudwatch/dashboards/{name}.json": to_json(body) for name, body in dashboards.items()}
    files["cloudwatch/alarms.json"] = to_json({"alarms": requests})
    primary = settings.clusters[0].region
    from .container_insights import enabled

    # The Prometheus path's agent logs EMF events; the Container Insights add-on manages its own log groups.
    log_groups = [] if enabled(settings) else \
        [(c.region, agent.log_group(c), settings.agent["log_retention_days"]) for c in settings.clusters]
    for region, template in cloudformation.templates(dashboards, requests, primary, log_groups).items():
        files[f"cloudformation/{cloudformation_template(region, primary)}"] = to_json(template)
    return files


def rule_files(project: Project) -> dict[str, bytes]:
    """The alarms as Prometheus alerting rules: a plain rules file and a PrometheusRule."""
    rules = alarm_render.prometheus_rules(project.alarms, project.catalog, project.settings)
    return {"prometheus/rules.yaml": to_yaml(rules),
            "k8s/prometheusrule.yaml": to_yaml(alarm_render.prometheus_rule_resource(rules, project.settings))}


def feed_files(project: Project) -> dict[str, bytes]:
    """The configs that feed the dashboards: the agent's ConfigMaps (or, with cloudwatch.source:
    container-insights, the EKS add-on's configuration values) and the Prometheus scrape job."""
    from . import container_insights

    settings = project.settings
    if container_insights.enabled(settings):  # the add-on runs its own agent and exporter: its configuration
        agents = {container_insights.ADDON_FILE: to_json(container_insights.addon_configuration())}
    else:
        scrape_yaml = to_yaml(scrape.prometheus_config(settings)).decode()
        queried = cloudwatch.queried_sets(project.cloudwatch_dashboards(), project.alarms, project.catalog, settings)
        emf = agent.emf_processor(project.catalog, settings, queried)  # the same for every cluster
        agents = {agent.agent_file(cluster): to_yaml(*agent.configmaps(project.catalog, settings, cluster, queried,
                                                                        scrape_yaml, emf))
                  for cluster in settings.clusters}
    return {
        **agents,
        "prometheus/additional-scrape-configs.yaml": to_yaml(scrape.additional_scrape_configs(settings)),
        "k8s/servicemonitor.yaml": to_yaml(scrape.service_monitor(settings)),
    }
