"""A small model of the CloudWatch agent's OpenTelemetry path that gpudash writes
(prometheus receiver -> its processors, in the order the pipeline lists them: transform (gauges), filter (markers),
metricstransform (pods), filter (blanks), metricstransform, transform (the no-data flag) -> awsemf), run on the
GENERATED collector configuration.

What it does with each scrape, as the sources document it (opentelemetry-collector-contrib, the
amazon-contributing fork the agent builds: receiver/prometheusreceiver, processor/filterprocessor,
pkg/ottl, exporter/awsemfexporter, internal/aws/metrics; upstream contrib's processor/metricstransformprocessor
at v0.124.1, which the agent bundles from 1.300066.0 on, with internal/coreinternal/aggregateutil):

* the agent's collector reads its configuration in two passes: the confmap resolver turns `$$` into
  `$`, then the expandconverter expands `$NAME`, `${NAME}`, `$1`, ... (unset: empty), `$$` being `$`;
* the receiver scrapes with the job's relabelling (dcgm_fleet.discovered gives the target labels)
  and metric_relabel_configs (keep, drop, replace), and adds the scrape's own series (up, scrape_*)
  with the target's labels; `job` and `instance` go into the resource (service.name,
  service.instance.id), not onto the datapoint; an empty label is no label; a gauge becomes a
  Gauge, a counter a cumulative Sum; a series of the target's previous scrape that this one lacks gets a
  staleness marker (a point without value, flagged NoRecordedValue) after the scrape's samples, and a failed
  scrape (a payload of "") marks every series so;
* the first transform processor (transform/gpudash-gauges) runs OTTL's convert_sum_to_gauge() on the metrics its
  condition names (a Sum becomes a Gauge: awsemf publishes its readings, not their differences, see _sums_to_gauges),
  and convert_gauge_to_sum("cumulative", true) on those of its other (a Gauge becomes a cumulative Sum: awsemf
  publishes its differences);
* a filter processor (each of the pipeline's, in its place) drops a datapoint for which any of its `metrics.datapoint` holds: the OTTL
  conditions are parsed from the configuration and evaluated here (the subset gpudash writes:
  IsMatch, metric.name, value_double, flags (1 for a staleness marker), comparisons, and / or / not, parentheses);
* metricstransform runs its transforms in order on one scrape's metrics (insert: a transformed copy of each
  matching metric, of its points whose labels match experimental_match_labels when it has them; update: in place;
  combine: the matching metrics' points in one metric, those of one label set merged, unless the metrics' points
  name different labels; new_name expanded from the include pattern; aggregate_labels: labels outside label_set
  removed, the points of one label set merged into the first one's by max, sum, count, median or mean, see _merged;
  add_label; experimental_scale_value);
* transform sets a datapoint's value_double where its condition holds, its statements in order (see _statements): a
  number, a number less the value, or OTTL's Double of one of the point's labels plus a number;
* awsemf drops a point flagged NoRecordedValue, NaN and infinite values (the counter's previous value is kept), turns a cumulative
  Sum into the difference to the previous datapoint of the same labels (the first gives nothing, or
  itself with retain_initial_value_of_delta_metric;
  a smaller value is sent as it is, a reset), forgets a previous value at the first sweep of its cache
  (every 15 minutes from the exporter's start) that finds it 15 minutes old or more (by the datapoint's timestamp:
  the fork's internal/aws/metrics/metric_calculator.go, `cleanInterval = 15 * time.Minute` at
  306057926a7b0902da29f4dc9a9b77cbec6161cf, where upstream contrib's copy has 5 minutes; the agent's go.mod replaces
  upstream's internal/aws/metrics with the fork's from 1.300058.0 on, aws/amazon-cloudwatch-agent a8af9da70 "Import
  /internal/aws/metrics from aws otel contrib", RELEASE_NOTES 1.300058.0 "Increased data cache TTL and cleanup
  interval to support metric collection intervals greater than 300s"; the otel pipeline needs 1.300066.0, and HEAD
  ab55b8daa pins the fork at 5cc6f180ecb6 with the same replace), and emits each
  dimension set of each declaration whose label_matchers (none: every label set) and metric_name_selectors (unanchored) match, when every
  dimension is a label of the datapoint; the sets are read as the JSON path's model reads them (declared_sets: more
  than 10 names dropped, a repeated name kept once).
"""

from __future__ import annotations

import functools
import math
import operator
import pickle
import re
from dataclasses import dataclass, field

from generator.go_regex_python import go_compiled
from tests.support.cloudwatch_agent import (Datapoint, LogEvents, Pipeline, Scrape, _relabeled, awsemf_initialised,
                                              datapoints, declared_sets, exposition, safe_load, safe_load_all)

OTEL_KEY = "gpudash-otel.yaml"
CACHE_TTL = 900.0  # internal/aws/metrics: cleanInterval (the fork's 15 minutes, see the module docstring)


class _ByIdentity:
    """`work(labels)` of each labels dict, worked out once while the dict is held. A fleet's series keep their labels'
    dicts from scrape to scrape through the whole pipeline (the receiver's from OtelAgent._series, the target's per
    target, a transform's from the dicts it was given: each made once, see _interned), so what the model reads of a
    point's labels (sorted, filtered, matched) is read once per series, not at every scrape. Each entry holds its dict,
    so its id is never another's meanwhile; the dicts are only read (no step of the model changes a labels dict)."""

    def __init__(self, work):
        self.work, self.known = work, {}

    def __call__(self, labels: dict):
        entry = self.known.get(id(labels))
        if entry is None:
            if len(self.known) > 200_000:
                self.known.clear()
            entry = self.known[id(labels)] = (labels, self.work(labels))
        return entry[1]


_sorted_items = _ByIdentity(lambda labels: tuple(sorted(labels.items())))
_INTERNED: dict[tuple, dict] = {}


