"""A small model of the CloudWatch agent's Prometheus -> EMF path, as its source documents it.

What it does with each scrape of the DCGM exporter (amazon-cloudwatch-agent: plugins/inputs/
prometheus, translator awsemf/prometheus.go, the awsemf exporter's metric_declaration.go):

* the scrape job's target labels join the exporter's labels (`job`, `node`, ...), then its
  metric_relabel_configs apply (keep, drop, replace); a label with an empty value is no label
  (Prometheus drops it);
* `up` and `scrape_*` are internal and dropped; histograms are dropped; a NaN or infinite
  value is dropped (EMF cannot carry it), and for a counter the previous value is forgotten
  too (its delta calculator deletes it) - the only check of a value: any other number,
  DCGM's blank sentinels included, is published;
* counters become the difference to the previous scrape of the same series (the first
  scrape of a series gives nothing): the scraper's DeltaCalculator (calculator.go,
  delta_calculator.go) keys its cache by getUniqMetricKey, the metric's name and every label after
  relabelling, and runs before the EMF declarations choose the dimensions, so each pod's copy of a
  GPU's counter has deltas of its own whatever dimension set publishes it; the cache (mapWithExpiry, CacheTTL
  5 minutes) is cleaned on a counter's reading at least a minute (by scrape time) after the last clean-up, which
  drops every reading stored 5 minutes or more ago by the wall clock (`processing_delay`: when a scrape is handled);
* the agent scrapes with Prometheus's scrape loop, which appends a staleness marker (StaleNaN) for each
  series of the target's previous scrape that this one lacks, and treats a failed scrape (a payload of "")
  as an empty one, so it marks every series; the agent's metricAppender passes the marker on and its
  delta calculator, finding no valid value, forgets the counter's previous value (delta_calculator.go
  `dc.preDataPoints.Delete`): the next reading of the series is only a new baseline, and the increase
  across the failed scrape, or across the scrapes the series was left out of, is published nowhere;
* `ClusterName` is the config's `cluster_name`;
* a declaration applies when its `label_matcher` regex is found (unanchored) in the values
  of `source_labels` joined by ';' and a `metric_selectors` regex is found in the name; each regex, as every relabel
  regex, is Go's regexp's (RE2 syntax), read through generator.go_regex_python as lint reads it (Python's re
  reads `[[:digit:]]`, `$`, `\\d` otherwise);
* a declaration's dimension sets are read as awsemf's metric_declaration.go reads them at start: a set
  of more than 10 names, counted as written, is dropped (a warning in the agent's log), a name written
  twice is kept once, and a set equal to an earlier one (as sets of names) is dropped (`declared_sets`);
* each of its dimension sets is emitted only when every dimension is a label of the sample;
  the same set from two declarations is emitted once.

The output is the datapoints CloudWatch would store: (metric, dimensions, timestamp, value).
"""

from __future__ import annotations

import copy
import json
import math
import re
from dataclasses import dataclass
from typing import Iterable

import yaml

from generator.go_regex_python import Unreadable, go_compiled


@dataclass(frozen=True)
class Datapoint:
    namespace: str
    metric: str
    dimensions: tuple[tuple[str, str], ...]  # sorted (name, value)
    timestamp: float
    value: float

    def dims(self) -> dict[str, str]:
        return dict(self.dimensions)


_NEW, _SET = object.__new__, object.__setattr__


def datapoints(namespace: str, metric: str, dimension_sets, timestamp: float, value: float) -> list[Datapoint]:
    """[Datapoint(namespace, metric, dims, timestamp, value) for dims in dimension_sets]: the same frozen datapoints,
    equal and hashed alike, each given its fields at once (the dataclass's __init__ sets them one by one through
    object.__setattr__: half of what the agent models spend publishing a fleet of 500 GPUs, a million points)."""
    made = []
    for dims in dimension_sets:
        point = _NEW(Datapoint)
        _SET(point, "__dict__", {"namespace": namespace, "metric": metric, "dimensions": dims, "timestamp": timestamp,
                                 "value": value})
        made.append(point)
    return made


@dataclass(frozen=True)
class Scrape:
    """One scrape of one exporter target: when, what it served, and the labels the job attaches."""

    timestamp: float
    payload: str
    target_labels: dict[str, str]


