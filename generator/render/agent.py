"""The CloudWatch agent's two ConfigMaps (cwagent-prometheus). Pure.

The namespace and dimension set come from settings.cloudwatch, declared once;
the metric selectors from the counters CSV (or what the definitions use).
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from ..catalog import Catalog
from ..render.grafana_files import MANAGED_BY
from ..serialize import to_json
from ..settings import Settings

AGENT_CONFIGMAP = "prometheus-cwagentconfig"
AGENT_KEY = "cwagentconfig.json"
SCRAPE_CONFIGMAP = "prometheus-config"
SCRAPE_KEY = "prometheus.yaml"
SCRAPE_MOUNT = "/etc/prometheusconfig/prometheus.yaml"
KEPT_KINDS = ("gauge", "counter", "summary")  # the agent drops histograms


def selected_metrics(catalog: Catalog, settings: Settings, used: Iterable[str]) -> list[str]:
    """The DCGM fields the agent ships: all series in the CSV, or only those used."""
    wanted = set(used) if settings.agent["metric_selection"] == "used" else None
    return [m.name for m in catalog if m.kind in KEPT_KINDS and (wanted is None or m.name in wanted)]


def metric_selectors(names: list[str]) -> list[str]:
    return [f"^{re.escape(name)}$" for name in names]


def agent_config(catalog: Catalog, settings: Settings, used: Iterable[str]) -> dict[str, Any]:
    cloudwatch = settings.cloudwatch
    names = selected_metrics(catalog, settings, used)
    units = {name: catalog.get(name).unit.cloudwatch for name in names
             if catalog.get(name).unit.cloudwatch != "None"}
    return {
        "logs": {
            "metrics_collected": {
                "prometheus": {
                    "prometheus_config_path": SCRAPE_MOUNT,
                    "emf_processor": {
                        "metric_namespace": cloudwatch["namespace"],
                        "metric_unit": units,
                        "metric_declaration": [{
                            "source_labels": ["job"],
                            "label_matcher": f"^{re.escape(settings.scrape['job_name'])}$",
                            "dimensions": [list(cloudwatch["dimensions"])],
                            "metric_selectors": metric_selectors(names),
                        }],
                    },
                }
            },
            "force_flush_interval": settings.agent["force_flush_interval"],
        }
    }


def configmaps(catalog: Catalog, settings: Settings, used: Iterable[str], scrape_yaml: str) -> list[dict[str, Any]]:
    namespace = settings.agent["namespace"]
    agent_json = to_json(agent_config(catalog, settings, used), ascii=True).decode()
    return [
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": AGENT_CONFIGMAP, "namespace": namespace, "labels": dict(MANAGED_BY)},
         "data": {AGENT_KEY: agent_json}},
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": SCRAPE_CONFIGMAP, "namespace": namespace, "labels": dict(MANAGED_BY)},
         "data": {SCRAPE_KEY: scrape_yaml}},
    ]