def _interned(items: tuple) -> dict:
    """dict(items) (sorted items), one dict for each content: a merged group's or a staleness marker's labels."""
    labels = _INTERNED.get(items)
    if labels is None:
        if len(_INTERNED) > 100_000:
            _INTERNED.clear()
        labels = _INTERNED[items] = dict(items)
    return labels


_SPECIAL = set("*#$@!?-0123456789")


def _os_expand(text: str, env: dict[str, str]) -> str:
    """Go's os.Expand(text, mapping) with the expandconverter's mapping: `$$` is `$`, a name is looked up in
    `env` (unset: empty); `$` before anything that is no name stays."""
    out, i = [], 0
    while i < len(text):
        if text[i] != "$" or i + 1 == len(text):
            out.append(text[i])
            i += 1
            continue
        rest = text[i + 1:]
        if rest[0] == "{":
            if len(rest) > 2 and rest[1] in _SPECIAL and rest[2] == "}":
                name, width = rest[1], 3
            else:
                close = rest.find("}")
                name, width = ("", 1) if close < 0 else ("", 2) if close == 1 else (rest[1:close], close + 1)
        elif rest[0] in _SPECIAL:
            name, width = rest[0], 1
        else:
            width = 0
            while width < len(rest) and (rest[width].isascii() and (rest[width].isalnum() or rest[width] == "_")):
                width += 1
            name = rest[:width]
        if name == "" and width == 0:
            out.append("$")  # no name follows: the `$` stays
        elif name:
            out.append("$" if name == "$" else env.get(name, ""))
        i += 1 + width
    return "".join(out)


def _unescape(value):
    """A configuration string as the agent's collector reads it: the confmap resolver turns `$$` into `$`,
    then the expandconverter (the agent's service/configprovider) expands the rest as os.Expand does."""
    if isinstance(value, str):
        return _os_expand(value.replace("$$", "$"), {})
    if isinstance(value, list):
        return [_unescape(v) for v in value]
    if isinstance(value, dict):
        return {k: _unescape(v) for k, v in value.items()}
    return value


def otel_config(configmaps_yaml: bytes | str) -> dict:
    """The collector configuration of a generated agent ConfigMap file, as the collector reads it. A test reads
    the same file for each agent it runs: each exact text is read once, and every call gets a copy of its own."""
    kept = _CONFIGS.get(configmaps_yaml)
    if kept is None:
        documents = safe_load_all(configmaps_yaml)
        agent = next(d for d in documents if "cwagentconfig.json" in d["data"])
        if len(_CONFIGS) > 256:
            _CONFIGS.clear()
        kept = _CONFIGS[configmaps_yaml] = pickle.dumps(_unescape(safe_load(agent["data"][OTEL_KEY])))
    return pickle.loads(kept)


_CONFIGS: dict[bytes | str, bytes] = {}  # a ConfigMap file's text -> its collector configuration, pickled


def _component(config: dict, section: str, kind: str) -> dict:
    """The pipeline's one component of `kind` (prometheus, filter, awsemf) in `section`."""
    (pipeline,) = config["service"]["pipelines"].values()
    (name,) = [n for n in pipeline[section] if n.split("/")[0] == kind]
    return config[section][name]


def receiver_jobs(config: dict) -> dict[str, dict]:
    """The receiver's scrape jobs, by name."""
    return {job["job_name"]: job for job in _component(config, "receivers", "prometheus")["config"]["scrape_configs"]}


# --- OTTL: the subset of the condition language gpudash writes -------------------------------

_TOKEN = re.compile(r'\s*(?:(?P<string>"(?:[^"\\]|\\.)*")|(?P<number>[-+]?\d*\.\d+(?:[eE][-+]?\d+)?|[-+]?\d+)'
                    r'|(?P<op>==|!=|>=|<=|>|<|\(|\)|,)|(?P<word>[A-Za-z_][A-Za-z0-9_.]*))')


def _tokens(text: str) -> list[tuple[str, str]]:
    result, position = [], 0
    while position < len(text.rstrip()):
        match = _TOKEN.match(text, position)
        assert match and match.end() > position, f"OTTL the model does not read: {text[position:]!r}"
        kind = match.lastgroup
        result.append((kind, match.group(kind)))
        position = match.end()
    return result