MAX_DIMENSIONS = 10  # metric_declaration.go: `if len(dimSet) > 10` drops the set
CACHE_TTL, CLEAN_UP_AFTER = 300.0, 60.0  # the JSON path's counter cache (delta_calculator.go: CacheTTL, CleanUpTimeThreshold)


def declared_sets(dimensions: Iterable[Iterable[str]] | None) -> list[tuple[str, ...]]:
    """A declaration's dimension sets as awsemf keeps them (MetricDeclaration.init): sets of more than 10
    names (before repeats are removed) dropped, each set's names without repeats and sorted, and a set
    already kept dropped."""
    kept: list[tuple[str, ...]] = []
    for written in dimensions or []:
        written = list(written)
        if len(written) > MAX_DIMENSIONS:
            continue
        names = tuple(sorted(set(written)))
        if names not in kept:
            kept.append(names)
    return kept


_SAMPLE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$')
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
_ESCAPED = re.compile(r"\\(.)")
_REFERENCE = re.compile(r"\$\{?(\w+)\}?")  # $1 / ${1} in a relabel replacement


def exposition(text: str):
    """(name, type, labels, value) of each sample in Prometheus text format; the type from `# TYPE`. The same
    payload is read by each agent model a test runs over one fleet's scrapes: each text is read once (the
    samples, and their labels dicts, are shared: callers copy a dict before they change it)."""
    samples = _EXPOSED.get(text)
    if samples is None:
        if len(_EXPOSED) > 2_000:  # (a few hundred kB each at most)
            _EXPOSED.clear()
        samples = _EXPOSED[text] = tuple(_exposition(text))
    return iter(samples)


_EXPOSED: dict[str, tuple] = {}


def _exposition(text: str):
    kinds: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(None, 3)
            kinds[name] = kind.strip()
            continue
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        assert match, f"not an exposition sample: {line}"
        name, labels, value = match.groups()
        yield name, kinds.get(name, "untyped"), _labels(labels or ""), float(value)


_PARSED: dict[str, dict[str, str]] = {}


def _labels(text: str) -> dict[str, str]:
    """The labels between a sample's braces. A fleet serves the same label sets at every scrape: each text is
    read once (the dict is shared: callers copy it before they change it)."""
    parsed = _PARSED.get(text)
    if parsed is None:
        if len(_PARSED) > 100_000:
            _PARSED.clear()
        parsed = _PARSED[text] = {k: _ESCAPED.sub(r"\1", v) if "\\" in v else v for k, v in _LABEL.findall(text)}
    return parsed


_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: bytes | str):
    """yaml.safe_load through libyaml's safe loader where PyYAML has it: the models read each generated file
    several times, which the pure-Python loader does about seven times slower."""
    return yaml.load(text, Loader=_SAFE_LOADER)


def safe_load_all(text: bytes | str) -> list:
    """yaml.safe_load_all, as `safe_load` reads (every document)."""
    return list(yaml.load_all(text, Loader=_SAFE_LOADER))


def _otel(configmaps_yaml: bytes | str) -> dict | None:
    """The collector configuration the file carries beside cwagentconfig.json (agent.pipeline: otel), or None."""
    from tests.support.cloudwatch_otel import OTEL_KEY, otel_config

    if configmaps_yaml not in _HAS_OTEL:  # (the file's documents read once per exact text)
        documents = safe_load_all(configmaps_yaml)
        agent = next(d for d in documents if "cwagentconfig.json" in d["data"])
        if len(_HAS_OTEL) > 256:
            _HAS_OTEL.clear()
        _HAS_OTEL[configmaps_yaml] = OTEL_KEY in agent["data"]
    return otel_config(configmaps_yaml) if _HAS_OTEL[configmaps_yaml] else None


_HAS_OTEL: dict[bytes | str, bool] = {}


def agent_config(configmaps_yaml: bytes | str) -> tuple[dict, dict]:
    """(the config that publishes, the DCGM scrape job) from a generated ConfigMap file: the collector
    configuration and its receiver's job when the file has one, else cwagentconfig.json and prometheus.yaml's."""
    otel = _otel(configmaps_yaml)
    if otel is not None:
        from tests.support.cloudwatch_otel import receiver_jobs

        return otel, next(iter(receiver_jobs(otel).values()))
    documents = safe_load_all(configmaps_yaml)
    agent = next(d for d in documents if "cwagentconfig.json" in d["data"])
    scrape = next(d for d in documents if "prometheus.yaml" in d["data"])
    return (json.loads(agent["data"]["cwagentconfig.json"]),
            safe_load(scrape["data"]["prometheus.yaml"])["scrape_configs"][0])


