"""gpudash.yaml: loaded with yaml.safe_load, validated against schemas/config.schema.json.

Defaults live in the schema (`default` keywords) and nowhere else; `_with_defaults`
fills them in. Errors name the file, the line and the path inside the document, and say
what to write instead. Which file is read is decided in one place, `discover`.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
from dataclasses import dataclass, fields, replace
from functools import cache, cached_property
from pathlib import Path
from typing import Any, Iterable

import yaml

from .catalog import VIRTUAL_GPU_COPY_LABELS
from . import printed
from .errors import InputError
from .exporter_styles import exporter_pod_names
from .markers import REQUIRED_DIMENSIONS
from .names import KUBE_STATE_METRICS_JOB
from .quick_schema import conforms
from .reading import decode_utf8, read_bytes, yaml_begun, yaml_loader
from .resources import bundled, default_config, default_counters, schema
from .series_labels import OLD_WORKLOAD, WORKLOAD, dimension_problem, uuid_label

ENVIRONMENT_VARIABLE = "GPUDASH_CONFIG"
LOCAL_FILE = "gpudash.yaml"
BUNDLED_SOURCE = "<bundled gpudash.yaml>"  # the source of settings read from the bundled defaults
SCHEMA_HINT = "see docs/settings.md, or start from the commented default: gpudash init-config"


@dataclass(frozen=True)
class Cluster:
    """One cluster of settings `clusters`: its EKS name, Region and Prometheus label."""
    name: str
    region: str
    prometheus_label: str | None = None
    # clusters[].exporter.daemonset: this cluster's exporter DaemonSet name where it differs from exporter.daemonset
    # (exporter_styles.exporter_daemonset reads both); None: the global one.
    exporter_daemonset: str | None = None
    # clusters[].exporter.more_daemonsets: this cluster's other exporter DaemonSets (`name` in exporter.namespace, or
    # `namespace/name`) where they differ from exporter.more_daemonsets; None: the global list.
    exporter_more_daemonsets: tuple[str, ...] | None = None
    # clusters[].exporter.deployment / .namespace: how and where this cluster's exporter is deployed where it differs
    # from exporter.deployment / exporter.namespace (exporter_styles.style_for, exporter_namespace); None: the global.
    exporter_deployment: str | None = None
    exporter_namespace: str | None = None
    # clusters[].exporter.mig: "none" (no GPU of this cluster is split into MIG instances) or "some" where it differs
    # from exporter.mig (mig_of, Settings.for_clusters); None: the fleet's.
    exporter_mig: str | None = None

    @classmethod
    def from_settings(cls, document: dict[str, Any]) -> "Cluster":
        exporter = document.get("exporter") or {}
        return cls(name=document["name"], region=document["region"],
                   prometheus_label=document.get("prometheus_label"), exporter_daemonset=exporter.get("daemonset"),
                   exporter_more_daemonsets=tuple(exporter["more_daemonsets"]) if "more_daemonsets" in exporter
                   else None, exporter_deployment=exporter.get("deployment"),
                   exporter_namespace=exporter.get("namespace"), exporter_mig=exporter.get("mig"))


def mig_of(settings: "Settings", cluster: Cluster) -> str | None:
    """A cluster's exporter.mig: its own (clusters[].exporter.mig), else the fleet's."""
    return cluster.exporter_mig or settings.exporter.mig


@dataclass(frozen=True)
class Labels:
    """Which Prometheus label carries each fact (pod vs exported_pod, node vs hostname vs Hostname).

    The node may be spelled several ways in one fleet: `node_sources` lists the labels
    that can carry it, most trusted first, and queries coalesce them into `node`.
    """

    pod: str
    namespace: str
    container: str
    node_sources: tuple[str, ...]
    cluster: str
    node: str = "node"  # the one label queries, legends, variables and alerts use for the node
    # Labels a pod's copy of a GPU's series may carry besides the workload's (exporter.virtual_gpus: the pod's
    # UID and shared replica); with them, the per-process fields' copies hold each pod's share.
    copies: tuple[str, ...] = ()
    # An RE2 pattern of the names of the exporter DaemonSets' pods (exporter_styles.exporter_pod_names): a node spelling
    # matching it is an exporter's own pod name, not a node's (promql.gpus_named). None: no DaemonSet known.
    exporter_pods: str | None = None

    @property
    def uuid(self) -> str:
        """The label the exporter writes a GPU's UUID under: `uuid` with --use-old-namespace, which also names the
        workload labels pod_name, ... (series_labels.uuid_label), `UUID` otherwise."""
        return uuid_label((self.pod, self.namespace, self.container))

    @classmethod
    def from_settings(cls, document: dict[str, Any], virtual_gpus: bool = False) -> "Labels":
        sources = document["node"]
        sources = (sources,) if isinstance(sources, str) else tuple(sources)
        # One spelling is used as it is; several are coalesced into `node`.
        return cls(pod=document["pod"], namespace=document["namespace"], container=document["container"],
                   node_sources=sources, cluster=document["cluster"], node=sources[0] if len(sources) == 1 else "node",
                   copies=VIRTUAL_GPU_COPY_LABELS if virtual_gpus else ())


@dataclass(frozen=True)
class Levels:
    """A warning and a critical level of one threshold."""
    warning: float
    critical: float


class Section:
    """A settings section: typed fields, read-only. `section["key"]` reads a field as well, the form
    definitions (dashboards/*.py, alarms/*.py) written against the plain mapping use."""

    def keys(self) -> list[str]:
        return [f.name for f in fields(self)]

    def __iter__(self):
        return iter(self.keys())

    def __len__(self) -> int:
        return len(fields(self))

    def __contains__(self, key: object) -> bool:
        return key in self.keys()

    def __getitem__(self, key: str) -> Any:
        if key not in self.keys():
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


@dataclass(frozen=True)
class GrafanaFolder(Section):
    """settings `grafana.folder`: the folder the dashboards go in."""
    uid: str
    title: str


@dataclass(frozen=True)
class GrafanaDatasource(Section):
    """settings `grafana.datasource`: the data source type and the one selected first."""
    type: str
    default: str | None


@dataclass(frozen=True)
class GrafanaSettings(Section):
    """settings `grafana`: folder, data source, uids, refresh, time range and tags."""
    folder: GrafanaFolder
    datasource: GrafanaDatasource
    uid_prefix: str
    refresh: str
    time_from: str
    tags: tuple[str, ...]


@dataclass(frozen=True)
class CloudWatchSettings(Section):
    """settings `cloudwatch`: where the metrics live and how dashboards read them."""
    source: str  # "prometheus-emf" (the agent) or "container-insights" (the EKS add-on)
    namespace: str
    dimensions: tuple[str, ...]
    gpu_dimensions: tuple[str, ...]
    dashboard_prefix: str
    period: int
    top_pods: int
    top_gpus: int
    # The add-on's collection intervals (source: container-insights), seconds. The schema gives no default on
    # purpose: a file that does not set them validates to the same document (and settings hash) as before.
    addon_metrics_interval: int = 60
    addon_gpu_interval: int = 60


@dataclass(frozen=True)
class ExporterSettings(Section):
    """settings `exporter`: how and where the DCGM exporter is deployed."""
    deployment: str  # how the exporter is deployed: exporter_styles.STYLES
    namespace: str
    # Some exporters run with KUBERNETES_VIRTUAL_GPUS=true. The schema gives no default on purpose: a file
    # that does not set it validates to the same document (and settings hash in a build's manifest) as before.
    virtual_gpus: bool = False
    # "none": no GPU of the fleet is split into MIG instances, so a field MIG does not report (GPU utilization) reads
    # every GPU and an alarm needs no MIG stand-in (render.alarms.mig_plan); gpudash verify fails an exporter whose
    # series carry a MIG instance. "some" or None (unset): GPUs may be split. A cluster may say otherwise
    # (Cluster.exporter_mig): read it through Settings.no_mig and for_clusters, never here. No schema default, as
    # virtual_gpus.
    mig: str | None = None
    # The DaemonSet's RollingUpdate maxUnavailable: pods (an int) or a percentage of its nodes ("25%"); kube-state-metrics
    # does not expose it. No schema default, as virtual_gpus: 1 is the GPU operator's and the chart's.
    max_unavailable: int | str = 1
    # The exporter DaemonSet's name where it is not the deployment style's (exporter_styles.exporter_daemonset): the
    # CloudWatch agent keeps kube-state-metrics' series of that DaemonSet (and of more_daemonsets'). No schema default,
    # as virtual_gpus.
    daemonset: str | None = None
    # More exporter DaemonSets in each cluster (a chart installed per node pool, or in another namespace): `name` in
    # exporter.namespace, or `namespace/name` (exporter_styles.named_daemonsets). No schema default, as virtual_gpus.
    more_daemonsets: tuple[str, ...] = ()
    # GPU resources advertised under a name of the device plugin's config (nvidia.com/a100), as the exporter's
    # NVIDIA_RESOURCE_NAMES lists them: the data-missing alarm and rule count their nodes as GPU nodes
    # (data_missing.gpu_resources_pattern). No schema default, as virtual_gpus.
    resource_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "more_daemonsets", tuple(self.more_daemonsets))
        object.__setattr__(self, "resource_names", tuple(self.resource_names))
        # JSON Schema's integer admits 1.0: a number of pods is read as the int it is (written `<= 1`, compared as 1)
        if isinstance(self.max_unavailable, float):
            object.__setattr__(self, "max_unavailable", int(self.max_unavailable))


# Prometheus' duration syntax (prometheus/common model.ParseDuration): units from years down to milliseconds, each
# at most once and in that order (`1m30s`, `90s`, `2m`); a year is 365 days. Also how the agent's scrape
# configuration, the OTel receiver and the Prometheus Operator's ServiceMonitor read scrape.interval.
PROMETHEUS_DURATION = re.compile(r"(?:([0-9]+)y)?(?:([0-9]+)w)?(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?"
                                 r"(?:([0-9]+)s)?(?:([0-9]+)ms)?")
_DURATION_UNITS = (365 * 86400, 7 * 86400, 86400, 3600, 60, 1, 0.001)


def duration_seconds(text: str) -> float | None:
    """Seconds of a Prometheus duration (`1m30s` is 90), or None when `text` is not one (`0` is 0, as Prometheus has it)."""
    if text == "0":
        return 0.0
    match = PROMETHEUS_DURATION.fullmatch(text) if text else None
    if match is None:
        return None
    return sum(int(n) * unit for n, unit in zip(match.groups(), _DURATION_UNITS) if n)


@cache  # read for each alarm and rule of each cluster (scrape.seconds): a settings file holds a few intervals
def interval_seconds(interval: str) -> int:
    """Seconds of an interval as settings write it (`30s`, `1m`, `1m30s`: a Prometheus duration the schema let
    through, of whole seconds)."""
    return int(duration_seconds(interval))


@dataclass(frozen=True)
class ScrapeSettings(Section):
    """settings `scrape`: the scrape job's interval and name."""
    interval: str
    job_name: str

    @property
    def seconds(self) -> int:
        """The scrape interval in seconds."""
        return interval_seconds(self.interval)


@dataclass(frozen=True)
class PrometheusStackSettings(Section):
    """settings `prometheus_stack`: the release label and namespace of its objects."""
    release: str | None
    namespace: str | None


@dataclass(frozen=True)
class AgentSettings(Section):
    """settings `agent`: the CloudWatch agent that ships the metrics."""
    namespace: str
    metric_selection: str
    force_flush_interval: int
    log_retention_days: int
    pipeline: str = "otel"  # "otel": the filtering pipeline (agent >= MIN_AGENT_VERSION); "classic": the JSON path
    log_group_in_stack: bool = True  # each cluster's CloudFormation stack creates the EMF log group


@dataclass(frozen=True)
class AlarmActions(Section):
    """settings `alarms.actions`: the SNS topics each severity notifies."""
    critical: tuple[str, ...]
    warning: tuple[str, ...]


@dataclass(frozen=True)
class AlarmSettings(Section):
    """settings `alarms`: names, per-pod mode and actions of the CloudWatch alarms."""
    name_prefix: str
    per_pod: str  # "group_by" or "static"
    static_pods: tuple[str, ...]
    actions: AlarmActions
    framebuffer_free_mib: float
    expected_gpus: str  # what says a GPU should be reporting: "kube-state-metrics" or "none"


@dataclass(frozen=True)
class KubeStateMetricsSettings(Section):
    """settings `kube_state_metrics`: which pods the scrape job for the data-missing alarm reads."""
    namespace: str | None  # None: any namespace
    pod_label: str  # name=value
    port: int


@dataclass(frozen=True)
class ThresholdSettings(Section):
    """settings `thresholds`: the levels panels colour by and alarms fire at."""
    gpu_temp_celsius: Levels
    memory_temp_celsius: Levels
    framebuffer_used_ratio: Levels
    gpu_util_percent: Levels
    idle_gpu_util_percent: float
    idle_minutes: float
    pcie_replays_per_minute: float


@dataclass(frozen=True)
class DefinitionFolders(Section):
    """settings `definitions`: the folders of dashboard and alarm definitions."""
    dashboards: tuple[str, ...] | None  # None: the bundled definitions
    alarms: tuple[str, ...] | None


def _strings(value: Any) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def _sections(document: dict[str, Any]) -> dict[str, Any]:
    """The typed sections of a validated document with its defaults filled in."""
    grafana, alarms = document["grafana"], document["alarms"]
    return {
        "grafana": GrafanaSettings(folder=GrafanaFolder(**grafana["folder"]),
                                   datasource=GrafanaDatasource(**grafana["datasource"]),
                                   **{k: v for k, v in grafana.items() if k not in ("folder", "datasource", "tags")},
                                   tags=tuple(grafana["tags"])),
        "cloudwatch": CloudWatchSettings(**{k: tuple(v) if k in ("dimensions", "gpu_dimensions") else v
                                            for k, v in document["cloudwatch"].items()}),
        "exporter": ExporterSettings(**document["exporter"]),
        "scrape": ScrapeSettings(**document["scrape"]),
        "prometheus_stack": PrometheusStackSettings(**document["prometheus_stack"]),
        "agent": AgentSettings(**document["agent"]),
        "kube_state_metrics": KubeStateMetricsSettings(**document["kube_state_metrics"]),
        "alarms": AlarmSettings(actions=AlarmActions(**{k: tuple(v) for k, v in alarms["actions"].items()}),
                                static_pods=tuple(alarms["static_pods"]),
                                **{k: v for k, v in alarms.items() if k not in ("actions", "static_pods")}),
        "thresholds": ThresholdSettings(**{name: Levels(_level(value["warning"]), _level(value["critical"]))
                                           if isinstance(value, dict) else _level(value)
                                           for name, value in document["thresholds"].items()}),
        "counters": document["counters"],
        "project": document["project"],
        "definitions": DefinitionFolders(**{k: None if v is None else _strings(v)
                                            for k, v in document["definitions"].items()}),
    }


@dataclass(frozen=True)
class Settings:
    """Validated settings, loaded once: every section typed (`settings.alarms.name_prefix`)."""

    source: str  # the config file, or "<defaults>"
    base_dir: Path  # relative paths in the file are resolved from here
    raw: dict[str, Any]  # the validated document with defaults filled in (the build's manifest hashes it)
    clusters: tuple[Cluster, ...]
    labels: Labels
    grafana: GrafanaSettings
    cloudwatch: CloudWatchSettings
    exporter: ExporterSettings
    scrape: ScrapeSettings
    prometheus_stack: PrometheusStackSettings
    agent: AgentSettings
    kube_state_metrics: KubeStateMetricsSettings
    alarms: AlarmSettings
    thresholds: ThresholdSettings
    counters: str | None
    definitions: DefinitionFolders
    project: str | None = None  # names what this project publishes; prune deletes only what carries it
    origin: str = "given"  # how the file was found: see discover()

    def with_cloudwatch_source(self, source: str) -> "Settings":
        """The same settings with cloudwatch.source set to `source` (cost compares the sources)."""
        raw = {**self.raw, "cloudwatch": {**self.raw["cloudwatch"], "source": source}}
        return replace(self, raw=raw, cloudwatch=replace(self.cloudwatch, source=source))

    def levels(self, name: str) -> Levels:
        return self.thresholds[name]

    def threshold(self, name: str) -> float:
        return self.thresholds[name]

    @cached_property
    def memo(self) -> dict[str, Any]:
        """What is worked out from these settings alone and asked for per cluster or per alarm, kept once worked out
        (the settings never change)."""
        return {}

    @cached_property
    def no_mig(self) -> bool:
        """No GPU of any of the settings' clusters is split into MIG instances: each says exporter.mig: none, its own
        (clusters[].exporter.mig) or the fleet's. The strictest of the clusters: a build for some of them reads
        for_clusters' settings."""
        return all(mig_of(self, cluster) == "none" for cluster in self.clusters)

    @cached_property
    def _own_mig(self) -> bool:
        """Some cluster says its own exporter.mig (for_clusters, asked per cluster, reads it once)."""
        return any(cluster.exporter_mig for cluster in self.clusters)

    def for_clusters(self, clusters: Iterable[Cluster]) -> "Settings":
        """The settings as they hold for `clusters` (a cluster, a Region's clusters): exporter.mig none when each of
        them says none, else unset, and no cluster's own exporter.mig, so that no_mig speaks of them alone (the rest
        of the settings, the clusters listed included, unchanged). The settings themselves where no cluster says its
        own; one object per answer, so what is worked out per settings object is worked out once for each."""
        if not self._own_mig:
            return self
        value = "none" if all(mig_of(self, cluster) == "none" for cluster in clusters) else None
        key = ("for_clusters", value)
        if key not in self.memo:
            self.memo[key] = replace(self, exporter=replace(self.exporter, mig=value),
                                     clusters=tuple(replace(c, exporter_mig=None) for c in self.clusters))
        return self.memo[key]

    def mig_groups(self) -> list[tuple["Settings", tuple[Cluster, ...]]]:
        """(for_clusters' settings, the clusters they hold for) of the clusters alike in exporter.mig, in the
        clusters' order: one group where every cluster says the same. Worked out once (asked per alarm, dashboard and
        note: 1,000 clusters were gone through each time)."""
        if "mig_groups" not in self.memo:
            groups: dict[bool, list[Cluster]] = {}
            for cluster in self.clusters:
                groups.setdefault(mig_of(self, cluster) == "none", []).append(cluster)
            self.memo["mig_groups"] = [(self.for_clusters(members), tuple(members)) for members in groups.values()]
        return list(self.memo["mig_groups"])

    @property
    def shared_prometheus(self) -> bool:
        """True when series carry a cluster label, so dashboards get a cluster variable."""
        return any(c.prometheus_label for c in self.clusters)

    @property
    def counters_path(self) -> Path:
        return (self.base_dir / self.counters) if self.counters else default_counters()

    def definition_dirs(self, kind: str) -> tuple[Path, ...]:
        folders = getattr(self.definitions, kind)
        if folders is None:
            return (bundled(kind),)
        return tuple(self.base_dir / folder for folder in folders)


@cache
def _schema() -> dict[str, Any]:
    return json.loads(schema("config.schema.json").read_text())


def rollout_percentage(value: Any) -> bool:
    """`value` is a DaemonSet rollout allowance written as a percentage ("25%"), by the pattern settings'
    exporter.max_unavailable is validated with (the schema holds it once)."""
    pattern = _schema()["properties"]["exporter"]["properties"]["max_unavailable"]["pattern"]
    return isinstance(value, str) and re.search(pattern, value) is not None


def _with_defaults(document: Any, node: dict[str, Any], root: dict[str, Any]) -> Any:
    """Fill missing object properties from the schema's `default` keywords, recursively."""
    if "$ref" in node:
        node = _resolve(node, root)
    if isinstance(document, dict) and "properties" in node:
        for key, sub in node["properties"].items():
            if key not in document and "default" in sub:
                document[key] = copy.deepcopy(sub["default"])
            if key in document:
                document[key] = _with_defaults(document[key], sub, root)
    elif isinstance(document, list) and isinstance(node.get("items"), dict):
        return [_with_defaults(item, node["items"], root) for item in document]
    return document


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in node:
        return {**root["$defs"][node["$ref"].rsplit("/", 1)[1]], **{k: v for k, v in node.items() if k != "$ref"}}
    return node


# --- reading YAML: duplicate keys, depth, lines -------------------------------------------------

def _compose(text: str, source: str) -> yaml.Node | None:
    """The YAML node tree (for lines and duplicate keys); YAML errors become input errors."""
    try:  # libyaml when present: the same nodes and marks, and it stops deep nesting at once
        return yaml.compose(text, Loader=yaml_loader())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark else source
        problem = getattr(exc, "problem", None) or str(exc)
        if "nesting depth" in problem:  # libyaml's limit
            raise InputError("the YAML is nested too deeply to be settings", where=where, hint=SCHEMA_HINT) from None
        if mark and _character_at(text, mark.line, mark.column) == "\t":  # PyYAML and libyaml word it apart
            raise InputError(f"not valid YAML: a tab at column {mark.column + 1}; YAML indents with spaces only",
                             where=where, hint="replace the tab with spaces") from None
        raise InputError(f"not valid YAML: {problem}{yaml_begun(exc)}", where=where,
                         hint="fix the YAML syntax (indentation, quotes, colons)") from None
    except RecursionError:
        raise InputError("the YAML is nested too deeply to be settings", where=source,
                         hint=SCHEMA_HINT) from None


def _character_at(text: str, line: int, column: int) -> str:
    lines = text.split("\n")
    return lines[line][column:column + 1] if line < len(lines) else ""


MAX_VALUES = 100_000  # after YAML aliases are expanded; real settings hold a few hundred


def _check_tree(root: yaml.Node | None, source: str) -> None:
    """Duplicate keys (YAML quietly keeps the last one, hiding a mistake) and alias bombs (a few
    lines of anchors that expand to billions of values). Each node is visited once."""
    if root is None:
        return
    sizes: dict[int, int] = {}
    entered: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        if not children_done and id(node) in entered:
            raise InputError("an alias refers to the anchor it is inside of: the value would never end",
                             where=f"{source}:{node.start_mark.line + 1}", hint="remove the alias")
        entered.add(id(node))
        if isinstance(node, yaml.MappingNode):
            children = [child for pair in node.value for child in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        else:
            children = []
        if not children_done:
            if isinstance(node, yaml.MappingNode):
                seen: dict[str, int] = {}
                for key, _ in node.value:
                    if isinstance(key, yaml.ScalarNode):
                        line = key.start_mark.line + 1
                        if key.value in seen:
                            raise InputError(f"key {key.value!r} appears twice in the same mapping (first at line "
                                             f"{seen[key.value]})", where=f"{source}:{line}",
                                             hint="keep one of the two; YAML would silently use the last")
                        seen[key.value] = line
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
            continue
        sizes[id(node)] = 1 + sum(sizes.get(id(child), 1) for child in children)
        if sizes[id(node)] > MAX_VALUES:
            raise InputError(f"the settings expand to more than {MAX_VALUES:,} values (YAML anchors and aliases)",
                             where=f"{source}:{node.start_mark.line + 1}",
                             hint="write the values out, or use fewer nested aliases")


def _line_of(root: yaml.Node | None, path: list[Any], key: bool = False) -> int | None:
    """1-based line of the node at `path` (of its key, with `key`) in the YAML tree."""
    node = root
    line = node.start_mark.line + 1 if node is not None else None
    for step in path:
        if isinstance(node, yaml.MappingNode):
            match = next(((k, v) for k, v in node.value if k.value == step), None)
            if match is None:
                return line
            node = match[1]
            line = (match[0] if key and step == path[-1] else node).start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
            node = node.value[step]
            line = node.start_mark.line + 1
        else:
            return line
    return line


# --- validation ---------------------------------------------------------------------------------

def _anchored(pattern: str) -> str:
    r"""JSON Schema regexes are ECMA-262, where a final `$` is the end of the text; in Python it also
    matches before a trailing newline, so `"us-east-1\n"` would pass. Use `\Z` for that `$`."""
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        return pattern[:-1] + r"\Z"
    return pattern


@cache
def _validator():
    import jsonschema  # imported here: only runs when there is a document to check

    base = jsonschema.Draft202012Validator

    def pattern(validator, value, instance, node):
        if validator.is_type(instance, "string") and not re.search(_anchored(value), instance):
            yield jsonschema.ValidationError(f"{instance!r} is not {expected(node)}")

    return jsonschema.validators.extend(base, {"pattern": pattern})(_schema())


def expected(node: dict[str, Any]) -> str:
    """What a pattern-checked setting takes, in words: the schema's patternErrorMessage beside the pattern (which
    editors show as well), e.g. "a Prometheus duration of whole seconds above 0, such as 30s, 1m or 1m30s"."""
    return node.get("patternErrorMessage") or f"text matching {node.get('pattern')}"


def _non_finite(document: Any, path: list[Any]) -> list[Any] | None:
    """Path of the first NaN or infinite number (YAML's .nan, .inf), which no threshold can be."""
    if isinstance(document, float) and not math.isfinite(document):
        return path
    children = document.items() if isinstance(document, dict) else \
        enumerate(document) if isinstance(document, list) else ()
    for key, value in children:
        found = _non_finite(value, [*path, key])
        if found is not None:
            return found
    return None


def _example(node: dict[str, Any]) -> str | None:
    """A value to show in a fix: the schema's first example, else the default; a mapping or list as one line of YAML
    (`{warning: 80, critical: 87}`), as a newcomer who wrote `gpu_temp_celsius: 85` needs to see the form."""
    for value in (*node.get("examples", ()), node.get("default")):
        if isinstance(value, (dict, list)) and value:
            return yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=1_000).strip()
        if value is not None and not isinstance(value, (dict, list)):
            return json.dumps(value) if not isinstance(value, str) else value
    return None


def _kinds(value: str | list[str], list_form: str = "", mapping_form: str = "") -> str:
    """A JSON schema's `type` in the settings' words: `a list`, `a mapping`, `text` ..., joined by `or`."""
    words = {"array": f"a list{list_form}", "object": f"a mapping{mapping_form}", "null": "null", "string": "text",
             "number": "a number", "integer": "a whole number", "boolean": "true or false"}
    return " or ".join(words.get(kind, kind) for kind in (value if isinstance(value, list) else [value]))


def _said(error) -> str:
    """A schema error's message in the settings' own terms: a value as YAML writes it (`null`, `true`, `85`), never as
    Python shows it (`None is not of type 'array'`)."""
    if error.validator == "enum":
        return f"{_shown_value(error.instance)} is not one of {', '.join(map(_shown_value, error.validator_value))}"
    if error.validator != "type":
        return error.message
    return f"{_shown_value(error.instance)} is given where {_kinds(error.validator_value)} goes"


def _shown_value(value: Any) -> str:
    """A value as YAML writes it (`null`, `true`, `85`, `'85'` for text that reads as a number), cut at 60 characters."""
    try:
        shown = "no value (null)" if value is None else _as_yaml(value)
    except RecursionError:  # a value nested deeper than the dumper goes (the loader reads deeper)
        shown = f"a {'list' if isinstance(value, list) else 'mapping'} nested {_depth(value)} deep"
    return shown if len(shown) <= 60 else f"{shown[:57]}..."


def _depth(value: Any) -> int:
    """How deep lists and mappings nest in `value` (read without recursion)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            deepest = max(deepest, depth + 1)
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def _fix_for(error, root: dict[str, Any]) -> str:
    """What to write instead, for one schema error."""
    node = _resolve(error.schema, root) if isinstance(error.schema, dict) else {}
    kind, value = error.validator, error.validator_value
    example = _example(node)
    if kind in ("anyOf", "oneOf") and error.context:
        import jsonschema

        return _fix_for(jsonschema.exceptions.best_match(error.context), root)
    if kind == "additionalProperties":
        known = sorted(node.get("properties", {}))
        extra = sorted(map(_yaml_key, set(error.instance) - set(known)))
        from .guesses import did_you_mean

        guess = did_you_mean(extra[0], known) if extra else ""
        return f"{guess}remove {extra[0]!r}, or use one of: {', '.join(known)}"
    if kind == "enum":
        return _meant(error.instance, value) + "write one of: " + ", ".join(map(_shown_value, value))
    if kind == "required":
        missing = [name for name in value if name not in error.instance]
        return "add " + ", ".join(f"`{name}:`" for name in missing)
    if kind == "pattern":
        return f"write {expected(node)}"
    if kind == "type":
        return f"write {_kinds(value, ' ([a, b])', ' (key: value lines)')}" + (f", e.g. {example}" if example else "")
    if kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        bounds = [f"{word} {node[key]}" for key, word in (("minimum", "at least"), ("exclusiveMinimum", "more than"),
                                                          ("maximum", "at most"), ("exclusiveMaximum", "less than"))
                  if key in node]
        step = f", a multiple of {node['multipleOf']:g}" if "multipleOf" in node else ""
        return f"write a number {' and '.join(bounds)}{step}" + (f", e.g. {example}" if example else "")
    if kind == "multipleOf":
        return f"write a multiple of {value:g}" + (f", e.g. {example}" if example else "")
    if kind in ("minItems", "maxItems", "uniqueItems"):
        least, most = node.get("minItems", 0), node.get("maxItems")
        count = f"{least} to {most}" if most is not None and least else f"at most {most}" if most is not None \
            else f"at least {least}" if least else "any number of"
        items = f"{'distinct ' if node.get('uniqueItems') else ''}item{'' if count.endswith(' 1') else 's'}"
        return f"write a list of {count} {items}" + (f", e.g. {example}" if example else "")
    if kind in ("minLength", "maxLength"):
        return f"write text of {node.get('minLength', 0)} to {node.get('maxLength', 'any number of')} characters"
    return SCHEMA_HINT


def _meant(value: Any, choices: list[Any]) -> str:
    """"did you mean 'helm'? " for text that is a choice in other case or close to one; "" otherwise."""
    from .guesses import did_you_mean

    if not isinstance(value, str) or not all(isinstance(choice, str) for choice in choices):
        return ""
    return did_you_mean(value, choices)


def _yaml_key(key: Any) -> str:
    """A key or list index of the settings as YAML writes it: a mapping's keys may be numbers, null, true or dates
    (`1: 2`, `~: x`), never compared with text nor shown in Python's words (`None`, `datetime.date(...)`)."""
    return key if isinstance(key, str) else _as_yaml(key)


def _as_yaml(value: Any) -> str:
    """`value` as one line of YAML (`null`, `true`, `85`, `2024-01-01`, `[a, b]`), without the end-of-document mark
    PyYAML writes after a lone scalar."""
    return yaml.safe_dump(value, default_flow_style=True, width=1_000).strip().removesuffix("...").strip()


def _error_path(error) -> tuple[list[Any], bool]:
    """Path to report for an error; for an unknown key, the key itself (so its own line is named)."""
    path = list(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
        extra = sorted((k for k in error.instance if k not in known), key=_yaml_key)
        if extra:
            return [*path, extra[0]], True
    return path, False


def _where_else(errors: list, first: list[Any], node: yaml.Node | None, shown: int = 3) -> str:
    """Where the settings' other errors are: `: clusters.0 at line 2, labels.pod at line 5` (`this key`: the first's own
    place), the first few, each place once (a newcomer fixing the first error learns where the next ones are before
    running again)."""
    places: list[str] = []
    for error in errors:
        path, key = _error_path(error)
        line = _line_of(node, path, key)
        place = "this key" if path == first else \
            f"{'.'.join(map(_yaml_key, path)) or '(top level)'}{f' at line {line}' if line else ''}"
        if place not in places:
            places.append(place)
    if not places:
        return ""
    return f": {', '.join(places[:shown])}{', ...' if len(places) > shown else ''}"


def _plainly_valid(document: dict[str, Any]) -> bool:
    """A quick yes that spares a valid file the jsonschema import; on no, the full validator decides."""
    return conforms(document, _schema(), lambda pattern, text: re.search(_anchored(pattern), text) is not None)


def _retired(document: dict[str, Any], source: str, node: yaml.Node | None) -> None:
    """Keys that meant something once: say what replaced them instead of "unknown key"."""
    alarms = document.get("alarms")
    if isinstance(alarms, dict) and "scale_to_zero" in alarms:
        line = _line_of(node, ["alarms", "scale_to_zero"], key=True)
        raise InputError("alarms.scale_to_zero is retired: the data-missing alarm now fires only where "
                         "kube-state-metrics says exporter pods should run, so a GPU node group at zero no "
                         "longer alarms, and CloudWatch keeps its alarm (a stopped agent is noticed)",
                         where=f"{source}:{line}" if line else source,
                         hint="delete the scale_to_zero line; to leave the data-missing alarm out instead, "
                              "write alarms.expected_gpus: none")


def namespace_problem(value: str) -> str | None:
    """Why CloudWatch refuses `value` as the namespace of custom metrics, or None. Its API documents a
    namespace as 1 to 255 ASCII characters without control characters, not beginning with ':', with at least
    one that is not a space, and reserves those beginning with AWS/ for AWS services (the schema's pattern
    says the same for editors)."""
    if not 1 <= len(value) <= 255:
        return f"is {len(value)} characters; CloudWatch takes 1 to 255"
    odd = next((c for c in value if not " " <= c <= "~"), None)
    if odd is not None:
        kind = "a control character" if ord(odd) < 32 or ord(odd) == 127 else "a character that is not ASCII"
        return f"holds {kind} ({odd!r}); CloudWatch takes printable ASCII characters only"
    if value.startswith("AWS/"):
        return "begins with AWS/, which CloudWatch keeps for AWS services' own metrics"
    if value.startswith(":"):
        return "begins with ':', which CloudWatch refuses"
    if not value.strip():
        return "is only spaces"
    return None


def _namespace_checked(document: dict[str, Any], source: str, node: yaml.Node | None) -> None:
    """cloudwatch.namespace as CloudWatch takes it, said plainly (the schema's pattern alone says less)."""
    cloudwatch = document.get("cloudwatch")
    value = cloudwatch.get("namespace") if isinstance(cloudwatch, dict) else None
    problem = namespace_problem(value) if isinstance(value, str) else None
    if problem:
        line = _line_of(node, ["cloudwatch", "namespace"])
        raise InputError(f"cloudwatch.namespace {value!r} {problem}", where=f"{source}:{line}" if line else source,
                         hint="write a namespace of your own, such as GPU/DCGM, or leave the key out for "
                              "ContainerInsights/Prometheus")


def validate(document: dict[str, Any], source: str, node: yaml.Node | None) -> None:
    """All checks of a settings document before defaults are filled in; raises the first error."""
    _retired(document, source, node)
    _namespace_checked(document, source, node)
    defaults = {key: node["default"] for key, node in _schema()["properties"]["cloudwatch"]["properties"].items()
                if key in ("dimensions", "gpu_dimensions")}
    dimensions = dimension_problem(document, defaults)  # before the schema's bounds: it says why, and what fits
    if dimensions is not None:
        path, message, hint = dimensions
        line = _line_of(node, path)
        raise InputError(message, where=f"{source}:{line}" if line else source, hint=hint)
    _interval_checked(document, source, node)
    _agent_timing_checked(document, source, node)
    _job_name_checked(document, source, node)
    _node_label_checked(document, source, node)
    errors = [] if _plainly_valid(document) else \
        sorted(_validator().iter_errors(document), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        first = errors[0]
        path, key = _error_path(first)
        line = _line_of(node, path, key)
        dotted = ".".join(map(_yaml_key, path)) or "(top level)"
        message = f"unknown key {_yaml_key(path[-1])!r}" if key else _said(first)
        more = f" (and {len(errors) - 1} more{_where_else(errors[1:], path, node)})" if len(errors) > 1 else ""
        raise InputError(f"{dotted}: {message}{more}", where=f"{source}:{line}" if line else source,
                         hint=_fix_for(first, _schema()))
    bad = _non_finite(document, [])
    if bad is not None:
        raise InputError(f"{'.'.join(map(str, bad))}: not a finite number", where=f"{source}:{_line_of(node, bad)}",
                         hint="write a number such as 80 (.nan and .inf are not levels)")
    for name, levels in (document.get("thresholds") or {}).items():
        if isinstance(levels, dict) and {"warning", "critical"} <= set(levels) and \
                levels["warning"] > levels["critical"]:
            path = ["thresholds", name, "warning"]
            raise InputError(f"thresholds.{name}: the warning level {levels['warning']} is above the critical level "
                             f"{levels['critical']}", where=f"{source}:{_line_of(node, path)}",
                             hint="make warning lower than or equal to critical")


def _check_period(document: dict[str, Any], period_written: bool, source: str, node: yaml.Node | None) -> None:
    """CloudWatch sums and counts per group divide by the observations a GPU makes per period.
    `document` has its defaults filled in; `period_written` says whether the file sets cloudwatch.period."""
    period = document["cloudwatch"]["period"]
    if document["cloudwatch"]["source"] == "container-insights":  # the add-on's DCGM collections, not the scrape
        interval = document["cloudwatch"].get("addon_gpu_interval", CloudWatchSettings.addon_gpu_interval)
        if period % interval:
            written = "addon_gpu_interval" in document["cloudwatch"]
            line = _line_of(node, ["cloudwatch", "period" if period_written or not written else "addon_gpu_interval"])
            raise InputError(f"cloudwatch.period {period} s is not a whole number of the add-on's DCGM collections "
                             f"(cloudwatch.addon_gpu_interval {interval} s): each GPU would report "
                             f"{period / interval:g} times per period, and sums and counts over GPUs would be off",
                             where=f"{source}:{line}" if line else source,
                             hint=f"pick a cloudwatch.addon_gpu_interval that divides cloudwatch.period "
                                  f"({period} s), e.g. {', '.join(str(n) for n in (10, 20, 30, 60) if period % n == 0)}")
        return
    interval = interval_seconds(document["scrape"]["interval"])
    if interval and period % interval:
        line = _line_of(node, ["cloudwatch", "period"] if period_written else ["scrape", "interval"])
        bundled_alarms = (document.get("definitions") or {}).get("alarms") is None
        hint = f"pick a scrape.interval that divides cloudwatch.period: {intervals_dividing(period)}"
        if bundled_alarms and not period_written and period == BUNDLED_ALARM_PERIOD:
            # not 150s: the bundled data-missing alarm's 5-minute periods would hold two scrapes, under the three its
            # agent alarm counts (render.alarms.agent_problem), which generate then warns of (AL029)
            hint = (f"pick a scrape.interval that divides {period} s, cloudwatch.period's default and the period of "
                    f"every bundled alarm, and leaves {AGENT_SCRAPES} scrapes in each: "
                    f"{intervals_dividing(period, longest_interval(period, agent_alarm=True))} (a longer "
                    f"cloudwatch.period alone does not do: the bundled alarms judge 5-minute periods)")
        raise InputError(f"cloudwatch.period {period} s is not a whole number of scrape intervals "
                         f"(scrape.interval {interval} s): each GPU would report {period / interval:g} times "
                         f"per period, and per-pod sums and counts would be off",
                         where=f"{source}:{line}" if line else source, hint=hint)


BUNDLED_ALARM_PERIOD = 300  # the period of every bundled alarm (model.Alarm.period_seconds' default)
# The fewest scrapes a period of the data-missing rule holds for its agent alarm (`<agent>`) to fire: it counts under half
# of a period's scrapes, none at two a period (lint AL028), so the least period that mends its window holds three
# (render.alarms; here, where the settings' own refusal names the intervals that leave them)
AGENT_SCRAPES = 3
# The longest scrape interval a fix names: the longest dividing cloudwatch.period's default 300 s within the agent's
# bounds (agent_timing)
LONGEST_INTERVAL = 150


def longest_interval(period: int, agent_alarm: bool) -> int:
    """The longest scrape interval a fix names for a period of `period` s: where it is the data-missing rule's
    (`agent_alarm`; every bundled alarm's period is the bundled rule's), the longest leaving AGENT_SCRAPES scrapes in
    it, which its agent alarm counts (at two a period it never fires: 150 s for 300 s); else LONGEST_INTERVAL."""
    return period // AGENT_SCRAPES if agent_alarm else LONGEST_INTERVAL


def scrape_intervals(seconds: int, longest: int = LONGEST_INTERVAL) -> list[int]:
    """The scrape intervals of 10 s to `longest` (at most LONGEST_INTERVAL) that divide `seconds`; where none does
    (`longest` under 10 s: a period of 10 s or 20 s Prometheus alone judges), the whole seconds up to `longest` that do,
    which the settings take too."""
    top = min(longest, LONGEST_INTERVAL)
    return [n for n in range(10, top + 1) if seconds % n == 0] or [n for n in range(1, top + 1) if seconds % n == 0]


def intervals_dividing(seconds: int, longest: int = LONGEST_INTERVAL) -> str:
    """scrape_intervals(seconds, longest) written as settings take them."""
    return written_intervals(scrape_intervals(seconds, longest))


def written_intervals(intervals: list[int]) -> str:
    """Scrape intervals in seconds, written as settings take them (`10s, 15s`)."""
    return ", ".join(f"{n}s" for n in intervals)


# Job names gpudash gives its own scrape jobs beside scrape.job_name (the agent's prometheus.yaml and OTel receiver).
RESERVED_JOB_NAMES = (KUBE_STATE_METRICS_JOB,)


def _job_name_checked(document: dict[str, Any], source: str, node: yaml.Node | None) -> None:
    """scrape.job_name is none of the names of gpudash's other scrape jobs: Prometheus' configuration loader (the
    agent's scraper, the receiver, a Prometheus) refuses two jobs of one name, and the agent would scrape nothing."""
    scrape = document.get("scrape")
    name = scrape.get("job_name") if isinstance(scrape, dict) else None
    if name in RESERVED_JOB_NAMES:
        line = _line_of(node, ["scrape", "job_name"])
        raise InputError(f"scrape.job_name {name!r} is the name of gpudash's own kube-state-metrics scrape job in the "
                         f"CloudWatch agent's prometheus.yaml: the agent's Prometheus configuration would hold two "
                         f"jobs of that name, which Prometheus refuses to load, and the agent would scrape nothing",
                         where=f"{source}:{line}" if line else source,
                         hint="give scrape.job_name another name, such as dcgm-exporter (the default)")


def _node_label_checked(document: dict[str, Any], source: str, node: yaml.Node | None) -> None:
    """labels.node as one name other than the three used as they are (`node: instance`): the list of that one label
    is what reads the node from it alone, so the fix writes it."""
    labels = document.get("labels")
    name = labels.get("node") if isinstance(labels, dict) else None
    alone = _schema()["properties"]["labels"]["properties"]["node"]["pattern"]  # the names taken written alone
    if isinstance(name, str) and not re.search(alone, name) and re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", name):
        line = _line_of(node, ["labels", "node"])
        raise InputError(f"labels.node: {name!r} is written alone, which only Hostname, hostname or node may be",
                         where=f"{source}:{line}" if line else source,
                         hint=f"write node: [{name}] to read the node from {name} alone, or a list of labels most "
                              f"trusted first such as [node, Hostname, {name}]")


def _whole_seconds(value: Any) -> int | None:
    """A positive whole number of seconds written as a Prometheus duration (`1m30s`), else None."""
    seconds = duration_seconds(value) if isinstance(value, str) else None
    return int(seconds) if seconds and seconds == int(seconds) else None


def _interval_checked(document: dict[str, Any], source: str, node: yaml.Node | None) -> None:
    """scrape.interval a whole number of seconds: the schema takes Prometheus' syntax (`1500ms` too), and every
    period, rate window and agent bound gpudash works out counts whole scrapes of whole seconds."""
    scrape = document.get("scrape")
    value = scrape.get("interval") if isinstance(scrape, dict) else None
    seconds = duration_seconds(value) if isinstance(value, str) else None
    if seconds and seconds != int(seconds):  # zero: the schema's pattern refuses it
        line = _line_of(node, ["scrape", "interval"])
        raise InputError(f"scrape.interval {value!r} is {seconds:g} s, not a whole number of seconds: "
                         f"CloudWatch periods and alarm periods must be whole numbers of scrapes",
                         where=f"{source}:{line}" if line else source,
                         hint="write a whole number of seconds, such as 30s, 1m or 1m30s")


def _agent_timing_checked(document: dict[str, Any], source: str, node: yaml.Node | None) -> None:
    """The scrape interval and flush interval keep each counter's previous reading in the agent's cache until its
    next one, and each reading in time for the now values (agent_timing). Read before the schema's bounds (it says
    why, and what fits); a value of the wrong kind is judged by its default here (the schema then refuses it)."""
    from .agent_timing import scrape_timeout, timing_problem

    def written(section: str, key: str, valid: Any) -> Any:
        part = document.get(section)
        value = part.get(key) if isinstance(part, dict) else None
        return value if valid(value) else _schema()["properties"][section]["properties"][key]["default"]

    if written("cloudwatch", "source", lambda v: isinstance(v, str)) == "container-insights":
        return  # no agent config of gpudash's: the add-on's agent collects at its own intervals
    interval = interval_seconds(written("scrape", "interval", lambda v: _whole_seconds(v) is not None))
    flush = written("agent", "force_flush_interval", lambda v: isinstance(v, int) and not isinstance(v, bool) and v > 0)
    pipeline = written("agent", "pipeline", lambda v: v in ("otel", "classic"))
    problem = timing_problem(pipeline, interval, scrape_timeout(interval), flush)
    if problem:
        setting, message, hint = problem
        line = _line_of(node, setting.split("."))
        raise InputError(message, where=f"{source}:{line}" if line else source, hint=hint)


def dimensions_lacking(sets: Any) -> list[tuple[str, list[str]]]:
    """(setting, the dimensions it lacks) of cloudwatch.dimensions / gpu_dimensions (`sets`: setting -> value)."""
    return [(name, missing) for name, required in REQUIRED_DIMENSIONS.items()
            if (missing := [d for d in required if d not in sets[name]])]


def _workload_names_checked(labels: dict[str, Any], source: str, node: yaml.Node | None) -> None:
    """labels.pod, labels.namespace and labels.container name the workload labels by one exporter's spelling: the
    exporter run with --use-old-namespace writes all three as pod_name, pod_namespace, container_name, without it as
    pod, namespace, container (either with `exported_` when the operator's ServiceMonitor renames them). A file mixing
    the two (`pod: pod_name` beside the default `namespace: namespace`) reads a label no exporter writes beside one it
    does: refused, naming the keys to write."""
    spelled = {key: str(labels[key]).removeprefix("exported_") for key in ("pod", "namespace", "container")}
    old = {name.removesuffix("_name").removeprefix("pod_") if name != "pod_name" else "pod": name
           for name in OLD_WORKLOAD}  # pod: pod_name, namespace: pod_namespace, container: container_name
    olds = [key for key, name in spelled.items() if name == old[key]]
    news = [key for key, name in spelled.items() if name == key and key in WORKLOAD]
    if not olds or not news:
        return
    line = _line_of(node, ["labels", olds[0]])
    written = ", ".join(f"labels.{key}: {labels[key]}" for key in olds)
    wanted = ", ".join(f"labels.{key}: {str(labels[key]).removesuffix(spelled[key])}{old[key]}" for key in news)
    newer = ", ".join(f"labels.{key}: {str(labels[key]).removesuffix(spelled[key])}{key}" for key in olds)

    def names(keys: list[str]) -> str:
        return "is the name" if len(keys) == 1 else "are the names"
    raise InputError(f"{written} {names(olds)} an exporter run with --use-old-namespace writes, but "
                     f"{', '.join(f'labels.{key}: {labels[key]}' for key in news)} {names(news)} an exporter run "
                     f"without it writes: one exporter writes all three workload labels one way (pod_name, pod_namespace, "
                     f"container_name with the flag; pod, namespace, container without), so the queries and the "
                     f"agent's renames would read a label no series carries",
                     where=f"{source}:{line}" if line else source,
                     hint=f"with --use-old-namespace write {wanted}; without it, {newer}")


# What reading one workload label unrenamed shows where the scrape target carries a label of that name (the GPU
# operator's ServiceMonitor, as prometheus-operator writes every endpoint target: the exporter pod's own pod,
# namespace and container).
_UNRENAMED = {"pod": "every GPU a pod holds would be shown under the exporter's pod",
              "namespace": "every pod would be shown in the exporter's namespace (gpu-operator), and two pods of one "
                           "name in two namespaces would read as one",
              "container": "every pod's container would read as the exporter's container"}


def workload_rename_mix(settings: Settings) -> tuple[str, str, str] | None:
    """(where, what, fix) when labels: reads some workload labels under the `exported_` names Prometheus gives them
    when the scrape target carries a label of the same name (honorLabels false) and others under the exporter's own
    names; None when all three are read one way. Such a scrape renames every workload label the target carries: on
    the GPU operator's ServiceMonitor, which attaches all three, a label read unrenamed is the exporter pod's own.
    A scrape job of the user's own may attach only some (then the mix is right), so this is a warning, not a
    refusal; gpudash's own scrape job and ServiceMonitor deliver the names as declared."""
    labels = settings.labels
    declared = {"pod": labels.pod, "namespace": labels.namespace, "container": labels.container}
    renamed = [key for key, name in declared.items() if name.startswith("exported_")]
    plain = [key for key in declared if key not in renamed]
    if not renamed or not plain:
        return None
    written = ", ".join(f"labels.{key}: {declared[key]}" for key in renamed)
    unrenamed = ", ".join(f"labels.{key}: {declared[key]}" for key in plain)
    what = (f"{written} read{'s' if len(renamed) == 1 else ''} the workload's labels as Prometheus renames them when "
            f"the scrape target carries labels of those names, but {unrenamed} read{'s' if len(plain) == 1 else ''} "
            f"the name unrenamed: through the GPU operator's ServiceMonitor (its targets carry the exporter pod's "
            f"pod, namespace and container) {'; '.join(_UNRENAMED[key] for key in plain)}")
    fix = (", ".join(f"write labels.{key}: exported_{declared[key]}" for key in plain) +
           " (a ServiceMonitor without honorLabels renames all three); keep it only if Prometheus scrapes the exporter "
           f"through gpudash's own scrape job or ServiceMonitor, or a job that attaches no {', '.join(plain)} label")
    return setting_place(settings, ["labels", plain[0]]), what, fix


def unknown_regions(settings: Settings) -> list[tuple[str, str, str]]:
    """(where, what, fix) for each cluster whose Region the installed botocore does not list (`us-wst-2`): publishing
    would fail to reach it. A warning, not a refusal: a Region newer than botocore is real and reachable."""
    unknown = []
    for index, cluster in enumerate(settings.clusters):
        fix = region_unknown(cluster.region)
        if fix is not None:
            unknown.append((setting_place(settings, ["clusters", index, "region"]),
                            f"clusters.{index}.region: {cluster.region!r} is no AWS Region the installed boto3 knows: "
                            f"publishing cannot reach it", fix))
    return unknown


def region_unknown(region: str) -> str | None:
    """The fix for a Region the installed botocore does not list (`us-wst-2`: did you mean us-west-2?), else None (a
    Region it lists, or none can be read)."""
    known = _known_regions()
    if not known or region in known:
        return None
    from .guesses import did_you_mean

    return ((did_you_mean(region, known, quoted=False) or "write the Region's code, such as us-east-1; ") +
            "a Region newer than the installed boto3 is warned of until boto3 is upgraded")


@cache
def _known_regions() -> frozenset[str]:
    """The Regions of every partition in botocore's partitions.json (read without importing botocore); empty when
    it cannot be read."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("botocore")
        folder = Path(next(iter(spec.submodule_search_locations)))
        partitions = json.loads((folder / "data" / "partitions.json").read_text())["partitions"]
        return frozenset(region for partition in partitions for region in partition["regions"])
    except (AttributeError, OSError, ValueError, KeyError, TypeError, StopIteration):
        return frozenset()


def _dimension_sets_checked(document: dict[str, Any], source: str, node: yaml.Node | None) -> None:
    """The per-pod and per-GPU sets the agent publishes name what tells pods and GPUs apart (`document` has its
    defaults filled in; the Container Insights add-on publishes sets of its own)."""
    cloudwatch = document["cloudwatch"]
    if cloudwatch["source"] == "container-insights":
        return
    for name, missing in dimensions_lacking(cloudwatch)[:1]:
        required = REQUIRED_DIMENSIONS[name]
        line = _line_of(node, ["cloudwatch", name])
        raise InputError(f"cloudwatch.{name} [{', '.join(cloudwatch[name])}] lacks {', '.join(missing)}: CloudWatch "
                         f"tells {'pods' if name == 'dimensions' else 'GPUs'} apart by {', '.join(required)} (every "
                         f"widget and alarm reads one cluster by {required[0]})",
                         where=f"{source}:{line}" if line else source,
                         hint=f"write {name}: [{', '.join(REQUIRED_DIMENSIONS[name])}], with more dimensions after "
                              f"them if you want")


def parse_settings(text: str, source: str, base_dir: Path, origin: str = "given") -> Settings:
    node = _compose(text, source)
    _check_tree(node, source)
    try:  # what yaml.safe_load(text) builds, from the nodes already composed (not parsed twice)
        document = None if node is None else yaml.SafeLoader("").construct_document(node)
    except yaml.YAMLError as exc:  # composed fine but cannot be built (e.g. an unsafe tag)
        mark = getattr(exc, "problem_mark", None)
        raise InputError(f"not valid YAML: {getattr(exc, 'problem', None) or exc}",
                         where=f"{source}:{mark.line + 1}" if mark else source,
                         hint="settings are plain YAML: no tags such as !!python") from None
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise InputError("the settings must be a YAML mapping of keys to values", where=f"{source}:1",
                         hint="start from the commented default: gpudash init-config")
    validate(document, source, node)
    period_written = "period" in (document.get("cloudwatch") or {})
    document = _with_defaults(document, _schema(), _schema())
    _check_period(document, period_written, source, node)
    _dimension_sets_checked(document, source, node)
    _workload_names_checked(document["labels"], source, node)
    clusters = tuple(Cluster.from_settings(c) for c in document["clusters"])
    seen: dict[str, int] = {}
    folded: dict[str, int] = {}
    for index, cluster in enumerate(clusters):
        if cluster.name in seen:
            line = _line_of(node, ["clusters", index, "name"])
            raise InputError(f"cluster {cluster.name!r} is listed twice (first as clusters[{seen[cluster.name]}])",
                             where=f"{source}:{line}" if line else source, hint="give every cluster a unique name")
        other = folded.get(cluster.name.casefold())
        if other is not None:  # a build names files by cluster: on macOS or Windows the two would be one file
            line = _line_of(node, ["clusters", index, "name"])
            raise InputError(f"clusters {clusters[other].name!r} (clusters[{other}]) and {cluster.name!r} differ only "
                             f"in upper and lower case: their build files (k8s/cwagent-prometheus-config-<cluster>.yaml, "
                             f"cloudwatch/dashboards/<prefix>-<cluster>-<dashboard>.json) would be one file on a "
                             f"case-insensitive file system (macOS, Windows), where a checkout of the build keeps one "
                             f"cluster's agent config and dashboards and drops the other's",
                             where=f"{source}:{line}" if line else source,
                             hint="generate those clusters from two settings files, each with its own --out folder")
        seen[cluster.name] = folded[cluster.name.casefold()] = index
    _cluster_labels_checked(clusters, document["labels"]["cluster"], source, node)
    settings = Settings(source=source, base_dir=base_dir, raw=document, clusters=clusters,
                        labels=Labels.from_settings(document["labels"], document["exporter"].get("virtual_gpus", False)),
                        origin=origin, **_sections(document))
    return replace(settings, labels=replace(settings.labels, exporter_pods=exporter_pod_names(settings)))


def _cluster_labels_checked(clusters: tuple[Cluster, ...], label: str, source: str, node: yaml.Node | None) -> None:
    """clusters[].prometheus_label tells each cluster's series apart on one Prometheus: every cluster has one, each
    its own. Two clusters of one value would be one cluster to every query and rule (each GPU counted for both, the
    data-missing alert twice); a cluster without one beside clusters with one would be read with no cluster filter,
    counting every cluster's series as its own."""
    labelled = [index for index, cluster in enumerate(clusters) if cluster.prometheus_label]
    if not labelled:
        return
    carried = f"the value its series carry in the {label!r} label"

    def refuse(path: list[Any], message: str, hint: str) -> None:
        line = _line_of(node, path)
        raise InputError(message, where=f"{source}:{line}" if line else source, hint=hint)

    first: dict[str, int] = {}
    for index in labelled:
        value, other = clusters[index].prometheus_label, first.get(clusters[index].prometheus_label)
        if other is not None:
            refuse(["clusters", index, "prometheus_label"],
                   f"clusters {clusters[other].name!r} (clusters[{other}]) and {clusters[index].name!r} "
                   f"(clusters[{index}]) have the same prometheus_label {value!r}: on one Prometheus their series "
                   f"would be one cluster's, each GPU counted for both and the data-missing alert written twice",
                   f"give each cluster {carried} (the Prometheus external label or relabelling that tells them apart)")
        first[value] = index
    unlabelled = next((index for index, cluster in enumerate(clusters) if not cluster.prometheus_label), None)
    if unlabelled is not None:
        refuse(["clusters", unlabelled],
               f"cluster {clusters[unlabelled].name!r} (clusters[{unlabelled}]) has no prometheus_label while "
               f"{clusters[labelled[0]].name!r} has one: with prometheus_label set, gpudash reads one Prometheus "
               f"holding every cluster, and a cluster without one would be read with no cluster filter, counting "
               f"every cluster's series as its own",
               f"set clusters[{unlabelled}].prometheus_label to {carried}; or, with a Prometheus per cluster, set "
               f"prometheus_label on no cluster")


def setting_place(settings: Settings, path: list[Any]) -> str:
    """`file:line` of a key in the file the settings were read from, for an error found after loading
    (the file alone when it cannot be read again; the key's section when the file does not write it)."""
    try:
        target = default_config() if settings.source == BUNDLED_SOURCE else Path(settings.source)
        node = _compose(decode_utf8(read_bytes(target, "settings file", ""), target, "settings file"), settings.source)
    except InputError:
        return settings.source
    line = _line_of(node, path, key=True)
    return f"{settings.source}:{line}" if line else settings.source


def told_at_key(settings: Settings, path: list[Any], error: InputError, hint: str) -> InputError:
    """`error`, met reading the file or folder the settings key at `path` names, told at that key's line: the fix is
    made there, and the path is read from the settings file's folder, which need not be the current one."""
    return InputError(f"{'.'.join(map(_yaml_key, path))}: {printed.path(error.where)}: {error.what}",
                      where=setting_place(settings, path), hint=hint)


def settings_counters(settings: Settings):
    """The catalog of the counters CSV the settings name (`counters`), else of the bundled one. A file `counters` names
    that cannot be read is told at that key (a mistake inside it, at its own line)."""
    from .catalog import load_counters

    path = settings.counters_path
    try:
        return load_counters(path)
    except InputError as error:
        if not settings.counters or error.where != str(path) or path.is_file():  # one it may not read: its own fix
            raise
        raise told_at_key(settings, ["counters"], error,
                          f"correct counters (a path from the settings file's folder, {printed.path(settings.base_dir)}), "
                          f"or remove it to use the bundled CSV") from None


@dataclass(frozen=True)
class Choice:
    """Which settings file a command reads, and why."""

    path: Path | None  # None: the bundled default
    origin: str
    above: str | None = None  # with the bundled default: the project's settings above, not read (settings_above)

    def describe(self) -> str:
        return f"{printed.path(self.path)} ({self.origin})" if self.path else f"the bundled defaults ({self.origin})"


def discover(config: Path | None, environ: dict[str, str] | None = None, cwd: Path | None = None) -> Choice:
    """The one rule every command uses: --config, then GPUDASH_CONFIG, then ./gpudash.yaml, then the
    bundled default."""
    environ = os.environ if environ is None else environ
    if config is not None:
        return Choice(config, "--config")
    if environ.get(ENVIRONMENT_VARIABLE):
        return Choice(Path(environ[ENVIRONMENT_VARIABLE]), ENVIRONMENT_VARIABLE)
    local = (cwd or Path.cwd()) / LOCAL_FILE
    if local.is_file():
        return Choice(Path(LOCAL_FILE) if cwd is None else local, "found in the current folder")
    above = settings_above(cwd or Path.cwd())
    unread = f"; {above}, in a folder above, is not read: pass --config {above} or run from its folder" if above else ""
    return Choice(None, f"no --config, no {ENVIRONMENT_VARIABLE}, no ./{LOCAL_FILE}{unread}", above)


def settings_above(folder: Path) -> str | None:
    """`../gpudash.yaml` (or `../../`...) nearest above `folder` within its project, which a command run from a
    project's subfolder (its definitions, its build) does not read: the bundled defaults it reads instead are another
    fleet's. A project ends at its repository's root (the folder holding `.git`) and below the home folder: a stray
    file in the home folder, or above the repository, is no project's; nor is one above `folder` where `folder` is
    such an end itself (a command run at the repository's root, or in the home folder). Both are taken as their real
    paths: HOME may name the home folder through a symbolic link, and the current folder is a real path."""
    home, here = _home(), folder.resolve()
    for depth, parent in enumerate((here, *here.parents)):
        if parent == home:
            return None
        try:
            if depth and (parent / LOCAL_FILE).is_file():
                return "../" * depth + LOCAL_FILE
            if (parent / ".git").exists():
                return None
        except OSError:  # a folder above that may not be read: no settings of this project there
            return None
    return None


def _home() -> Path | None:
    try:
        return Path.home().resolve()
    except (RuntimeError, KeyError):  # no HOME and no passwd entry
        return None


def _level(value) -> float:
    """A `thresholds` level as a float object of its own, equal to `value`: a bundled definition's level past its unit's
    range is told at the setting it read, found as that object (project._settings_levels), and a YAML alias
    (`warning: &x 1.0`, `critical: *x`, or one key's level aliased by another key) gives both places one object, which
    float() of a float returns as it is: neither could be told. A float made from its own text is a new object."""
    return float(repr(float(value)))


def load_settings(path: Path | None) -> Settings:
    """Settings from `path`, else by the discovery rule (see `discover`)."""
    choice = discover(path)
    if choice.path is None:
        target = default_config()
        source = BUNDLED_SOURCE
    else:
        target = source = choice.path
    hint = {"--config": "pass --config with the path of your gpudash.yaml",
            ENVIRONMENT_VARIABLE: f"fix {ENVIRONMENT_VARIABLE}, or unset it to use ./{LOCAL_FILE}"}.get(
        choice.origin, "create one with: gpudash init-config")
    text = decode_utf8(read_bytes(target, "settings file", hint), target, "settings file")
    return parse_settings(text, source=str(source), base_dir=target.resolve().parent, origin=choice.describe())