class _Condition:
    """An OTTL boolean expression over one datapoint: (metric name, value) -> bool."""

    def __init__(self, text: str):
        self.tokens, self.at = _tokens(text), 0
        self.tree = self._or()
        assert self.at == len(self.tokens), f"OTTL the model does not read: {text!r}"
        self._compiled = self._compile(self.tree)

    def _peek(self):
        return self.tokens[self.at] if self.at < len(self.tokens) else (None, None)

    def _take(self, value=None):
        token = self._peek()
        assert value is None or token[1] == value, f"expected {value!r}, got {token!r}"
        self.at += 1
        return token

    def _or(self):
        return self._joined("or", self._and)

    def _and(self):
        return self._joined("and", self._not)

    def _joined(self, word, term):
        """`term (word term)*`, as (word, [terms])."""
        terms = [term()]
        while self._peek() == ("word", word):
            self._take()
            terms.append(term())
        return (word, terms)

    def _not(self):
        if self._peek() == ("word", "not"):
            self._take()
            return ("not", self._not())
        if self._peek() == ("op", "("):
            self._take("(")
            inner = self._or()
            self._take(")")
            return inner
        left = self._value()
        kind, op = self._peek()
        if kind == "op" and op in ("==", "!=", ">=", "<=", ">", "<"):
            self._take()
            return ("compare", op, left, self._value())
        return ("truth", left)

    def _value(self):
        kind, text = self._take()
        if kind == "string":
            return ("literal", re.sub(r"\\(.)", r"\1", text[1:-1]))
        if kind == "number":
            return ("literal", float(text))
        if kind == "word" and text in ("true", "false"):
            return ("literal", text == "true")
        if kind == "word" and self._peek() == ("op", "("):
            assert text == "IsMatch", f"OTTL function the model does not know: {text}"
            self._take("(")
            target = self._value()
            self._take(",")
            pattern = self._value()
            self._take(")")
            return ("ismatch", target, pattern)
        assert kind == "word" and text in ("metric.name", "value_double", "flags"), \
            f"OTTL path the model does not know: {text}"
        return ("path", text)

    def __call__(self, name: str, value: float) -> bool:
        return bool(self._compiled(name, value))

    def _compile(self, node):
        """The tree as closures: OTTL's meaning of each node, evaluated for millions of datapoints."""
        kind = node[0]
        if kind in ("or", "and"):
            return (_any if kind == "or" else _all)([self._compile(n) for n in node[1]])
        if kind == "not":
            inner = self._compile(node[1])
            return lambda name, value: not inner(name, value)
        if kind == "truth":
            return self._compile(node[1])
        if kind == "literal":
            literal = node[1]
            return lambda name, value: literal
        if kind == "path":  # a staleness marker (value None) has flags 1 (NoRecordedValue) and an empty double: 0
            return {"metric.name": lambda name, value: name,
                    "value_double": lambda name, value: 0.0 if value is None else value,
                    "flags": lambda name, value: 1.0 if value is None else 0.0}[node[1]]
        if kind == "ismatch":
            target = self._compile(node[1])
            if node[2][0] == "literal" and node[1] == ("path", "metric.name"):  # the usual case: once per name
                search, seen = go_compiled(node[2][1]).search, {}

                def name_matches(name, value):
                    found = seen.get(name)
                    if found is None:
                        found = seen[name] = search(name) is not None
                    return found
                return name_matches
            if node[2][0] == "literal":  # the pattern compiled once
                search = go_compiled(node[2][1]).search
                return lambda name, value: search(target(name, value)) is not None
            pattern = self._compile(node[2])
            return lambda name, value: go_compiled(pattern(name, value)).search(target(name, value)) is not None
        _, op, left, right = node
        a, b = self._compile(left), self._compile(right)
        compare = {"==": operator.eq, "!=": operator.ne, ">=": operator.ge, "<=": operator.le,
                   ">": operator.gt, "<": operator.lt}[op]
        return lambda name, value: compare(a(name, value), b(name, value))


def _any(parts):
    """(name, value) -> whether any of `parts` holds, the first that holds ending it (OTTL's `or`)."""
    if len(parts) == 1:
        return parts[0]
    first, rest = parts[0], _any(parts[1:])
    return lambda name, value: bool(first(name, value)) or bool(rest(name, value))


def _all(parts):
    """(name, value) -> whether all of `parts` hold, the first that does not ending it (OTTL's `and`)."""
    if len(parts) == 1:
        return parts[0]
    first, rest = parts[0], _all(parts[1:])
    return lambda name, value: bool(first(name, value)) and bool(rest(name, value))


def datapoint_conditions(config: dict, name: str | None = None) -> list[_Condition]:
    """The datapoint conditions of the pipeline's filter processor `name`, parsed; None: of every filter processor
    of the pipeline, in its order (a point one of them drops does not reach awsemf)."""
    (pipeline,) = config["service"]["pipelines"].values()
    names = [name] if name else [n for n in pipeline["processors"] if n.split("/")[0] == "filter"]
    return [_Condition(text) for n in names for text in config["processors"][n]["metrics"]["datapoint"]]


