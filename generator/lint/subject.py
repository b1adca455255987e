"""What every lint rule reads: one artifact set (built, or read from a build) and the facts it is judged by."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from ..artifacts import AgentConfig, AlarmRequest, Artifacts, CloudWatchDashboard, GrafanaDashboard, Note
from ..catalog import Catalog
from ..model import Alarm
from ..settings import Cluster, Settings


@dataclass(frozen=True)
class LintInput:
    """The artifact set, the settings and counters CSV it was made with, the reference schemas to validate against
    (None: those rules are skipped), and the alarm definitions. Every rule family receives this."""
    artifacts: Artifacts
    settings: Settings
    catalog: Catalog
    grafana_schema: Path | None = None  # folder of Grafana's dashboard JSON schemas
    cwagent_schema: Path | None = None  # the CloudWatch agent's config schema
    # the project's alarm definitions, the build's alarms made from them (with its settings: output.read checks them)
    alarm_definitions: tuple[Alarm, ...] = ()

    @property
    def grafana(self) -> tuple[GrafanaDashboard, ...]:
        return self.artifacts.grafana

    @property
    def cloudwatch_dashboards(self) -> tuple[CloudWatchDashboard, ...]:
        return self.artifacts.cloudwatch_dashboards

    @property
    def alarms(self) -> tuple[AlarmRequest, ...]:
        return self.artifacts.alarms

    @property
    def notes(self) -> tuple[Note, ...]:
        return self.artifacts.notes

    @property
    def pod_label(self) -> str:
        return self.settings.labels.pod

    @property
    def namespace_label(self) -> str:
        return self.settings.labels.namespace

    def clusters(self) -> tuple[Cluster, ...]:
        return self.settings.clusters

    @cached_property
    def held(self) -> dict[Any, Any]:
        """What a rule works out of this input alone and several rules ask again (a cluster's scrape jobs as its agent
        runs them: read for every query of the cluster), kept by the rule's own key for as long as the input lives."""
        return {}

    @cached_property
    def classic_agents(self) -> bool:
        """Some cluster's agent publishes by its JSON path (agent.pipeline: classic). Worked out once: rules ask it
        for every widget and alarm, and a fleet has an agent per cluster."""
        return any(agent is not None and agent.otel is None for agent in map(self.agent, self.clusters()))

    @cached_property
    def otel_agents(self) -> bool:
        """Some cluster's agent publishes by awsemf (agent.pipeline: otel)."""
        return any(agent is not None and agent.otel is not None for agent in map(self.agent, self.clusters()))

    def agent(self, cluster: Cluster | None = None) -> AgentConfig | None:
        """The agent ConfigMaps of `cluster` (the first cluster's when None); None with the add-on. On the OTel
        pipeline its collector configuration as the collector runs it (render/agent_otel.running: the processors
        and exporter its metrics pipeline names)."""
        name = (cluster or self.clusters()[0]).name
        if name not in self._running:
            return self.artifacts.agent(name)
        return self._running[name]

    @cached_property
    def _running(self) -> dict[str, AgentConfig | None]:
        """Each configured cluster's agent, its collector configuration as it runs (worked out once)."""
        from ..render.agent_otel import running

        agents = {c.name: self.artifacts.agent(c.name) for c in self.clusters()}
        return {name: agent if agent is None or agent.otel is None else replace(agent, otel=running(agent.otel))
                for name, agent in agents.items()}

    def agent_config(self, cluster: Cluster | None = None) -> dict[str, Any] | None:
        """The agent's cwagentconfig.json of `cluster`; None with the add-on, which has no agent ConfigMaps."""
        agent = self.agent(cluster)
        return agent.config if agent is not None else None

    def prometheus_jobs(self) -> list[dict[str, Any]]:
        """The jobs of the fleet's Prometheus (prometheus/additional-scrape-configs.yaml's additionalScrapeConfigs)."""
        values = self.artifacts.additional_scrape_configs
        return values.get("prometheus", {}).get("prometheusSpec", {}).get("additionalScrapeConfigs") or []

    def scrape_job(self, cluster: Cluster | None = None) -> dict[str, Any]:
        agent = self.agent(cluster)
        if agent is None:  # the Container Insights add-on: no agent ConfigMaps; the set's Prometheus job
            return (self.prometheus_jobs() or [{}])[0]
        return agent.scrape["scrape_configs"][0]
