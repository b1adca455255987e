"""Project -> every artifact as {relative path: bytes}. Pure and deterministic."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .errors import InputError
from .project import Project
from .render import agent, scrape
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

    return json.loads(json.dumps(item.value.to_json_data(), cls=DashboardEncoder))


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40] or "dashboard"


def grafana_dashboards(project: Project) -> list[GrafanaDashboard]:
    """Every Grafana dashboard: neutral definitions rendered, grafanalib ones serialized."""
    result = [GrafanaDashboard(grafana_render.uid_for(d, project.settings), d.title, d.defined_at,
                               grafana_render.render(d, project.catalog, project.settings))
              for d in project.grafana_dashboards()]
    for item in project.grafanalib_dashboards:
        model = _grafanalib_json(item)
        model["uid"] = model.get("uid") or _slug(model.get("title", ""))
        result.append(GrafanaDashboard(model["uid"], model.get("title", ""), str(item.source), model))
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
    return files


def feed_files(project: Project) -> dict[str, bytes]:
    """The configs that feed the dashboards: the agent's ConfigMaps and the Prometheus scrape job."""
    settings = project.settings
    scrape_yaml = to_yaml(scrape.prometheus_config(settings)).decode()
    return {
        "k8s/cwagent-prometheus-config.yaml": to_yaml(
            *agent.configmaps(project.catalog, settings, project.used_metrics(), scrape_yaml)),
        "prometheus/additional-scrape-configs.yaml": to_yaml(scrape.additional_scrape_configs(settings)),
        "k8s/servicemonitor.yaml": to_yaml(scrape.service_monitor(settings)),
    }