class OtelAgent(Pipeline):
    def __init__(self, config: dict):
        self.jobs = receiver_jobs(config)
        self.conditions = datapoint_conditions(config)
        emf = _component(config, "exporters", "awsemf")
        self.namespace = emf["namespace"]
        # awsemf's default rolls every label set up into more sets (ZeroAndSingleDimensionRollup): the model
        # emits only the declared ones, so it reads only a configuration that says so
        assert emf.get("dimension_rollup_option") == "NoDimensionRollup", emf.get("dimension_rollup_option")
        self.retain_initial = bool(emf.get("retain_initial_value_of_delta_metric", False))
        self.declarations = [
            ([(m["label_names"], m.get("separator") or ";", m["regex"]) for m in d.get("label_matchers") or []],
             d["metric_name_selectors"], declared_sets(d["dimensions"]))
            for d in emf.get("metric_declarations") or [] if awsemf_initialised(d)]
        self.dropped: list[tuple[str, dict, float]] = []  # what the filter dropped: (name, labels, value)
        self.exported: set[str] = set()  # the metrics that reached awsemf (a field of its log events)
        self.events: LogEvents | None = None  # set to a LogEvents to record the EMF log events written
        self._previous: dict[tuple, tuple[float, float]] = {}  # (name, labels) -> (value, timestamp)
        self.sweep_phase = 0.0  # when awsemf's cache sweeps (every CACHE_TTL from then)
        # how long after its scrape's timestamp awsemf handles a point (scrape duration + batch wait): tests choose it
        self.processing_delay = 0.0
        self.transforms = metric_transforms(config)
        self.processors = _processor_kinds(config)
        self._last_series: dict[tuple, frozenset] = {}  # each target's series at its last scrape (staleness markers)
        self._kinds: dict[str, str] = {}

    def _swept(self, stored: float, now: float) -> bool:
        """Whether awsemf's cache dropped a value stored at `stored` by `now`: its sweep runs every CACHE_TTL
        from the exporter's start (`sweep_phase`, a time the model cannot know: tests choose it) and drops the
        values at least CACHE_TTL old, so a value survives between CACHE_TTL and twice that."""
        tick = self.sweep_phase + math.ceil((stored + CACHE_TTL - self.sweep_phase) / CACHE_TTL) * CACHE_TTL
        return tick <= now

    def _sets(self, name: str, labels: dict[str, str]) -> list[tuple[str, ...]]:
        """The dimension sets a datapoint is published with: they depend on its name, which labels it has
        and the values of the labels the matchers read, and are worked out once for each of those."""
        if not hasattr(self, "_matched_labels"):
            self._matched_labels = sorted({n for matchers, _, _ in self.declarations
                                           for names, _, _ in matchers for n in names})
            self._known_sets: dict[tuple, list[tuple[str, ...]]] = {}
        key = (name, frozenset(labels), tuple(labels.get(n, "") for n in self._matched_labels))
        sets = self._known_sets.get(key)
        if sets is None:
            sets = self._known_sets[key] = self._worked_out_sets(name, labels)
        return sets

    def _worked_out_sets(self, name: str, labels: dict[str, str]) -> list[tuple[str, ...]]:
        sets: list[tuple[str, ...]] = []
        for matchers, selectors, dimension_sets in self.declarations:
            if matchers and not any(go_compiled(regex).search(separator.join(labels.get(n, "") for n in names))
                                    for names, separator, regex in matchers):
                continue
            if not any(go_compiled(selector).search(name) for selector in selectors):
                continue
            sets += [dims for dims in dimension_sets if all(d in labels for d in dims) and dims not in sets]
        return sets

    def _series(self, job: str, name: str, sample_labels: dict[str, str], target_labels: dict[str, str],
                target_items: tuple | None = None):
        """What the receiver makes of one series whatever its value: None when the job's metric_relabel_configs
        drop it, else (name, labels). A fleet serves the same series at every scrape: each is worked out once
        (`target_items`: the target's labels as a tuple, when the caller has them)."""
        # the sample's labels come from exposition()'s shared dicts: known by identity (the entry holds the dict)
        key = (job, name, id(sample_labels), target_items or tuple(target_labels.items()))
        try:
            return self._known_series[key][1]
        except AttributeError:
            self._known_series: dict[tuple, tuple] = {}
        except KeyError:
            pass
        merged = {k: v for k, v in {**sample_labels, **target_labels}.items() if v != ""}
        relabeled = _relabeled(self.jobs[job].get("metric_relabel_configs") or [], {**merged, "__name__": name})
        if relabeled is None:
            series = None
        else:
            name = relabeled.pop("__name__")
            labels = {k: v for k, v in relabeled.items() if v != "" and k not in ("job", "instance")}  # into the resource
            series = (name, labels)
        self._known_series[key] = (sample_labels, series)
        return series

    def scrape(self, scrape: Scrape) -> list[Datapoint]:
        """One scrape of one target through the pipeline; a payload of "" is a failed scrape. What the receiver and
        the processors make of it depends on its payload, its target's labels, the series of the target's previous
        scrape (staleness markers) and the kinds last seen of those series' names, never on its time: a fleet
        serving the same page again (a one-GPU page, an empty one, kube-state-metrics' counts) is worked out once
        for each of those, and only awsemf's step (counter deltas, the datapoints' time) runs at every scrape."""
        target = (scrape.target_labels.get("job"), scrape.target_labels.get("instance"),
                  tuple(sorted(scrape.target_labels.items())))
        last = self._last_series.get(target, frozenset())
        known = self.__dict__.setdefault("_known_scrapes", {})
        key = (scrape.payload, tuple(scrape.target_labels.items()), last)
        found = known.get(key)
        if found is None or any(self._kinds.get(name, "gauge") != kind for name, kind in found[3]):
            if len(known) > 20_000:
                known.clear()
            found = known[key] = self._processed(scrape, last)
        kept, seen, kinds, _, dropped, published = found
        self._last_series[target] = seen
        self._kinds.update(kinds)
        self.dropped += dropped
        self.exported.update(metric.name for metric in kept)
        result: list[Datapoint] = []
        for metric, points, emitted in published:
            # a gauge none of whose points has a dimension set (`only` left them out) gives nothing, and changes nothing
            if emitted or metric.kind == "counter" or self.events is not None:
                result += self._published(metric, points, scrape)
        return result

    def _processed(self, scrape: Scrape, last: frozenset) -> tuple:
        """(the metrics awsemf receives of the scrape, the target's series now, the kinds of its metrics by name, the
        kinds the staleness markers read, what the filter dropped): the receiver and the processors."""
        job = scrape.target_labels["job"]
        samples = list(exposition(scrape.payload))
        target_items = tuple(scrape.target_labels.items())
        series_of = [self._series(job, name, labels, scrape.target_labels, target_items)
                     for name, _, labels, _ in samples]
        # the receiver's own series of the scrape, with the target's labels (not metric-relabelled)
        kept_samples = len(series_of) - series_of.count(None)  # those the job's metric_relabel_configs keep
        own = [("up", 1.0 if scrape.payload else 0.0), ("scrape_duration_seconds", 0.05),
               ("scrape_samples_scraped", float(len(samples))),
               ("scrape_samples_post_metric_relabeling", float(kept_samples)), ("scrape_series_added", 0.0)]
        target = self.__dict__.setdefault("_known_targets", {}).get(target_items)  # one dict per target (_ByIdentity)
        if target is None:
            target = self._known_targets[target_items] = {k: v for k, v in scrape.target_labels.items()
                                                          if v != "" and k not in ("job", "instance")}
        metrics: dict[str, _Metric] = {}  # one scrape of one target: one resource, its metrics by name
        for name, value in own:
            metrics.setdefault(name, _Metric(name, "gauge")).points.append((target, value))
        for (name, kind, sample_labels, value), series in zip(samples, series_of):
            if kind == "histogram":
                continue  # DCGM serves none; awsemf would publish a histogram's statistics
            if series is not None:
                name, labels = series
                metrics.setdefault(name, _Metric(name, kind)).points.append((labels, value))
        seen, read = self._mark_stale(last, metrics)
        kinds = {m.name: m.kind for m in metrics.values()}
        kept, before = list(metrics.values()), len(self.dropped)
        for kind, transforms in self.processors:  # in the pipeline's order
            if kind == "filter":
                kept = self._filtered(kept, *transforms)
                continue
            for transform in transforms:
                kept = transform(kept)
        dropped = self.dropped[before:]
        del self.dropped[before:]  # the caller adds them, at every scrape
        # what awsemf reads of each point whatever the scrape's time: a point flagged NoRecordedValue, NaN or
        # infinite is dropped (a counter's previous value kept); the others with their cache key and dimension sets
        published = [(metric, [(labels, value, *self._emitted(metric.name, labels)) for labels, value in metric.points
                               if not (value is None or math.isnan(value) or math.isinf(value))])
                     for metric in kept]
        published = [(metric, points, any(dimensions for *_, dimensions in points)) for metric, points in published]
        return kept, seen, kinds, read, dropped, published

    def _filtered(self, metrics: list["_Metric"], dropped, name: str) -> list["_Metric"]:
        """The filter processor `name`: a datapoint for which one of its conditions holds (`dropped`) is dropped, a
        metric left without points too."""
        kept = []
        # (name, value) -> dropped, per filter processor: a fleet repeats them
        known = self.__dict__.setdefault("_known_drops", {}).setdefault(name, {})
        for metric in metrics:
            points = []
            for labels, value in metric.points:
                # a staleness marker has no value: OTTL's value_double reads 0 (the point's empty double), flags 1
                drop = known.get((metric.name, value))
                if drop is None:
                    drop = known[(metric.name, value)] = bool(dropped(metric.name, value))
                if drop:
                    self.dropped.append((metric.name, labels, value))
                    continue
                points.append((labels, value))
            if points:
                kept.append(_Metric(metric.name, metric.kind, points, metric.ordered))
        return kept

    def _mark_stale(self, last: frozenset, metrics: dict[str, "_Metric"]) -> tuple[frozenset, tuple]:
        """Prometheus's scrape loop appends a staleness marker (the receiver: a point flagged NoRecordedValue,
        no value) for each series of the target's previous scrape (`last`) that this one lacks, after its samples; a
        failed scrape lacks them all. (the target's series now, the kinds the markers took by name)."""
        seen = frozenset((m.name, _sorted_items(labels)) for m in metrics.values() for labels, _ in m.points)
        if seen == last:  # the same series as the last scrape: the same object, which `scrape`'s next key holds, so
            seen = last   # finding it compares them by identity, not series by series at every scrape
        read = {}
        for name, labels in sorted(last - seen):
            if name not in metrics:
                read[name] = self._kinds.get(name, "gauge")
            metrics.setdefault(name, _Metric(name, read.get(name, "gauge"))).points.append((_interned(labels), None))
        return seen, tuple(read.items())

    def _published(self, metric: "_Metric", points: list[tuple], scrape: Scrape) -> list[Datapoint]:
        """awsemf, on the metric's points it keeps (labels, value, the counter's cache key, the dimension sets with
        their values; see _processed): a counter's point becomes its delta; each dimension set the declarations give
        it."""
        result, timestamp = [], scrape.timestamp
        for labels, value, key, dimensions in points:
            if metric.kind == "counter":
                previous = self._previous.get(key)
                self._previous[key] = (value, timestamp)
                if previous is None or self._swept(previous[1], timestamp + self.processing_delay):
                    if not self.retain_initial:
                        continue  # the first value is the baseline (retain_initial_value_of_delta_metric: the delta)
                else:
                    value = value - previous[0] if value >= previous[0] else value
            # the receiver makes a counter a Sum, a gauge a Gauge; metricstransform's copies keep the type
            if self.events is not None:
                self.events.add(scrape, "Sum" if metric.kind == "counter" else "Gauge", labels, metric.name,
                                [dict(dims) for dims in dimensions])
            result += datapoints(self.namespace, metric.name, dimensions, timestamp, value)
        return result

    def _emitted(self, name: str, labels: dict[str, str]) -> tuple[tuple, list[tuple]]:
        """(the counter's cache key, the dimension sets with their values) of a series, worked out once."""
        try:  # known by the labels' identity (_ByIdentity): the entry holds the dict
            return self._known_emitted[(name, id(labels))][1]
        except AttributeError:
            self._known_emitted: dict[tuple, tuple] = {}
        except KeyError:
            pass
        result = ((name, _sorted_items(labels)),
                  self._kept(name, [tuple(sorted((d, labels[d]) for d in dims)) for dims in self._sets(name, labels)]))
        self._known_emitted[(name, id(labels))] = (labels, result)
        return result