def _relabeled(rules: list[dict], labels: dict[str, str]) -> dict[str, str] | None:
    """Prometheus metric_relabel_configs keep / drop / replace / labeldrop (None: dropped): the source labels'
    values joined by the separator (default ';') against the fully anchored regex (default '(.*)'); `replace`
    sets target_label to the replacement with $n expanded (an empty result removes the label); `labeldrop` removes
    every label whose name the regex matches whole. Any other action is refused, not passed over."""
    labels = dict(labels)
    for rule in rules:
        action = rule.get("action", "replace")
        assert action in ("keep", "drop", "replace", "labeldrop"), f"relabel action the model does not know: {action}"
        if action == "labeldrop":
            labels = {name: value for name, value in labels.items() if not go_compiled(rule["regex"]).fullmatch(name)}
            continue
        value = rule.get("separator", ";").join(labels.get(name, "") for name in rule.get("source_labels", []))
        match = go_compiled(rule.get("regex", "(.*)"), groups=True).fullmatch(value)
        if action in ("keep", "drop"):
            if (match is not None) != (action == "keep"):
                return None
        elif action == "replace" and match is not None:
            replacement = rule.get("replacement", "$1")
            result = _REFERENCE.sub(lambda m: match.group(int(m[1])) or "" if m[1].isdigit() else "",
                                    replacement) if "$" in replacement else replacement
            if result:
                labels[rule["target_label"]] = result
            else:
                labels.pop(rule["target_label"], None)
    return labels


def scrape_jobs(configmaps_yaml: bytes | str) -> dict[str, dict]:
    """Every job the agent scrapes with, by name: its receiver's when it runs the OTel pipeline, else
    prometheus.yaml's."""
    otel = _otel(configmaps_yaml)
    if otel is not None:
        from tests.support.cloudwatch_otel import receiver_jobs

        return receiver_jobs(otel)
    documents = safe_load_all(configmaps_yaml)
    scrape = next(d for d in documents if "prometheus.yaml" in d["data"])
    return {job["job_name"]: job for job in safe_load(scrape["data"]["prometheus.yaml"])["scrape_configs"]}


def Agent(config: dict, job: dict | None = None, others: Iterable[dict] = (), only: Iterable[tuple] | None = None):
    """The model of the pipeline `config` describes: a collector configuration (the OTel pipeline, which
    scrapes with its own receiver's jobs) or cwagentconfig.json (the JSON path, with `job` and `others`).
    `only`: see Pipeline.only."""
    if "receivers" in config:
        from tests.support.cloudwatch_otel import OtelAgent

        agent = OtelAgent(config)
    else:
        agent = JsonAgent(config, job, others)
    agent.only = None if only is None else frozenset(only)
    return agent


def emf_format(config: dict) -> tuple[str, dict[str, str]]:
    """(namespace, unit of each metric) the agent's EMF events name, from either pipeline's configuration."""
    if "receivers" in config:
        from tests.support.cloudwatch_otel import _component

        emf = _component(config, "exporters", "awsemf")
        return emf["namespace"], {d["metric_name"]: d["unit"] for d in emf["metric_descriptors"]}
    emf = config["logs"]["metrics_collected"]["prometheus"]["emf_processor"]
    return emf["metric_namespace"], emf["metric_unit"]