# --- metricstransform: the transforms and the operation gpudash writes ----------------------

@dataclass
class _Metric:
    """A metric of one resource: its name, kind (gauge / counter: a cumulative Sum) and points (labels, value;
    None: a staleness marker, flagged NoRecordedValue)."""

    name: str
    kind: str
    points: list = field(default_factory=list)
    # the points in the receiver's order (a scrape's samples, then its staleness markers), which inserts, filters and
    # value statements keep; False once aggregateutil merged them: its groups come out in Go's map order (_unsettled)
    ordered: bool = True


class MapOrderDependent(AssertionError):
    """What the agent publishes depends on the order Go's map iteration gives (_unsettled): the model cannot say it."""


def _unsettled(values: list, ordered: bool) -> bool:
    """Whether the merge of one group's values (None: a staleness marker) is decided by an order the collector leaves to
    chance. aggregateutil's mergeNumberDataPoints merges a group into its first point, and a first point without value
    stays one (no value merged into it: awsemf drops it), whatever else the group holds; and MergeDataPoints writes its
    groups in the order of a Go map (`for _, dps := range dpsMap`: random at each iteration), so the points a later
    aggregate_labels (or a combine) groups come in no fixed order. The receiver's order (`ordered`) puts a scrape's
    staleness markers after its samples: a marker is first only in a group of markers. After a merge, a group holding a
    marker and a reading is the reading's merge or nothing at all, at random from one scrape to the next."""
    return not ordered and None in values and any(value is not None for value in values)


def _go_max(a: float, b: float) -> float:
    """Go's math.Max: +Inf over anything, then NaN over anything."""
    if math.isinf(a) and a > 0 or math.isinf(b) and b > 0:
        return math.inf
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return max(a, b)


_AGGREGATIONS = ("max", "sum", "count", "median", "mean")  # the aggregation_type values _merged knows


def _merged(values: list, aggregation: str):
    """aggregateutil's mergeNumberDataPoints of one group's values (None: a point without value, a staleness
    marker): the first point takes the others in; a first without value takes nothing (its value type matches
    no case); otherwise `max` takes math.Max of its double and each other's (an empty value reads 0), `sum`
    adds them, `count` writes how many points the group has, inside the loop over the second and later points:
    a group of one point keeps its value; `median` sorts the values (the others' empty ones read 0) and takes the
    middle one, or the mean of the middle two; `mean` adds them as `sum` does, then divides by how many points the
    group has."""
    first = values[0]
    if first is None:
        return None
    if aggregation == "median":
        numbers = sorted([first, *(0.0 if other is None else other for other in values[1:])])
        middle = len(numbers) // 2
        return numbers[middle] if len(numbers) % 2 else (numbers[middle - 1] + numbers[middle]) / 2
    value = first
    for other in values[1:]:
        other = 0.0 if other is None else other
        if aggregation == "max":
            value = _go_max(value, other)
        elif aggregation in ("sum", "mean"):
            value = value + other
        else:
            value = float(len(values))
    return value / len(values) if aggregation == "mean" else value


def _aggregate_labels(metric: _Metric, label_set: list[str], aggregation: str) -> _Metric:
    """aggregate_labels (aggregateutil FilterAttrs, GroupDataPoints, MergeDataPoints): every label not in
    `label_set` is removed; the points of one label set (and timestamp: one scrape here) are merged into the
    first of them, whose flags it keeps (_merged)."""
    assert aggregation in _AGGREGATIONS, f"aggregation the model does not know: {aggregation}"
    kept = _kept_labels(label_set)
    return _grouped(_Metric(metric.name, metric.kind, [(kept(labels), value) for labels, value in metric.points],
                            metric.ordered), aggregation)


_KEPT_LABELS: dict[tuple, _ByIdentity] = {}  # a label_set -> each labels dict's labels in it


def _kept_labels(label_set: list[str]) -> _ByIdentity:
    """labels -> the labels in `label_set` (aggregate_labels' FilterAttrs), one dict per labels dict."""
    kept = _KEPT_LABELS.get(tuple(label_set))
    if kept is None:
        kept = _KEPT_LABELS[tuple(label_set)] = _ByIdentity(lambda labels: {k: v for k, v in labels.items()
                                                                              if k in label_set})
    return kept


def _grouped(metric: _Metric, aggregation: str) -> _Metric:
    """The points of one label set merged into one (_merged), in the order their label sets first appear."""
    groups: dict[tuple, list] = {}
    for labels, value in metric.points:
        groups.setdefault(_sorted_items(labels), []).append(value)
    for key, values in groups.items():
        if _unsettled(values, metric.ordered):
            raise MapOrderDependent(f"{metric.name} {dict(key)}: a staleness marker and a reading merged in an order "
                                    f"Go's map iteration decides (the merge or nothing, at random)")
    return _Metric(metric.name, metric.kind, [(_interned(key), _merged(values, aggregation))
                                              for key, values in groups.items()], False)


_ADDED_LABELS: dict[tuple, _ByIdentity] = {}  # (new_label, new_value) -> each labels dict with it added


def _added_label(label: str, value: str) -> _ByIdentity:
    """labels -> the labels with `label` (add_label's new_label) set to `value`, one dict per labels dict."""
    added = _ADDED_LABELS.get((label, value))
    if added is None:
        added = _ADDED_LABELS[(label, value)] = _ByIdentity(lambda labels: {label: value, **labels})
    return added


def _operated(metric: _Metric, operation: dict) -> _Metric:
    """One operation of a transform: aggregate_labels, add_label (a label the point lacks, with new_value),
    experimental_scale_value (each value times experimental_scale; a point without value stays so)."""
    action = operation["action"]
    if action == "aggregate_labels":
        return _aggregate_labels(metric, operation["label_set"], operation["aggregation_type"])
    if action == "add_label":
        added = _added_label(operation["new_label"], operation["new_value"])
        return _Metric(metric.name, metric.kind, [(added(labels), v) for labels, v in metric.points], metric.ordered)
    assert action == "experimental_scale_value", f"operation the model does not know: {operation}"
    scale = float(operation["experimental_scale"])
    return _Metric(metric.name, metric.kind, [(labels, None if v is None else v * scale) for labels, v in metric.points],
                   metric.ordered)


def _plan(labels: list[dict], operations: list[dict]) -> tuple[list[dict], list[tuple]]:
    """What `operations` (_operated, in their order) make of points with these labels, whatever their values: (the
    labels of the points they give, the steps on the values: (the input positions merged into each point, in the
    order _grouped gives them, the aggregation, None) for aggregate_labels, (None, None, the factor) for
    experimental_scale_value; add_label changes labels alone)."""
    steps = []
    for operation in operations:
        action = operation["action"]
        if action == "aggregate_labels":
            aggregation, kept = operation["aggregation_type"], _kept_labels(operation["label_set"])
            assert aggregation in _AGGREGATIONS, f"aggregation the model does not know: {aggregation}"
            groups: dict[tuple, list[int]] = {}
            for position, point_labels in enumerate(labels):
                groups.setdefault(_sorted_items(kept(point_labels)), []).append(position)
            labels = [_interned(key) for key in groups]
            steps.append((list(groups.values()), aggregation, None))
        elif action == "add_label":
            added = _added_label(operation["new_label"], operation["new_value"])
            labels = [added(point_labels) for point_labels in labels]
        else:
            assert action == "experimental_scale_value", f"operation the model does not know: {operation}"
            steps.append((None, None, float(operation["experimental_scale"])))
    return labels, steps


def _go_expand(template: str, match: re.Match) -> str:
    """Go's Regexp.ExpandString: $n and ${n} are the submatches (the names gpudash writes: numbers)."""
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: match.group(int(m.group(1) or m.group(2))) or "", template)