class LogEvents:
    """The EMF log events an agent writes, as its exporter groups the datapoints into them.

    awsemf (exporter/awsemfexporter grouped_metric.go addToGroupedMetric, metric_translator.go
    groupedMetricMetadata) makes one event of the datapoints that share their namespace, timestamp, log group
    and stream, metric type (Gauge, Sum, ...) and every label (aws.NewKey(metadata, labels)); each event holds
    its labels and metrics as fields, and when a declaration matches, the `CloudWatchMetrics` directive naming
    the metrics and their dimension sets (translateCWMetricToEMF). An event whose metrics no declaration matches
    is written all the same, as a plain log event (only Enhanced Container Insights drops it). On the JSON path
    the scraper has already merged one scrape's samples by their labels (plugins/inputs/prometheus utils.go
    mergeMetrics), `prom_metric_type` among them, so a label set's gauges and its counters are two events
    there too."""

    def __init__(self):
        # (timestamp, type, labels) -> {metric: its dimension sets (names to values)}
        self.groups: dict[tuple, dict[str, list[dict[str, str]]]] = {}

    def add(self, scrape: Scrape, kind: str, labels: dict[str, str], metric: str,
            dimensions: list[dict[str, str]]) -> None:
        """One datapoint of `scrape`. Prometheus spreads its targets' scrapes over the interval (each target at an
        offset of its own), so two targets' datapoints never share a timestamp: their events are apart; the
        first of a metric in an event is kept (awsemf logs "Duplicate metric found" for a second)."""
        key = (scrape.timestamp, tuple(sorted(scrape.target_labels.items())), kind, tuple(sorted(labels.items())))
        self.groups.setdefault(key, {}).setdefault(metric, dimensions)

    def at(self, timestamp: float) -> list[tuple[str, dict[str, str], dict[str, list[dict[str, str]]]]]:
        """The events of the scrapes at one time: (type, labels, {metric: its dimension sets})."""
        return [(kind, dict(labels), metrics) for (t, _, kind, labels), metrics in self.groups.items()
                if t == timestamp]

    def message(self, namespace: str, labels: dict[str, str], metrics: dict[str, list[dict[str, str]]],
                units: dict[str, str], timestamp_ms: int = 1_700_000_000_000) -> str:
        """An event's text as awsemf's EMF version 0 writes it: the labels and metrics as fields, `Version`,
        `Timestamp`, and `CloudWatchMetrics`: the metrics of one choice of dimension sets in one measurement
        (the value here: a number of the size a reading has)."""
        fields: dict = dict(labels)
        fields.update({"Version": "0", "Timestamp": str(timestamp_ms)})
        measurements: dict[tuple, list[dict[str, str]]] = {}
        for name, dims in metrics.items():
            if dims:
                key = tuple(tuple(sorted(d)) for d in dims)
                measurements.setdefault(key, []).append({"Name": name, **({"Unit": units[name]} if name in units
                                                                           else {})})
        if measurements:
            fields["CloudWatchMetrics"] = [{"Namespace": namespace, "Dimensions": [list(d) for d in key],
                                            "Metrics": named} for key, named in measurements.items()]
        fields.update({name: 1234.5678 for name in metrics})
        return json.dumps(fields, separators=(",", ":"))


class Pipeline:
    """A model of one of the agent's paths: `scrape` turns one scrape into datapoints.

    `only`: None (every datapoint), or the (namespace, metric, dimension names as a frozenset) of the datapoints kept
    (cloudwatch_eval.reads: those an alarm or widget reads). The datapoints of other dimension sets are left out as
    they are made, nothing else: which sets a series is published with, a counter's deltas (kept per series, before
    any set) and what was dropped or exported do not depend on it, so the datapoints are exactly those of the whole
    run that `only` names, in the same order. A story of 500 GPUs publishes each reading in several sets and an
    alarm reads one of them. Set it before the first scrape; the EMF log events (`events`) are of the kept sets."""

    only: frozenset | None = None

    def _kept(self, metric: str, dimension_sets: list[tuple]) -> list[tuple]:
        """The dimension sets (with their values) of `metric`'s datapoints that `only` keeps."""
        if self.only is None:
            return dimension_sets
        return [dims for dims in dimension_sets
                if (self.namespace, metric, frozenset(name for name, _ in dims)) in self.only]

    def scrape(self, scrape: Scrape) -> list[Datapoint]:
        raise NotImplementedError

    def run(self, scrapes: Iterable[Scrape]) -> list[Datapoint]:
        datapoints = []
        for scrape in sorted(scrapes, key=lambda s: s.timestamp):
            datapoints += self.scrape(scrape)
        return datapoints

    def __deepcopy__(self, memo: dict) -> "Pipeline":
        """A copy that goes on from this agent's state on its own (tests run one prefix of scrapes once and several
        stories on from copies of it). What the model worked out once per series or value (`_known_*`: a function of
        its key and the configuration alone, never changed once stored, as every later scrape of the same agent
        reads it) is shared, not copied: it was most of what a deep copy copied."""
        copied = object.__new__(type(self))
        memo[id(self)] = copied
        copied.__dict__.update({name: value if name.startswith("_known") else copy.deepcopy(value, memo)
                                for name, value in self.__dict__.items()})
        return copied