def _transform(config: dict):
    """One of metricstransform's transforms (metrics_transform_processor_otlp.go processMetrics) as a function
    of a resource's metrics: `insert` appends a transformed copy of each matching metric present before it,
    `update` transforms the matching metrics in place (a metric left without points is dropped), `combine`
    takes every matching metric out (when there are any, all of one kind: canBeCombined) and appends one metric
    of `new_name` holding their points, those of one label set merged by the transform's aggregation_type
    (groupMetrics), then transformed; a new name is the include pattern's expansion (regexp) of `new_name`."""
    assert config.get("match_type") == "regexp" and config["action"] in ("insert", "update", "combine"), config
    matchers = {label: go_compiled(regex) for label, regex in (config.get("experimental_match_labels") or {}).items()}
    assert not matchers or config["action"] == "insert", "the model matches labels on insert only"
    pattern = go_compiled(config["include"], groups=True)
    search = functools.lru_cache(maxsize=None)(pattern.search)  # a fleet's metric names repeat at every scrape

    def matching(metric: _Metric) -> _Metric:
        """extractMatchedMetric: the points whose labels match (matchAttrs: an unanchored regexp over the label's
        value, over "" for a point that lacks the label)."""
        return _Metric(metric.name, metric.kind, [(labels, value) for labels, value in metric.points if matches(labels)],
                       metric.ordered)
    matches = _ByIdentity(lambda labels: all(m.search(labels.get(k, "")) for k, m in matchers.items()))
    operations = config.get("operations") or []
    for operation in operations:
        assert operation["action"] in ("aggregate_labels", "add_label", "experimental_scale_value"), \
            f"operation the model does not know: {operation}"

    @functools.lru_cache(maxsize=None)
    def new_name(match: re.Match) -> str:  # a cached search gives one match object per name
        return _go_expand(config["new_name"], match) or config["new_name"]

    plans: dict[tuple, tuple] = {}  # the ids of a metric's points' labels dicts -> (those dicts, _plan of them)

    def changed(metric: _Metric, match: re.Match) -> _Metric:
        """The operations on the metric (_operated, one after the other). Which points each merges and the labels it
        gives them depend on the points' labels alone, never on their values: worked out once for each sequence of
        labels dicts (known by identity: the entry holds them, see _ByIdentity), then only the values are merged and
        scaled at each scrape, as _operated does them."""
        name = new_name(match) if config.get("new_name") else metric.name
        key = tuple([id(labels) for labels, _ in metric.points])
        entry = plans.get(key)
        if entry is None:
            if len(plans) > 20_000:
                plans.clear()
            held = [labels for labels, _ in metric.points]
            entry = plans[key] = (held, _plan(held, operations))
        labels, steps = entry[1]
        values = [value for _, value in metric.points]
        ordered = metric.ordered
        for groups, aggregation, scale in steps:
            if groups is not None:
                grouped = [[values[i] for i in group] for group in groups]
                if not ordered and any(_unsettled(group, ordered) for group in grouped):
                    raise MapOrderDependent(f"{metric.name} -> {name}: a staleness marker and a reading merged in an "
                                            f"order Go's map iteration decides (the merge or nothing, at random)")
                values, ordered = [_merged(group, aggregation) for group in grouped], False
            else:
                values = [None if value is None else value * scale for value in values]
        return _Metric(name, metric.kind, list(zip(labels, values)), ordered)

    def combined(metrics: list[_Metric]) -> list[_Metric]:
        matched = [m for m in metrics if search(m.name)]
        if not matched:
            return metrics
        assert len({m.kind for m in matched}) == 1, "canBeCombined: metrics of different types are not combined"
        assert pattern.groups == 0, "the model adds no labels from the include pattern's submatches"
        if len({frozenset(k for labels, _ in m.points for k in labels) for m in matched}) > 1:
            return metrics  # canBeCombined: metrics whose points name other labels are left as they are
        points = [point for m in matched for point in m.points]
        merged = _grouped(_Metric(config["new_name"], matched[0].kind, points, all(m.ordered for m in matched)),
                          config["aggregation_type"])
        for operation in operations:
            merged = _operated(merged, operation)
        kept = [m for m in metrics if not search(m.name)]
        return kept + ([merged] if merged.points else [])

    def apply(metrics: list[_Metric]) -> list[_Metric]:
        if config["action"] == "combine":
            return combined(metrics)
        if config["action"] == "insert":  # the metrics as they are, then a changed copy of each matching one
            result = list(metrics)
            for metric in metrics:
                match = search(metric.name)
                if match:
                    copy = matching(metric) if matchers else metric  # (`changed` makes a new metric: none is shared)
                    if copy.points or not metric.points:
                        result.append(changed(copy, match))
            return result
        result = []
        for metric in metrics:
            match = search(metric.name)
            if match:
                metric = changed(metric, match)
                if not metric.points:
                    continue
            result.append(metric)
        return result

    return apply


def metric_transforms(config: dict) -> list:
    """The pipeline's metricstransform and transform steps in order (none without the processors)."""
    return [t for kind, transforms in _processor_kinds(config) if kind != "filter" for t in transforms]


def _processor_kinds(config: dict) -> list[tuple[str, list]]:
    """The pipeline's processors in its order, each as (kind, its steps): the collector passes a scrape's metrics
    through them in the order the pipeline lists them, each component a processor of its own however many of one
    kind the pipeline names (opentelemetry-collector otelcol/config.go: `Processors map[component.ID]component.Config`,
    an ID being `type[/name]`, so filter/gpudash and filter/gpudash-markers are two filter processors, each with its
    own configuration, as metricstransform/gpudash-pods and metricstransform/gpudash are). A filter's steps are (the
    predicate that holds for a point one of its conditions drops, its name); metricstransform's its transforms; the
    batch processor changes no value."""
    (pipeline,) = config["service"]["pipelines"].values()
    kinds = [(name.split("/")[0], name) for name in pipeline["processors"]]
    assert {kind for kind, _ in kinds} <= {"filter", "metricstransform", "transform", "batch"}, kinds
    assert len(set(pipeline["processors"])) == len(pipeline["processors"]), "a processor ID listed twice"

    def steps(kind: str, name: str) -> list:
        if kind == "filter":
            conditions = datapoint_conditions(config, name)
            return [_any([c._compiled for c in conditions]) if conditions else (lambda n, v: False), name]
        if kind == "metricstransform":
            return [_transform(t) for t in config["processors"][name]["transforms"]]
        return [_statements(config["processors"][name])] if kind == "transform" else []
    return [(kind, steps(kind, name)) for kind, name in kinds]