def awsemf_initialised(declaration: dict) -> bool:
    """awsemf's MetricDeclaration.init, which Config.Validate runs on each declaration, dropping one it refuses
    ("Dropped metric declaration."): no metric_name_selectors; a label matcher without label names or regex, or whose
    regex Go's regexp.Compile refuses. A selector Go refuses is compiled with regexp.MustCompile: the agent stops as it
    starts (raised here)."""
    if not declaration.get("metric_name_selectors"):
        return False
    for selector in declaration["metric_name_selectors"]:
        go_compiled(selector)
    for matcher in declaration.get("label_matchers") or []:
        if not matcher.get("label_names") or not matcher.get("regex"):
            return False
        try:
            go_compiled(matcher["regex"])
        except Unreadable as exc:
            if not exc.refused:  # Go takes it: the model cannot tell what it passes
                raise
            return False
    return True


def _translated(declaration: dict) -> dict:
    """A JSON-path declaration as the agent's translator (translate/otel/exporter/awsemf/prometheus.go) hands it to
    awsemf: source_labels and label_matcher, where both are written (label_matcher empty too), one label matcher."""
    translated = {"metric_name_selectors": declaration.get("metric_selectors")}
    if "source_labels" in declaration and "label_matcher" in declaration:
        translated["label_matchers"] = [{"label_names": declaration["source_labels"],
                                         "regex": declaration["label_matcher"]}]
    return translated


class JsonAgent(Pipeline):
    """The agent's JSON `prometheus` path (agent.pipeline: classic)."""

    def __init__(self, config: dict, job: dict | None = None, others: Iterable[dict] = ()):
        # The scrape job's metric_relabel_configs (keep / drop); without a job, DCGM_.* is kept.
        # A scrape whose `job` target label names one of `others` goes through that job's rules.
        self.relabel = (job or {}).get("metric_relabel_configs") or [
            {"source_labels": ["__name__"], "regex": "DCGM_.*", "action": "keep"}]
        self.relabel_by_job = {other["job_name"]: other.get("metric_relabel_configs") or [] for other in others}
        prometheus = config["logs"]["metrics_collected"]["prometheus"]
        self.cluster_name = prometheus.get("cluster_name")
        emf = prometheus["emf_processor"]
        self.namespace = emf.get("metric_namespace", "ContainerInsights/Prometheus")
        # Declarations without source_labels or metric_selectors are dropped by the agent, and those awsemf drops.
        self.declarations = [d for d in emf.get("metric_declaration", [])
                             if d.get("source_labels") and d.get("metric_selectors")
                             and awsemf_initialised(_translated(d))]
        # a counter's previous reading: (value, when its scrape was handled), kept as delta_calculator.go keeps it
        self._previous: dict[tuple, tuple[float, float]] = {}
        self._last_cleanup = 0.0  # the scrape time of the cache's last clean-up
        # how long after its scrape's timestamp a scrape's samples are handled (wall clock): tests choose it
        self.processing_delay = 0.0
        self._sets: dict[tuple, list[tuple[str, ...]]] = {}
        self._known_series: dict[tuple, tuple | None] = {}
        self._last_series: dict[tuple, dict[tuple, str]] = {}  # each target's series at its last scrape, their kind
        self.events: LogEvents | None = None  # set to a LogEvents to record the EMF log events written

    def _dimension_sets(self, name: str, labels: dict[str, str]) -> list[tuple[str, ...]]:
        key = (name, tuple(sorted(labels)), tuple(labels.get(l, "") for d in self.declarations
                                                   for l in d["source_labels"]))
        if key not in self._sets:
            self._sets[key] = self._match(name, labels)
        return self._sets[key]

    def _match(self, name: str, labels: dict[str, str]) -> list[tuple[str, ...]]:
        sets: list[tuple[str, ...]] = []
        for declaration in self.declarations:
            values = ";".join(labels.get(label, "") for label in declaration["source_labels"])
            if not go_compiled(declaration.get("label_matcher", "")).search(values):
                continue
            if not any(go_compiled(selector).search(name) for selector in declaration["metric_selectors"]):
                continue
            for dims in declared_sets(declaration.get("dimensions")):
                if all(d in labels for d in dims) and dims not in sets:
                    sets.append(dims)
        return sets

    def scrape(self, scrape: Scrape) -> list[Datapoint]:
        """One scrape of one target; a payload of "" is a failed scrape."""
        result = []
        seen: dict[tuple, str] = {}
        for name, kind, sample_labels, value in exposition(scrape.payload):
            if kind not in ("gauge", "counter", "summary") or name == "up" or name.startswith("scrape_"):
                continue
            series = self._series(name, sample_labels, scrape.target_labels)
            if series is None:
                continue  # the scrape job's metric_relabel_configs
            name, key, dimensions = series
            seen[key] = kind
            if math.isnan(value) or math.isinf(value):
                if kind == "counter":  # the agent forgets the series' previous value: the next gives nothing
                    self._previous.pop(key, None)
                continue
            if kind == "counter":
                previous = self._previous.get(key)
                self._clean_up(scrape)
                self._previous[key] = (value, scrape.timestamp + self.processing_delay)
                if previous is None:
                    continue
                value = value - previous[0] if value >= previous[0] else value  # a reset starts over
            # the scraper merges a scrape's samples by their labels, prom_metric_type (the sample's type) among them
            if self.events is not None:
                self.events.add(scrape, "Gauge", {**dict(key[1]), "prom_metric_type": kind}, name,
                                [dict(dims) for dims in dimensions])
            result += datapoints(self.namespace, name, dimensions, scrape.timestamp, value)
        self._mark_stale(scrape, seen)
        return result

    def _clean_up(self, scrape: Scrape) -> None:
        """delta_calculator.go: on a counter's reading at least CLEAN_UP_AFTER past the last clean-up (by the scrape's
        timestamp), the cache drops every reading handled CACHE_TTL or more ago by the wall clock (when this scrape is
        handled): the reading of another counter of the same target, handled a little earlier at its last scrape
        than this one is now, is gone at a scrape interval of CACHE_TTL."""
        if scrape.timestamp - self._last_cleanup < CLEAN_UP_AFTER:
            return
        now = scrape.timestamp + self.processing_delay
        self._previous = {key: kept for key, kept in self._previous.items() if now - kept[1] < CACHE_TTL}
        self._last_cleanup = scrape.timestamp

    def _mark_stale(self, scrape: Scrape, seen: dict[tuple, str]) -> None:
        """The staleness markers the scrape loop appends after the scrape's samples, for each series of the target's
        previous scrape that this one lacks (all of them when it failed): a counter's previous value is forgotten."""
        target = tuple(sorted(scrape.target_labels.items()))
        for key, kind in self._last_series.get(target, {}).items():
            if key not in seen and kind == "counter":
                self._previous.pop(key, None)
        self._last_series[target] = seen

    def _series(self, name: str, sample_labels: dict[str, str], target_labels: dict[str, str]):
        """What the agent makes of one series whatever its value: None when the job's metric_relabel_configs
        drop it, else (name, the counter's cache key, the dimension sets with their values). A fleet serves
        the same series at every scrape: each is worked out once."""
        key = (name, tuple(sample_labels.items()), tuple(target_labels.items()))
        if key in self._known_series:
            return self._known_series[key]
        labels = {k: v for k, v in {**sample_labels, **target_labels}.items() if v != ""}
        rules = self.relabel_by_job.get(target_labels.get("job"), self.relabel)
        relabeled = _relabeled(rules, {**labels, "__name__": name})
        if relabeled is None:
            series = None
        else:
            name = relabeled.pop("__name__")
            labels = {k: v for k, v in relabeled.items() if v != ""}
            if self.cluster_name:
                labels["ClusterName"] = self.cluster_name
            series = (name, (name, tuple(sorted(labels.items()))), self._kept(
                name, [tuple(sorted((d, labels[d]) for d in dims)) for dims in self._dimension_sets(name, labels)]))
        self._known_series[key] = series
        return series