_UNKNOWN = object()  # what no statement wrote yet (None: they write nothing)
_SET = re.compile(r"^set\(value_double,\s*(?P<value>[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?)(?P<less>\s*-\s*value_double)?\)"
                  r"\s+where\s+(?P<where>.+)$")
# set(value_double, Double(attributes["<label>"]) [* <number>] [+|- <number>]): OTTL's Double converter of the point's
# label (a string read by Go's strconv.ParseFloat; a label the point lacks, or one that is no number, is nil: the math
# expression fails, and with error_mode ignore the statement is skipped, the point keeping its value), times a number,
# plus or less a number
_NUMBER = r"\d*\.?\d+(?:[eE][-+]?\d+)?"
_SET_LABEL = re.compile(r'^set\(value_double,\s*Double\(attributes\["(?P<label>[^"\\]+)"\]\)'
                        rf'(?:\s*\*\s*(?P<times>{_NUMBER}))?(?:\s*(?P<sign>[-+])\s*(?P<plus>{_NUMBER}))?\)'
                        r'\s+where\s+(?P<where>.+)$')


def _go_float(text: str) -> float | None:
    """Go's strconv.ParseFloat(text, 64) for the decimal numbers a label holds (None where it fails)."""
    if not re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text):
        return None
    return float(text)


def _statements(config: dict):
    """transformprocessor's datapoint statements as a function of a resource's metrics (the subset gpudash writes:
    `set(value_double, <number>) where <condition>`, and `set(value_double, <number> - value_double) where ...`, an
    OTTL math expression over the point's value). Each datapoint runs the statements in their order, a later one
    reading what an earlier one set (processor/transformprocessor/internal/common/metrics.go: a statement sequence
    per datapoint). A staleness marker (no value) keeps its NoRecordedValue flag whatever is set, and awsemf drops it:
    it stays a marker here."""
    (group,) = config["metric_statements"]
    if group["context"] == "metric":
        return _sums_to_gauges(group)
    assert group["context"] == "datapoint", group
    parsed, by_label = [], []
    for text in group["statements"]:
        match = _SET.match(text.strip())
        if match is None:
            labelled = _SET_LABEL.match(text.strip())
            assert labelled, f"OTTL statement the model does not read: {text!r}"
            assert config.get("error_mode") == "ignore", "a statement that fails stops the pipeline without it"
            plus = float(labelled["plus"] or 0) * (-1 if labelled["sign"] == "-" else 1)
            by_label.append((labelled["label"], float(labelled["times"] or 1), plus, _Condition(labelled["where"])))
            continue
        assert not by_label, "the model runs the statements setting a label's number after the others"
        parsed.append((float(match["value"]), bool(match["less"]), _Condition(match["where"])))

    def labelled(name: str, labels: dict, value: float) -> float:
        """The value after the statements that read a label (run after the others, in their order)."""
        for label, times, plus, condition in by_label:
            if condition(name, value):
                number = _go_float(labels.get(label, ""))
                if number is not None:
                    value = number * times + plus
        return value

    def statements(name: str, value: float) -> float | None:
        """The value the statements set (None: they set none), run in their order: a function of the metric's name
        and the point's value alone."""
        written = None
        for new, less, condition in parsed:
            if condition(name, value):
                value = written = new - value if less else new
        return written

    known: dict[tuple[str, float], float | None] = {}  # (name, value) -> what the statements set: a fleet repeats them

    def apply(metrics: list[_Metric]) -> list[_Metric]:
        result = []
        for metric in metrics:
            name, points = metric.name, []
            for labels, value in metric.points:
                if value is not None:
                    key = (name, value)
                    written = known.get(key, _UNKNOWN)
                    if written is _UNKNOWN:
                        if len(known) > 50_000:
                            known.clear()  # a counter's values never repeat: bounded
                        written = known[key] = statements(name, value)
                    if written is not None:
                        value = written
                    if by_label:
                        value = labelled(name, labels, value)
                points.append((labels, value))
            result.append(_Metric(name, metric.kind, points, metric.ordered))
        return result

    return apply


_RETYPE = re.compile(r'(convert_sum_to_gauge\(\)|convert_gauge_to_sum\("cumulative", true\)) '
                     r'where IsMatch\(name, "((?:[^"\\]|\\.)*)"\)')


def _sums_to_gauges(group: dict):
    """transformprocessor's metric statements (the subset gpudash writes: OTTL's convert_sum_to_gauge(), and
    convert_gauge_to_sum("cumulative", true), where the metric's name matches a regexp, IsMatch: RE2, unanchored) as a
    function of a resource's metrics: a matching Sum, of either temporality, becomes a Gauge of the same points, a
    matching Gauge a cumulative monotonic Sum (a counter) of the same points; any other metric is left as it is."""
    patterns = {"counter": [], "gauge": []}  # the kind each statement converts from
    for statement in group["statements"]:
        match = _RETYPE.fullmatch(statement)
        assert match, f"OTTL statement the model does not read: {statement!r}"
        patterns["counter" if match[1].startswith("convert_sum") else "gauge"].append(
            go_compiled(match[2].replace('\\"', '"')))

    def apply(metrics: list[_Metric]) -> list[_Metric]:
        return [_Metric(m.name, "gauge" if m.kind == "counter" else "counter", m.points, m.ordered)
                if any(p.search(m.name) for p in patterns.get(m.kind, ())) else m for m in metrics]

    return apply
