"""PromQL for neutral queries. Pure: (query, label mapping, catalog, scope) -> text.

Every PromQL expression gpudash writes (Grafana panels, variables, alert rules)
comes from here, so label handling is designed once:

* the node: fleets spell it several ways (`node` from gpudash's scrape job,
  `hostname`, `Hostname`, the target's `instance` as a last resort). The first
  non-empty spelling becomes the label `node` (label_join + label_replace)
  wherever a query groups by node, and the node variable matches it the same way
  (`node_matchers`: one selector per spelling, joined with `or`);
* the workload pod is (namespace, pod): grouping by pod also groups by namespace;
  one Prometheus holding several clusters adds the cluster (`with_cluster`);
* one GPU, many series: every query first reduces the series of one GPU to one value
  per GPU (and per outer group). What a GPU is comes from an allowlist, `gpu_identity`
  (cluster, node, GPU index), with the MIG instance (`MIG_INSTANCE_LABEL`, its profile) for
  an instance: every other label is merged, so the copies a GPU's series come in count once
  whatever tells them apart - the pods its series repeat for (time-slicing, MIG), the pod's
  UID and own labels (dcgm-exporter 4.4+ --kubernetes-enable-pod-uid / -pod-labels), the
  exporter's pod, `instance`, `job`, `service`, `endpoint` (an exporter restarted or upgraded
  mid-window). Copies of one reading merge with max; then the GPU's instances combine with
  the field's own per-GPU aggregation: device fields that repeat on every instance count
  once, instance memory adds up, instance activity averages. The node is coalesced
  (below) before the merge, so a GPU is one GPU whichever spelling carries its node.
  A counter's copies are merged per GPU UUID, not per node spelling (_Merge.physical: two exporters of one GPU
  spelling its node apart, mid-upgrade, count once): an increase from all the copies' readings at once, a panel's rate
  per node the copies name, then the highest (_Merge.fastest), an alert's rate its period's increase over the
  period's seconds (_per_gpu); the GPU is named by one node after (_Merge.named,
  gpus_named); another GPU under the same node and index (a node replaced by one of the same name, a GPU swapped) is
  another counter, not a reset of the old one's; the GPUs of one slot add up after their rates or increases
  (_Merge.gpus), as CloudWatch sums their deltas. In a rule over the fleet (grouped by nothing or by cluster) a GPU
  named by a UUID of NVIDIA's form is one counter whatever index its copies give it (_Merge.uuid_counter, unindexed):
  a rollout numbering the GPUs apart read each as two counters while both exporters served it; so too in an alert of
  a counter's increase per GPU or node, its increase then named at one index (_newest_index).
  Grouping by `mig_instance` shows the instances themselves, and so do alert rules per pod
  (`per_instance`: a pod is judged on each instance it holds, as on CloudWatch);
* a field split into several series per GPU by labels of its own (counts per XID code) makes
  one value per GPU from them (catalog.FIELD_LABELS: the counts add up), unless the query
  groups by such a label (`xid`), which then names the lines;
* DCGM's blank / not-supported sentinels give no data, for gauges and counters;
* per-process copies (`exporter.virtual_gpus`, see `_Device`): a GPU the exporter writes both as its own
  series and as each pod's share is read from its own series in every per-GPU view, and from the pods'
  copies in per-pod views (or with the device's value, for a query of the whole GPU a pod holds).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from .build_memo import BuildMemo
from .blanks import COUNTER_READING_FLOOR, INCREASE_FLOOR, READING_FLOOR, UNREAD_AT_ZERO, reading_floor, short
from .exporter_styles import GENERATED_SUFFIX
from . import mean_sign
from .catalog import (FIELD_LABELS, MIG_INSTANCE_LABEL, MIG_MEMORY_SHARES, MIG_PROFILE_LABEL, MIG_UNSUPPORTED,
                      PER_PROCESS_FIELDS, Catalog, Metric, own_labels_of, per_device_headroom, successive_labels)
from .model import WORKLOAD_KEYS, Query
from .names import COUNTER_GROUP, COUNTER_GROUPS
from .promql_groups import aggregated as brief_aggregation
from .promql_text import quoted, regex_literal
from .series_labels import SCRAPED_NODE, TARGET_ADDRESS, UUID_LABELS
from .settings import Labels, Settings

# DCGM reports a value it cannot read as a "blank" sentinel: 2**47 for floating-point
# fields, about 2**63 for integer fields. No gauge reading comes near 1e14, so gauges are
# compared against it and blank samples drop out instead of wrecking averages. Counters are
# integer running totals that nothing bounds below the integer sentinels (DCGM's energy in mJ since
# the driver loaded among them): they are compared against the integer sentinel only. A counter
# that reads the blank for one scrape inside a window (real, blank, real) makes rate() and
# increase() see a climb of about 2**63 and a reset: no floor on their result tells that from a
# real climb for every window (2**63 spread over a 26-hour window is already a per-second rate
# under 1e14: a floor fit for one window passes the jump over a longer one). So a counter gives
# no data for a window in which any of its samples is a blank (`max_over_time` over the very
# window rate/increase read), whatever the window's length.
# The floors come from blanks.py (the one source), as PromQL text.
BLANK_FLOOR = short(READING_FLOOR)
COUNTER_BLANK_FLOOR = short(COUNTER_READING_FLOOR)
INCREASE_BLANK_FLOOR = short(INCREASE_FLOOR)

_FIXED_LABELS = {"gpu": "gpu", "model": "modelName", "mig_instance": MIG_INSTANCE_LABEL}


def label_name(key: str, labels: Labels) -> str:
    """The Prometheus label that carries a neutral grouping key (after coalescing the node); a
    field's own label (`xid`, ...) is its own key."""
    if key in FIELD_LABEL_KEYS:
        return key
    return _FIXED_LABELS.get(key) or getattr(labels, key)


FIELD_LABEL_KEYS = frozenset(label for own, _ in FIELD_LABELS.values() for label in own)


def group_keys(by: tuple[str, ...]) -> tuple[str, ...]:
    """The keys a query really groups by: a pod is only known with its namespace."""
    if "pod" in by and "namespace" not in by:
        index = by.index("pod")
        return (*by[:index], "namespace", *by[index:])
    return tuple(by)


def with_cluster(query: Query) -> Query:
    """The query grouped by cluster as well (one Prometheus holding several clusters, whose node and
    pod names may repeat)."""
    return query if "cluster" in query.by else replace(query, by=("cluster", *query.by))


def legend(query: Query, labels: Labels) -> str:
    """Grafana legend for a query: `Pod {{namespace}}/{{pod}}` for per-pod series, and so on."""
    if query.legend is not None:
        return query.legend
    keys = group_keys(query.by)
    parts = []
    for key in keys:
        name = label_name(key, labels)
        if key == "namespace" and "pod" in keys:
            continue  # written with the pod
        if key == "pod":
            parts.append(f"Pod {{{{{label_name('namespace', labels)}}}}}/{{{{{name}}}}}")
            continue
        if key == "mig_instance":
            parts.append(f"MIG {{{{{name}}}}} ({{{{{MIG_PROFILE_LABEL}}}}})")
            continue
        prefix = {"gpu": "GPU ", "namespace": "Namespace "}.get(key, f"{key} " if key in FIELD_LABEL_KEYS else "")
        parts.append(f"{prefix}{{{{{name}}}}}")
    return " ".join(parts) if parts else query.metric


@dataclass(frozen=True)
class Scope:
    """Which series a query covers: a regex per neutral key (dashboard variables, `$node`)."""

    regexes: tuple[tuple[str, str], ...] = ()

    def naming(self, labels: Labels) -> tuple[str, ...]:
        """The matchers of the GPUs in scope whatever node and workload are selected: those a GPU's name is read from
        (gpus_named: its copies under any node spelling and pod)."""
        return tuple(f"{label_name(key, labels)}=~{quoted(regex)}" for key, regex in self.regexes
                     if key not in ("node", "pod", "namespace"))

    def picked(self) -> tuple[str, ...]:
        """The pod and namespace variables' regexes (the workload picked)."""
        return tuple(regex for key, regex in self.regexes if key in ("pod", "namespace"))

    def workload(self, labels: Labels) -> tuple[str, ...]:
        """The matchers of the pod and namespace variables."""
        return tuple(f"{label_name(key, labels)}=~{quoted(regex)}" for key, regex in self.regexes
                     if key in ("pod", "namespace"))

    def matchers(self, labels: Labels) -> list[list[str]]:
        """Alternative matcher lists; a series is in scope when one of them matches it."""
        base = [f"{label_name(key, labels)}=~{quoted(regex)}" for key, regex in self.regexes if key != "node"]
        node = next((regex for key, regex in self.regexes if key == "node"), None)
        if node is None:
            return [base]
        return [base + branch for branch in node_matchers(node, labels)]


def node_matchers(regex: str, labels: Labels) -> list[list[str]]:
    """Matcher branches for "the first non-empty node spelling matches `regex`", one per spelling and apart: each but
    the last spelling's only where it is not empty, so that at All (`.*`, which matches "") a series is read by the
    branch of its first non-empty spelling alone, not again by each branch before it (an exporter writing Hostname
    alone was read by three: a 14-step query of a by-pod share with exporter.virtual_gpus read 46,506 samples, now
    39,562). The same series as one branch per spelling without the check for a regex matching no empty name (a
    Grafana variable's values and their alternation) and for one matching every name (All)."""
    sources = labels.node_sources
    last = len(sources) - 1
    return [[*first[:-1], f"{source}=~{quoted(regex)}", *(first[-1:] if k < last else [])]
            for k, (source, first) in enumerate(zip(sources, named_first(sources)))]


def named_first(sources: tuple[str, ...]) -> list[list[str]]:
    """Per node spelling of `sources` (in their order), the matchers of a series it is the first non-empty one of:
    each spelling before it empty, it not."""
    return [[*(f'{name}=""' for name in sources[:k]), f'{source}!=""'] for k, source in enumerate(sources)]


def selector(metric: str, matchers: list[str] | tuple[str, ...]) -> str:
    return f"{metric}{{{', '.join(matchers)}}}" if matchers else metric


def coalesce_node(expr: str, labels: Labels) -> str:
    """`expr` with its first non-empty node spelling written into the label `node`."""
    sources = labels.node_sources
    if sources == (labels.node,):
        return expr
    target = quoted(labels.node)
    joined = f"label_join({expr}, {target}, \";\", {', '.join(quoted(s) for s in sources)})"
    return f'label_replace({joined}, {target}, "$1", {target}, {FIRST_JOINED})'


# label_replace's regex (anchored) of a label_join of names with ";": the first non-empty one ("" where all are)
FIRST_JOINED = '";*([^;]*).*"'


def gpu_identity(labels: Labels) -> tuple[str, ...]:
    """Labels that together name one physical GPU, whatever spelling its exporter uses (a series
    may lack some: the cluster on a Prometheus of one cluster, all but one node spelling)."""
    return (labels.cluster, *labels.node_sources, "gpu")


INSTANCE_IDENTITY = (MIG_INSTANCE_LABEL, MIG_PROFILE_LABEL)  # a MIG instance of a GPU (empty on a whole GPU)
# A MIG instance of one GPU as the per-pod look-back tells it apart (_Device): its GPU_I_ID alone. Its profile is the
# copy read's, as the node spelling is: dcgm-exporter before 4.8.4 wrote some profiles wrong (#544, #713: `7g.79gb` for
# `7g.80gb`), and an upgrade respells every series of the instance at once, which made one instance two for the
# look-back (a pod's 10,000 MiB read 20,000).
INSTANCE_SLOT = (MIG_INSTANCE_LABEL,)


def _copy_spelled(labels: Labels) -> tuple[str, ...]:
    """The labels of a GPU instance whose values are those of the copy read (_Device): the node's spellings and the
    MIG profile."""
    return (*labels.node_sources, MIG_PROFILE_LABEL)


def _listed(names) -> str:
    return ", ".join(dict.fromkeys(names))


def _raw(metric: str, branches: list[list[str]], extra: list[str], function: str) -> str:
    """One selector per scope branch, with `function` applied ({} = the selector; {1}: the branch's number; {2}: the
    branch's place as millionths to subtract, _less_placed)."""
    function = _read_as(metric, function)
    parts = [function.format(selector(metric, [*branch, *extra]), k, _less_placed(k))
             for k, branch in enumerate(branches)]
    return parts[0] if len(parts) == 1 else "(" + " or ".join(parts) + ")"


# the floor tests the forms write of a selector `{0}` (_read_as): a reading; a blank, as 1 or 0; a blank
_FLOOR_TESTS = (f" < {BLANK_FLOOR}", f"{{0}} >= bool {BLANK_FLOOR}", f"{{0}} >= {BLANK_FLOOR}")


def _read_as(metric: str, function: str) -> str:
    """`function` (a form of a gauge's selector) as `metric` is read. The forms write a reading as a sample under the
    blank floor (`< 1e14`) and a blank as the selector at or above it (`{0} >= 1e14`, `{0} >= bool 1e14`); a field for
    which DCGM writes 0 where the GPU cannot read it (blanks.UNREAD_AT_ZERO: memory temperature on GPUs without the
    sensor) takes its 0 for a blank in both, so that such a GPU has no line, no place in a mean, minimum or count, and
    no alert, as a GPU writing the blank has none."""
    if metric not in UNREAD_AT_ZERO:
        return function
    # a form testing the floor otherwise (`min_over_time({0}[5m]) >= 1e14`) would take the 0 for a reading: refused
    assert function.count(BLANK_FLOOR) == sum(function.count(test) for test in _FLOOR_TESTS), function
    return (function.replace(f" < {BLANK_FLOOR}", f" < {BLANK_FLOOR} > 0")
            .replace(f"{{0}} >= bool {BLANK_FLOOR}", f"(({{0}} >= bool {BLANK_FLOOR}) + ({{0}} == bool 0))")
            .replace(f"{{0}} >= {BLANK_FLOOR}", f"({{0}} >= {BLANK_FLOOR} or {{0}} == 0)"))


def _less_placed(k: int) -> str:
    """` - k * 0.000001` (chosen_copy's place of a copy), written shorter where that is the same float: nothing for
    the first place, `k`e-6 where that literal is the product (1 to 4: every place of the bundled node spellings)."""
    if k == 0:
        return ""
    return f" - {k}e-6" if float(f"{k}e-6") == k * 0.000001 else f" - {k} * 0.000001"


@dataclass(frozen=True)
class _Device:
    """How a query reads a field the exporter splits per process (catalog.PER_PROCESS_FIELDS) when it runs
    with KUBERNETES_VIRTUAL_GPUS=true: a GPU pods hold has its own series without pod labels (the device's
    value) and one copy per pod (that pod's processes' sum). A GPU of an exporter without the setting, or
    before 4.5.3, has copies only, each the device's value.

    The device's value of each GPU (instance) is its own series where it has one, else any copy (they are
    all the device's value there): `max by (identity) (X{pod=""}) or max by (identity) (X)`, both taken
    over every series of the GPU whatever the pod and namespace variables select (`identity`: the labels
    of one GPU instance as its exporter writes them, gpu_identity with the MIG instance). A per-GPU query
    keeps the GPUs that have a series in scope (`and on (identity)`); a per-pod query of the whole GPU
    (`whole`) gives each pod's copy in scope the device's value (`* 0 + on (identity) group_left`);
    a per-pod query of the pod's own share reads the copies as they are.

    `lookback` (per-pod panels, label_lookback): the pods a GPU is named under are those a scrape within that
    window named, not only the latest scrape's (an exporter without KUBERNETES_VIRTUAL_GPUS names a GPU pods
    share by time-slicing or MPS under one of them per scrape, which one changing from scrape to scrape:
    dcgm-exporter #340; the others' series are marked stale at that scrape), whichever exporter copy named them.
    Each such pod shows with the GPU's latest reading (`_read`: the copy chosen_copy chooses per GPU, as the per-GPU
    panels do, its fresh reading, else its latest within the window; the device's own series first where the exporter
    writes one; the blank dropped once a copy is chosen),
    the GPU named by its UUID (GPU_LABEL) whatever node spelling its copies carry, so a GPU counts once per pod, a
    replaced exporter's copy or one from before a Prometheus restart (not marked stale) does not outread a newer
    one, one failed scrape hides nothing, and a GPU without a reading within the window (its exporter gone) shows
    under no pod; a pod's own share (`shares`, not `whole`) is read the same way from the pod's copies."""

    scoped: list[list[str]]  # the query's scope
    unscoped: list[list[str]]  # the scope without the workload variables (pod, namespace)
    identity: tuple[str, ...]  # the labels naming one GPU instance, as its exporter writes them
    pod: str
    per_pod: bool
    whole: bool
    shares: bool = True  # exporter.virtual_gpus: the fields of PER_PROCESS_FIELDS hold each pod's own share
    lookback: str | None = None
    labels: Labels | None = None  # the pod matchers (named, unnamed); with `lookback`, the node spellings too
    resolution: str | None = None  # with `lookback`: the scrape interval (`<seconds>s`)
    outer: tuple[str, ...] = ()  # with `lookback`: the labels the query's outer grouping keeps (the pod's, ...)
    total: tuple[str, ...] = ()  # with `lookback`: a share's fields (used, free), read from one copy (chosen_copy)
    stepped: bool = False  # with `lookback`, a rule's: the gauge formats a step's reading (gauge_readings)
    # with `lookback`, a group of pods' (a namespace's) sum or mean: its use of a GPU is its pods' shares added up where
    # they are shares (_shares_added); its largest or least reading is a pod's
    added: bool = False
    # with `lookback` and the node variable: the scope without it, where a pod's own share is read from (`reading`)
    anywhere: list[list[str]] | None = None
    # with `anywhere`: the node variable's matchers (no workload's), of the copies placing a GPU on the node (on_node)
    placing: list[list[str]] | None = None
    # a rule's mean compared by sign (mean_sign): the pods' namings at a step read twice, marked for the sum and the
    # count; any reading not made of such rows is refused (NotCombined), so that no row goes unmarked
    marked: bool = False
    # with `lookback`, a panel's (_Merge's `pod_gpu`): a GPU of a UUID of NVIDIA's form read at an index where it has no
    # fresh reading only where it has none at any index (_uuid_one)
    uuid_fresh: bool = False

    @property
    def named(self) -> str:
        """The matcher of a pod's copy (pod_named)."""
        return pod_named(self.labels)

    @property
    def unnamed(self) -> str:
        """The matcher of the device's own series (pod_unnamed)."""
        return pod_unnamed(self.labels)

    def chooses(self, metric: str, gauge: str) -> bool:
        """Whether `metric`'s reading is that of the copy a share's used chooses (`total`, its fields; blanks dropped;
        not with the per-process fields of exporter.virtual_gpus, whose copies do not hold the same fields)."""
        return (self.lookback is not None and len(self.total) > 1 and metric in self.total
                and gauge == LATEST and not (self.shares and set(self.total) & set(PER_PROCESS_FIELDS)))

    def reading(self, metric: str, extra: list[str], gauge: str, summed: bool = False) -> str | None:
        """The field's samples as the query must read them (`gauge` formats a selector: the latest reading
        or one over a window, blanks removed), or None: as they are. `summed` (with `chooses`): the sum of the fields of
        `total` of the copy chosen, in place of `metric`'s reading."""
        own_share = self.shares and metric in PER_PROCESS_FIELDS and self.per_pod and not self.whole
        if self.marked and (self.lookback is None or own_share or not self.stepped or gauge == COUNTED):
            raise NotCombined(metric)
        any_pod = [m for m in extra if m != self.named]
        # a field split by labels of its own (an XID code's count) has a reading per code
        field_labels = own_labels_of(metric)
        if self.lookback is not None:
            labels = self.labels
            # a GPU instance is its GPU's UUID and MIG instance (GPU_LABEL, INSTANCE_SLOT), not its node and index nor
            # its profile: an exporter upgrade can rename the node (the old one wrote its own pod's name into Hostname,
            # the new one the node into hostname) or respell the profile, which made the GPU (instance) two for the
            # lookback
            slot = (labels.cluster, GPU_LABEL, "gpu", *INSTANCE_SLOT, *field_labels)
            # one series per GPU instance and outer group (a pod), labelled alike whatever the field and whichever
            # copy was read, the node's spellings, the index and the profile those of the copy read (the node coalesced
            # after)
            shown = (*slot, *_copy_spelled(labels))
            keep = (*slot, *(name for name in self.outer if name not in shown))  # a GPU instance and pod
            # a rule's gauge at a step of its window (a count reads as the panels do)
            stepped = self.stepped and gauge != COUNTED
            pods = own_share and self.added and self.pod not in self.outer  # a group's sum or mean: shares added
            if own_share and stepped:  # the pod's own copies, each scrape's (the exporter writes one per pod)
                if not pods:
                    return None
                copies = identified(_parenthesised(_raw(metric, self.scoped, extra, gauge)), labels)
                own = identified(_raw(metric, self.unscoped, [*any_pod, self.unnamed], gauge), labels)
                return self._shares_added(copies, (*keep, *COPY_LABELS, *labels.node_sources), slot,
                                          f"max by ({_listed(slot)}) ({own})")
            if own_share:
                # a group's: each pod's share first, the pod named with its namespace (a pod name is unique only
                # within its namespace, and `current` matches on both)
                each = (*keep, self.pod, labels.namespace) if pods else keep
                # the pod's copies under any node spelling, as with All nodes (the copy chosen_copy chooses may be an
                # old exporter's, its own pod's name in Hostname: read among the node-spelled copies alone, a pod
                # left the panel), of the GPUs a copy spelled with the node named a pod on within the lookback
                tiers = self._read(metric, False, self.anywhere or self.scoped, extra, each, any_pod, gauge == COUNTED)
                # no pod's share on a GPU whose latest scrape named no pod (idle_gpus), as the other per-pod panels
                # read it: a pod that ended, or was recreated on another GPU of its node, read its last share of the
                # GPU it left for the look-back (60 % for 70 beside its new GPU; 70 % on a GPU idle since)
                left = off_idle(_unblanked(_either(tiers, each), gauge), metric, self.unscoped, labels, self.resolution)
                read = f"max by ({_listed((*each, *shown))}) {left}"
                if self.anywhere is not None:
                    read = f"({read} and on ({_listed(slot[:3])}) {on_node(metric, self.placing, labels)})"
                if not pods:
                    return read
                # the device's series written at the GPU's copies' latest scrape within the lookback (through a failed
                # scrape too), not at an older one (a GPU idle a minute ago, whose exporter wrote its series then, has
                # no shares now) nor a newer one (a GPU whose pods left, an exporter before 4.5.3 writing its own
                # series since: its pods' last copies, each the device's value, read once)
                def latest(more: str, by: tuple[str, ...] = ()) -> str:  # per GPU instance (and `by`), the time of
                    # its series' latest sample (sample_time)
                    last = sample_time(self.lookback, self.resolution)
                    series = identified(_raw(metric, self.unscoped, [*any_pod, more], last), labels)
                    return f"max by ({_listed((*slot, *by))}) ({series})"
                own, copied = self.unnamed, self.named
                device = f"({latest(own)} == {latest(copied)})"
                # the pods whose copies that scrape wrote (a pod gone within the lookback adds no share)
                pod = (self.pod, labels.namespace)
                current = (f"({latest(copied, pod)} >= on ({_listed(slot)}) group_left () {latest(copied)})",
                           _listed((*slot, *pod)))
                return self._shares_added(read, (*keep, *shown), slot, device, current)
            if stepped:
                return self._stepped(metric, extra, gauge, summed, slot, keep, any_pod)
            counting = gauge == COUNTED
            tiers = self._read(metric, summed and self.chooses(metric, gauge), self.unscoped, any_pod, slot, any_pod,
                               counting, served=True)
            if self.shares and metric in PER_PROCESS_FIELDS and not self.chooses(metric, gauge):  # own series first
                own = self._read(metric, False, self.unscoped, [*any_pod, self.unnamed], slot, any_pod, counting,
                                 served=True)
                tiers = (own[0], tiers[0], own[1], tiers[1])
            # the late tier only for a GPU instance none of whose own labels' series is fresh (one_copy's `unfresh`)
            unfresh = tuple(name for name in slot if name in self.outer or name not in field_labels)
            if self.uuid_fresh:  # the old exporter's index of a GPU another exporter numbers apart: not read late
                # beside the fresh reading at the new index (the pod read the higher, the old exporter's last reading,
                # up to 1.5 scrape intervals after it: 800 W for 267)
                tiers = tuple(map(_uuid_one, tiers))
                unfresh = tuple(ONE_LABEL if name == "gpu" else name for name in unfresh)
            read = _unblanked(_either(tiers, unfresh), gauge)
            if successive_labels(metric) and not counting:  # the XID code: the GPU's newest code series alone
                read = f"({read} and on ({_listed(slot)}) {self._newest_series(metric, any_pod, slot)})"
            return self._named_on(metric, extra, keep, slot, read)
        if not self.shares or metric not in PER_PROCESS_FIELDS or own_share:
            return None
        scoped = _parenthesised(_raw(metric, self.scoped, extra, gauge))
        identity = (*self.identity, *field_labels)
        strip = f"max by ({_listed(identity)}) "
        own = _parenthesised(_raw(metric, self.unscoped, [*any_pod, self.unnamed], gauge))
        any_copy = _parenthesised(_raw(metric, self.unscoped, any_pod, gauge))
        # the pods' copies only where the copy wrote no series of its own (4.5.3+: a blank one too; its pods' copies
        # are their shares, the largest of which was read as the device's value at the blank)
        written = _parenthesised(_raw(metric, self.unscoped, [*any_pod, self.unnamed], _written(gauge)))
        device = f"({strip}{own} or ({strip}{any_copy} unless on ({_listed(identity)}) {written}))"
        matching = f"on ({_listed(identity)})"
        if self.per_pod:
            return f"({scoped} * 0 + {matching} group_left () {device})"
        return f"({device} and {matching} {scoped})"

    def _newest_series(self, metric: str, any_pod: list[str], slot: tuple[str, ...]) -> str:
        """Of a field whose own labels' series follow one another (successive_labels: the XID code), each GPU instance's
        series (`slot`, those labels among it) with the newest sample within the lookback (sample_time), whatever pod
        or copy wrote it. The tiers choose per code: after 119 then 79, 119 stood beside 79 for the lookback where no
        staleness marker ended it (a Prometheus restart), and the pod's line read the larger (test_xid_code_falls)."""
        successive = successive_labels(metric)
        times = identified(_raw(metric, self.unscoped, any_pod, sample_time(self.lookback, self.resolution)),
                           self.labels)
        gpu = _listed(name for name in slot if name not in successive)
        return f"topk by ({gpu}) (1, max by ({_listed(slot)}) ({times}))"

    def _shares_added(self, copies: str, group: tuple[str, ...], slot: tuple[str, ...], device: str,
                      current: tuple[str, str] | None = None) -> str:
        """A group of pods' (a namespace's) reading of a field split per process on each GPU instance (`slot`), from
        its pods' `copies` (a series per pod, GPU_LABEL naming the GPU): where the exporter writes the GPU's own series
        (`device`: the GPU instances that have it, pod empty: dcgm-exporter 4.5.3 and later, whose pods' copies are
        their own shares), the group's pods' copies added up (each pod's largest copy, a pod named by its namespace and
        name, per `group`: the GPU instance, the group's labels, the copy's exporter and node spellings; `current`, a
        panel's: only the pods, matched on the labels it names, whose copies the GPU's latest scrape wrote: a group
        per container carries no namespace of its own to match on); elsewhere each copy is the device's whole
        value (before 4.5.3), and the group's largest stands (the caller's max of the copies). Two pods of a namespace
        on 12,000 and 9,000 MiB of one 4.5.3 GPU read 21,000, not 12,000; two pods' copies of a 4.5.2 GPU's 39,200 MiB
        read 39,200, not 78,400."""
        each = f"max by ({_listed((*group, self.pod, self.labels.namespace))}) ({copies})"  # a pod: its namespace too
        group = _listed(group)
        each = f"({each} and on ({current[1]}) {current[0]})" if current else each
        added = f"sum by ({group}) ({each})"
        return f"(({added} and on ({_listed(slot)}) {device}) or ({copies} unless on ({_listed(slot)}) {device}))"

    def _stepped(self, metric: str, extra: list[str], gauge: str, summed: bool, slot: tuple[str, ...],
                 keep: tuple[str, ...], any_pod: list[str]) -> str:
        """A rule's reading at one step of its window (`gauge`, step_reading) per pod a scrape within the lookback
        (up to the step) named on a GPU instance (`slot`), and what else `keep` holds: the GPU's reading at that
        step, from whichever copy of it holds one under any pod (the highest; `summed`: the sum of the share's
        fields, `total`, of one copy), the device's own series first where the exporter writes one. So a GPU an
        exporter without KUBERNETES_VIRTUAL_GPUS names under one of its pods per scrape reads whole, at every
        scrape, under each pod a scrape of the lookback named, as the panels show it (`reading`), and each sample
        is still read once (at the step after it), as CloudWatch takes each observation once."""
        labels = self.labels
        names = self.total if summed and metric in self.total and len(self.total) > 1 else (metric,)
        field_labels = tuple(dict.fromkeys(name for field in names for name in own_labels_of(field)))
        copy = _listed((*slot, *field_labels, *COPY_LABELS, *_copy_spelled(labels)))

        def copies(more: list[str]) -> str:
            """Each copy's reading of the GPU instance at the step (a share's fields added up per copy), the highest."""
            read = [f"max by ({copy}) ({identified(_raw(name, self.unscoped, [*any_pod, *more], gauge), labels)})"
                    for name in names]
            value = read[0] if len(read) == 1 else "(" + " + ".join(read) + ")"
            return f"topk by ({_listed(slot)}) (1, {value})"
        device = copies([])
        if self.shares and metric in PER_PROCESS_FIELDS:  # the device's own series first
            own = copies([self.unnamed])
            # the pods' copies only where no copy wrote a series of its own at the step (4.5.3+: a blank one too; its
            # pods' copies are their shares, the largest of which was read as the device's value at the blank)
            written = identified(_raw(metric, self.unscoped, [*any_pod, self.unnamed], _written(gauge)), labels)
            device = f"({own} or on ({_listed(slot)}) ({device} unless on ({_listed(slot)}) {written}))"
        at_step = _raw(names[0], self.unscoped, any_pod, f"present_over_time({{}}[{self.resolution}])")
        return self._named_on(metric, extra, keep, slot, device, at_step)

    def reads_device(self, metric: str) -> bool:
        """Whether a per-GPU panel reads `metric` as the device's value of each GPU from its own series and its pods'
        copies (exporter.virtual_gpus' per-process fields, not per pod, not over the per-pod look-back): `tiers`."""
        return self.shares and metric in PER_PROCESS_FIELDS and not self.per_pod and self.lookback is None

    def tiers(self, metric: str, extra: list[str], resolution: str, within: str, scale: str = "",
              fresher: Labels | None = None) -> tuple[str, tuple[str, str]]:
        """Per-GPU panels (`reads_device`): the device's value of each copy of a GPU instance (one series per
        `identity`: one exporter's copy) as one_copy's (fresh, (late, key)) read it, as fresh_copies and looked_back
        read any other gauge. A copy's device value at a scrape is its own series' sample (no pod: dcgm-exporter
        4.5.3 and later, whose pods' copies are their own shares) where the scrape wrote one, DCGM's blank no reading;
        else its pods' copies' (each the device's value: before 4.5.3, or with the setting off). Fresh: that of the
        latest scrape where it was within the last scrape interval (`resolution`). Late: the latest such value at a
        step of the scrape interval within the look-back `within`, and the key of the copy, the time of that reading,
        while the copy has a reading within `within` (looked_back's test). So a GPU whose own series reads the blank at
        every other scrape keeps its latest reading (its pods' largest share was read in its place, 30 % of a GPU at
        80 %), a GPU whose copies all read the blank keeps it too (it left the panels), and a GPU gone without a
        staleness marker leaves with the look-back (read for the instant selector's 5 minutes, and a replaced
        exporter's copy outread the live one as long). Both keep the copies with a reading within `within` of a series
        in scope (the pod and namespace variables: the pods a scrape within the look-back named, as per-pod panels
        show them; the late value through its key, one_copy). `fresher` (the panel's labels): the fresh tier leaves out
        a GPU's copies older than its newest (older_samples: the fresher of two fresh copies, as the per-pod panels
        read it)."""
        field_labels = own_labels_of(metric)
        identity = _listed((*self.identity, *field_labels))
        any_pod = [m for m in extra if m != self.named]
        own, copied = [*any_pod, self.unnamed], [*any_pod, self.named]
        ms = f"{_seconds(resolution) * 1000}ms"

        def device(form: str) -> str:
            """The copy's own series' reading (`form` of the selector) where it has a sample, else its pods' copies'
            (the blank no reading)."""
            return (f"((max by ({identity}) ({_raw(metric, self.unscoped, own, form)}) or max by ({identity}) "
                    f"({_raw(metric, self.unscoped, copied, form + ' < ' + BLANK_FLOOR)})) < {BLANK_FLOOR})")
        # a copy with a reading within the look-back of a series in scope: the key's test, and the fresh tier's scope
        read = f"max by ({identity}) ({_raw(metric, self.scoped, extra, _read_within(within))})"
        fresh = device(f"({{0}} and present_over_time({{0}}[{ms}]))")
        if fresher is not None:
            fresh = f"({fresh} unless on ({identity}) {older_samples(metric, self.unscoped, any_pod, fresher)})"
        step = device(f"last_over_time({{0}}[{resolution}])")
        # each copy's value, a MIG instance's too, only while it has a reading within the look-back itself: a step of
        # the subquery reads a sample up to a scrape interval older than the step, and the key gates the copy only as
        # a whole (an instance gone beside one reading the blank was summed for up to a scrape interval past it)
        value = f"(last_over_time({step}[{within}:{resolution}]) and on ({identity}) {read}){scale}"
        newest = f"max_over_time((time() + 0.1 * atan({step} / 100000))[{within}:{resolution}])"
        key = f"({newest} and on ({identity}) {read})"
        return f"({fresh}{scale} and on ({identity}) {read})", (value, key)

    def counted_within(self, metric: str, extra: list[str], resolution: str, within: str) -> str:
        """A panel's count of GPUs reporting `metric` (`reads_device`): each copy of a GPU instance with a device
        reading within the look-back `within`, as `tiers` reads one (its fresh reading, else its latest step's within
        the look-back): the GPU's own series where it has a sample, its pods' copies only where it has none. So a
        count counts exactly the GPUs the per-GPU panels show a value for: a GPU whose own series read only DCGM's
        blank within the look-back is not counted by its pods' shares (a pod's share is no reading of the device: a
        time-sliced GPU whose own series read the blank for 4 minutes counted by its two pods' 12,000 and 9,000 MiB)."""
        identity = _listed((*self.identity, *own_labels_of(metric)))
        fresh, (value, _) = self.tiers(metric, extra, resolution, within)
        return f"({fresh} or on ({identity}) {value})"

    def counted_in_period(self, metric: str, extra: list[str], period: tuple[str, str | None]) -> str:
        """A rule's count of GPUs reporting `metric` (`reads_device`) over its period (window, offset): each copy of a
        GPU instance with a reading of the device among the period's samples: its own series' (no pod) where the
        period holds a sample of it, else its pods' copies' (each the device's value there), DCGM's blank no reading;
        kept for the GPU instances with a series in scope. A GPU whose own series read only the blank in the period is
        not counted by its pods' shares (a time-sliced GPU whose own series read the blank for 4 minutes counted in
        each 60 s period: 4 GPUs for 3), as the per-GPU rules read no value of it then. An exporter upgraded within
        the period to one writing the GPU's own series, which reads only the blank, counts it by neither."""
        identity = _listed((*self.identity, *own_labels_of(metric)))
        any_pod = [m for m in extra if m != self.named]
        own, copied = [*any_pod, self.unnamed], [*any_pod, self.named]
        read, span = counted(False, period), f"[{period[0]}]{_offset(period[1])}"
        written = _raw(metric, self.unscoped, own, f"present_over_time({{}}{span})")
        device = (f"(max by ({identity}) ({_raw(metric, self.unscoped, own, read)}) or (max by ({identity}) "
                  f"({_raw(metric, self.unscoped, copied, read)}) unless on ({identity}) {written}))")
        return f"({device} and on ({identity}) {_raw(metric, self.scoped, extra, f'present_over_time({{}}{span})')})"

    def named_in_period(self, metric: str, extra: list[str], form: str, period: tuple[str, str | None]) -> str:
        """A rule's count per pod over the period `period` (window, offset): the copies of `metric` under each pod at
        the period's steps where its total's rule reads the pod (_stepped with `form`, a step's reading: the GPU
        instance has a reading at the step, and a scrape within the look-back before the step named the pod on it),
        so a count and its total, mean, largest or smallest read the same pods at the same steps (a count read the
        pods named within the period and the look-back before it, and kept a pod that left a GPU still reported up
        to 27 s longer than its total at 30 s scrapes off the rule's steps), and a GPU the exporter names under one
        of its pods per scrape counts for each pod so named, whether the period's scrapes named it or not (at one
        scrape per period, a pod named at alternate scrapes read 1 GPU for 2 at every other period). The copies keep
        the node spellings of the copy read for the caller's merge; a GPU instance is matched by GPU_LABEL."""
        labels = self.labels
        any_pod = [m for m in extra if m != self.named]
        slot = (labels.cluster, GPU_LABEL, "gpu", *INSTANCE_SLOT, *own_labels_of(metric))
        keep = (*slot, *(name for name in self.outer if name not in (*slot, *_copy_spelled(labels))))
        step = self._stepped(metric, extra, form, False, slot, keep, any_pod)
        return f"max_over_time({step}[{period[0]}:{self.resolution}]{_offset(period[1])})"

    def _named_on(self, metric: str, extra: list[str], keep: tuple[str, ...], slot: tuple[str, ...],
                  device: str, at_step: str | None = None) -> str:
        """Each pod (and what else `keep` holds) a scrape within the lookback named on a GPU instance (`slot`), once,
        with `device`'s reading of that GPU instance (one series per `slot`), the node's spellings and the index of the
        copy read (the node coalesced after). No pod is on a GPU whose latest scrape named none (idle_gpus; a rule's
        steps, `at_step`, in the form read at a step of a subquery). A pod named on another node since is left out
        of the node it left: a panel's, the targets _naming_targets keeps; a rule's step, those left_targets leaves out
        (they kept it there for the look-back where its GPU went to another pod at once, no scrape finding it idle: a
        pod's power read 450 W for 250 for two minutes after it moved, test_pod_moved_node).
        A rule's step (`at_step`: the series `device` reads its GPU instances from, each with a sample within the step)
        judges the pods named on a GPU instance with a reading at the step alone: the rest meet no row of `device`
        (the join on `slot`), and each judgement keeps or drops a naming series by its own labels, so the same rows
        are joined, and the look-back's pods are read on about one step in six (a 30 s scrape at 5 s steps), not at
        every step. Marked for a mean's sum and count (mean_sign), those namings are read twice, each judgement and
        the naming once (the idle rule 1.12 -> 0.67 s of Prometheus CPU an evaluation at 66 GPUs:
        docs/performance.md)."""
        named = _raw(metric, self.anywhere or self.scoped, extra, f"present_over_time({{}}[{self.lookback}])")
        on = f"on ({_listed((*self._pod_keys(), *COPY_LABELS))})"
        if at_step is None:
            named = f"{named} and {on} {self._naming_targets(metric)}"
            instance = []
        else:
            judged = f"({identified(named, self.labels)} and on ({_listed(slot)}) {identified(at_step, self.labels)})"
            if self.marked:  # read twice, for a mean's sum and count (mean_sign)
                judged = mean_sign.marked_twice(judged)
            named = f"{judged} unless {on} {left_targets(metric, self.unscoped, self.labels, self.lookback, named)}"
            instance = [m for m in extra if m.startswith(f"{MIG_INSTANCE_LABEL}=") or
                        m.startswith(f"{MIG_INSTANCE_LABEL}!=")]  # the kind judged: whole GPUs or MIG instances
        named = off_idle(named, metric, self.unscoped, self.labels, _scrape_of(self.lookback), at_step is not None,
                         instance)
        if at_step is None:  # a rule's step named its GPUs before
            named = identified(named, self.labels)
        if self.anywhere is not None:  # named by any copy, on a GPU the node variable's node holds (on_node)
            named = f"({named} and on ({_listed(slot[:3])}) {on_node(metric, self.placing, self.labels)})"
        spellings = _listed(_copy_spelled(self.labels))
        pods = f"max by ({_listed(keep)}) ({named})"
        return f"({pods} * 0 + on ({_listed(slot)}) group_left ({spellings}) {device})"

    def _pod_keys(self) -> tuple[str, ...]:
        return self.labels.cluster, self.labels.namespace, self.pod

    def _naming_targets(self, metric: str) -> str:
        """Per pod, the scrape targets (exporters) whose latest naming of it (sample_time) is within 1.5 scrape
        intervals of its newest naming on any target: a pod runs on one node, so after it moved to another node the
        targets of the node it left (named no more since) drop out of the look-back at the new node's next scrape at
        the latest (it read the GPU it left, at that GPU's reading after, for the whole look-back: 310 W for 250, 2 GPUs
        for 1, test_pod_moved_node). Two exporters of one node naming the pod (an upgrade's overlap) both stay: their
        scrapes are less than an interval apart; so do a GPU pods share, named under one of them per scrape (one
        target). Read over the pods' series of the metric whatever the node, pod and namespace variables pick (a pod
        seen on the node it left, that node picked, still left it)."""
        return naming_targets(metric, self.unscoped, self.labels, self.lookback, self.resolution)

    def _read(self, metric: str, summed: bool, branches: list[list[str]], extra: list[str], keep: tuple[str, ...],
              any_pod: list[str], counting: bool = False, served: bool = False) -> tuple[str, str]:
        """Per `keep` (a GPU instance, or a pod's share of one), (its fresh reading, its late reading) of `metric`
        (`summed`: the sum of the fields of the share `total` it is one of), read from the copy chosen_copy chooses per
        GPU (by its copies under any pod, `any_pod`, whatever the pod and namespace variables select: the choice the
        per-GPU panels make), labelled as that copy's series (the node spellings and index it has; GPU_LABEL names the
        GPU). Fresh: the chosen copy's series with a sample within the last scrape interval. Late (no copy with a
        fresh reading other than the blank, or none in scope): the copy chosen_copy's late tier chooses, per `keep`
        the highest of its series' latest readings within the lookback (a time-sliced GPU's pods' series, read at
        different scrapes: not necessarily the newest), each series at its latest reading within the lookback
        (latest_reading: a GPU whose field reads DCGM's blank at every other scrape keeps its latest reading: a
        namespace's total lost it at alternate scrapes), a series with no reading in it at its latest sample. Each
        field's series of a copy are made one first (an exporter in KUBERNETES_VIRTUAL_GPUS mode writes pod_uid on the
        per-process fields, vgpu on the others), so a share's fields add up one to one. DCGM's blank is dropped after
        (_unblanked), not before: a series reading nothing but the blank within the lookback reads it (the blank ranks
        above any reading here), which another series' older reading does not stand in for (an idle GPU read 0 % then
        taken by a pod whose copy reads the blank showed 0 % under the pod). A count (`counting`) reads in
        the late tier the copy's series with a reading within the lookback (counted: `min_over_time(x[lookback]) <
        floor`; only gauges are read per pod over the lookback), not its latest sample: a GPU whose field reads the
        blank at every other scrape was counted at alternate scrapes only. `served` (a GPU instance's reading, not a
        count): the late tier leaves out a series its exporter stopped serving while it served the GPU's others
        (_superseded: a pod's series of a time-sliced GPU the exporter named under another pod since, whose older
        reading showed under each pod at a failed scrape, 55 % for 50 %)."""
        labels = self.labels
        names = self.total if metric in self.total and len(self.total) > 1 else (metric,)
        field_labels = tuple(dict.fromkeys(name for field in names for name in own_labels_of(field)))
        # each UUID label kept for identified (a copy grouped by the settings' label alone was named by its node where
        # its series carry the other, and its pods, named by the UUID, found no value: a panel showed nothing)
        copy = _listed((labels.cluster, *uuid_spellings(labels), "gpu", *COPY_LABELS, *labels.node_sources,
                        *INSTANCE_IDENTITY, *field_labels, labels.pod, labels.namespace,
                        *(name for name in keep if name != GPU_LABEL)))
        shown = names if summed else (metric,)
        on = _listed((labels.cluster, GPU_LABEL, "gpu", *COPY_LABELS))

        def read(name: str, gauge: str, fresh: bool = False) -> str:
            """The copies' series of `name`; where several fields add up (or over the lookback, a copy's series under
            the pods it named), each copy's series of it made one."""
            series = fresh_copies(name, branches, extra, gauge, self.resolution) if fresh else \
                _raw(name, branches, extra, gauge)
            return f"max by ({copy}) ({series})" if len(names) > 1 or not fresh else _parenthesised(series)

        def tier(gauge: str, fresh: bool, lookback: str | None) -> str:
            value = " + ".join(read(name, gauge, fresh) for name in shown)
            chosen = chosen_copy(labels, names, self.unscoped, any_pod, fresh=self.resolution, lookback=lookback)
            return f"topk by ({_listed(keep)}) (1, {identified(_parenthesised(value), labels)} and on ({on}) {chosen})"
        late = counted(False, (self.lookback, None)) if counting else latest_reading(self.resolution, self.lookback)
        if served and not counting:
            late = f"(({late}) unless {_superseded(labels, self.lookback, self.resolution)})"
        return tier("{0}", True, None), tier(late, False, self.lookback)


def held_labels(labels: Labels, either: bool = False) -> tuple[str, ...]:
    """The labels naming a GPU instance whichever exporter copy reads it (idle_gpus): the GPU's UUID and index, its MIG
    instance, not the scrape target's (COPY_LABELS): a GPU left idle is idle for every copy of it. Judged per target, a
    pod that ended just after its node's exporter was rolled (the old copy's last scrape naming it, the new copy's
    finding the GPU idle) stayed on the GPU at the idle GPU's reading for the look-back after the old copy's last scrape
    (60 W under the ended pod beside the pod still running; test_rolled_copy_left_gpu). A GPU without a UUID is one
    with the other GPUs of its index in the cluster (as _gpu_copy_keys): it is found idle only where none of them names
    a pod. `either` (the per-pod panels' and rules'): the GPU's UUID under either label (UUID_KEY, uuid_keyed): an
    exporter rolled with --use-old-namespace turned off or on respells it, and a pod that ended at such a rollout (the
    old copies' last scrape naming it under `uuid`, the new copies' finding the GPU idle under `UUID`) stayed on the
    GPU at its idle reading for the look-back (0 MiB under the ended pod at 15, 45 and 90 s after it)."""
    return labels.cluster, UUID_KEY if either else labels.uuid, "gpu", *INSTANCE_IDENTITY


UUID_KEY = "gpudash_uuid"  # held_labels' `either`: a GPU's UUID under either label (uuid_keyed)


def uuid_keyed(expr: str, labels: Labels) -> str:
    """`expr` with UUID_KEY holding each series' UUID, under the first label of uuid_spellings its series carries it
    (uuid_carried's choice): a series carrying both (a scrape relabelling a copy of it into the other label) is keyed
    by the UUID once, as one carrying either. Keyed by the labels' values joined, a rollout ending that relabelling made
    the old copies (both labels) another GPU than the new exporter's, and a pod that ended at it stayed at the idle
    GPU's 0 MiB on 'Framebuffer used by pod' for the look-back (15, 45 and 90 s after it)."""
    return uuid_carried(expr, labels, UUID_KEY)


def off_idle(series: str, metric: str, branches: list[list[str]], labels: Labels, scrape: str,
             rule: bool = False, instance: list[str] | tuple[str, ...] = ()) -> str:
    """`series` (pods named on GPUs: the per-pod panels' and rules') less those on a GPU idle_gpus finds idle (of
    `metric` in `branches`, `scrape` and `rule` as it says), each side keyed by the GPU's UUID under either label
    (uuid_keyed, held_labels' `either`: idle_gpus' `either` form, which no other reading takes). `instance` (a rule's:
    the matcher of MIG_INSTANCE_LABEL every series of `series` meets, whole GPUs' or MIG instances'): the idle side
    reads those series alone. It is matched on held_labels, the MIG instance among them, so a series of the other kind
    meets no row of `series`, nor one of its own side that could: the same rows go, and a whole GPUs' rule no longer
    reads every MIG instance at each step, nor a MIG rule every whole GPU (the idle rule's MIG instances' half
    0.375 -> 0.276 s of Prometheus CPU an evaluation at 66 GPUs: docs/performance.md)."""
    idle = idle_gpus(metric, [[*branch, *instance] for branch in branches], labels, scrape, rule, either=True)
    return f"({uuid_keyed(series, labels)} unless on ({_listed(held_labels(labels, True))}) {idle})"


def idle_gpus(metric: str, branches: list[list[str]], labels: Labels, scrape: str, rule: bool = False,
              naming: list[list[str]] | None = None, marked: bool = False, either: bool = False) -> str:
    """The GPU instances (held_labels: any exporter copy's) whose latest scrape named no pod on them. An exporter writes
    a GPU no pod holds without pod labels (with KUBERNETES_VIRTUAL_GPUS its own series and its pods' copies are of one
    scrape), so a pod named on such a GPU before holds it no more: a pod recreated on another GPU of its node read the
    GPU it left beside its new one for the look-back (310 W for 250, 2 GPUs for 1: test_pod_moved_gpu), as did a pod
    that ended. A GPU pods share by time-slicing, which an exporter names under one of them per scrape, always names
    one.
    Idle: the newest sample of the GPU's series of `metric` (`scrape` its scrape interval) is one without a pod,
    whichever copy wrote it, and (a GPU without a UUID) no series naming a pod has a sample within the last interval.
    The newest sample's time on each side: the instant selector's (timestamp(): its own sample's time, the newest
    where the series is not stale) or the newest any step of half the interval over the look-back read (a range's
    function gives the step's time, so timestamp() per step: a sample is read at a step until the next scrape's sample
    or staleness marker, an interval later); a naming sample's time a tenth of a millisecond later (NAMED_LATER), so
    one maximum tells the side (a tie, an exporter writing the GPU's own series beside its pods' copies at every
    scrape, is the pods').
    Windows of whole intervals ("without a pod within two intervals, none naming one within one", c46fa7e2) could not
    order two copies' readings within an interval of each other: a pod starting on an idle GPU as its exporter was
    rolled (the old copy's last scrape idle, the new copy's 14 s later naming it) left the per-pod panels at the new
    copy's failed or late scrape, 300 W gone up to 16 s (test_rolled_copy_pod_started); its mirror (a pod ending then)
    stays off the GPU. The recent naming sample: a GPU without a UUID is judged with the other GPUs of its index in the
    cluster (held_labels), whose newest sample alternates between their nodes' scrapes, so a pod named within the
    interval holds it, counted only where it is not stale (timestamp()): Prometheus marks a series stale at the scrape
    that no longer writes it, so on live scrapes a GPU is idle from that scrape on, even when it came a little early
    (its naming sample before it within the interval). A failed scrape alone leaves no GPU idle (the newest sample
    stays what it was); a scrape late after the one finding the GPU idle leaves it idle. timestamp() of a selector is
    sought anew at each step on Prometheus before 2.47: about 1 s more of Prometheus CPU an idle test at 64 GPUs over
    6 h (docs/performance.md). A rule's steps (`rule`) keep windows of whole intervals (_idle_within_intervals); the
    per-GPU panels (_left_idle) order the samples so too, at All and with a pod picked. `naming` (the branches of the
    naming side, else `branches`): a per-GPU panel with a pod picked orders the picked pods' naming samples against
    the samples without a pod (_left_idle). `marked` (a per-GPU panel at All, naming side and other alike): one
    selector of every series, the naming ones told by their pod label (NAMED_MARK), not a selector of each side.
    The naming side reads each series' newest sample as the other side does (timestamp() of the instant selector, or
    the steps'), so a naming sample after the look-back's last step is ordered by its own time, and a naming sample
    within the last interval holds only a GPU without a UUID (judged with the other GPUs of its index): a pod that
    ended between two exporter copies' scrapes (a DaemonSet rolled with maxSurge: the old copy's scrape naming it, the
    new copy's 15 s later finding the GPU idle) stayed on the per-pod panels at the old copy's readings until that
    naming sample was an interval old (200 W, 1 GPU under the ended pod: test_combined_fleet_story); the per-GPU panels
    with a pod picked (_left_idle, counted_rate) drew the GPU that pod left for as long (Power draw 200 W for nothing).
    `either` (held_labels'): a GPU keyed by its UUID under either label (a GPU without one: under neither)."""
    held, seconds = _listed(held_labels(labels, either)), _seconds(scrape)
    if rule:
        return _idle_within_intervals(metric, branches, labels, scrape, either)
    steps = f"[{LABEL_LOOKBACK_SCRAPES * seconds}s:{half_interval(seconds)}]"
    latest = "(timestamp({0}) or max_over_time(timestamp({0})" + steps + "))"
    # the side naming a pod: the picked pods' (`naming`) by any pod label, as exact as the regex and shorter: a series
    # both sides read (an exporter pod's, its namespace picked) is read without a pod (`or` keeps the left side's); in
    # `recent` (a GPU without a UUID, which dcgm-exporter always writes) it holds the GPU. At All (`marked`) as every
    # other reading of a pod: an exporter pod's `pod` is none (pod_named)
    named = pod_named(labels, marked or naming is None)
    naming = branches if naming is None else naming
    if marked:  # one selector of every series, a naming one's time NAMED_LATER later (NAMED_MARK: by its pod label)
        times = _marked(_raw(metric, branches, [], latest), labels)
        sides = (f'{times} + on ({NAMED_MARK}) group_left () (label_replace(vector({NAMED_LATER}), "{NAMED_MARK}", '
                 f'"1", "", "") or vector(0))')
    else:
        unnamed = _raw(metric, branches, [pod_unnamed(labels)], latest)
        sides = f"{unnamed} or {_raw(metric, naming, [named], f'{latest} + {NAMED_LATER}')}"
    sides = uuid_keyed(sides, labels) if either else sides
    newest = f"(max by ({held}) ({sides}) * {1 / NAMED_LATER:g} + 0.5) % 10 < 1"
    uuid = [f'{name}=""' for name in (uuid_spellings(labels) if either else (labels.uuid,))]
    recent = _raw(metric, naming, [named, *uuid], f"timestamp({{}}) >= time() - {seconds}")
    return f"({newest} unless on ({held}) {recent})"


def _idle_within_intervals(metric: str, branches: list[list[str]], labels: Labels, scrape: str,
                           either: bool = False) -> str:
    """A rule's idle_gpus (at the steps of its subquery): a series of `metric` without a pod written within the last
    two scrape intervals (`scrape` one) and none naming one within the last interval. A scrape writes a GPU's series
    with pods or without, an interval apart, so judged per copy this is the newest scrape's; over copies it cannot
    order two copies' readings within an interval of each other (a pod started as its exporter was rolled is left out
    of the steps from the new copy's failed or late scrape, up to an interval), which the panels' form orders by the
    samples' times at 2.6 times the idle rule's CPU an evaluation (0.42 -> 1.09 s at 64 GPUs: docs/performance.md). A
    field the exporter splits per process (exporter.virtual_gpus, `labels.copies`) has the GPU's own series beside its
    pods' copies at every scrape: there within one interval, or within two (a GPU whose scrapes stopped is not idle
    from one interval after its last)."""
    held, two = _listed(held_labels(labels, either)), f"{2 * _seconds(scrape)}s"

    def within(unnamed: str, named: str) -> str:
        """A series without a pod within `unnamed` and none naming one within `named` (`either`: keyed by the UUID
        under either label, held_labels')."""
        sides = (_raw(metric, branches, [matcher], f"present_over_time({{}}[{window}])")
                 for matcher, window in ((pod_unnamed(labels), unnamed), (pod_named(labels), named)))
        return " unless on ({}) ".format(held).join(uuid_keyed(side, labels) if either else side for side in sides)
    if labels.copies and metric in PER_PROCESS_FIELDS:
        return f"({within(scrape, scrape)} or {within(two, two)})"
    return f"({within(two, scrape)})"


def pod_named(labels: Labels, exporters: bool = True) -> str:
    """The matcher of a series naming a workload pod: its pod label (labels.pod) set, to no name of a pod of an exporter
    DaemonSet the settings name (Labels.exporter_pods, exporter_styles.exporter_pod_names: the pods verify's workload
    pod check finds carried as a workload's). Through a ServiceMonitor that honors labels and keeps its target's pod
    (the GPU operator's with honorLabels: true), a GPU no pod holds carries the exporter pod's `pod` and `namespace`,
    and with exporter.virtual_gpus so does a held GPU's own series: each is read as a series without a pod (an idle
    GPU, the device's own series), as it arrives through gpudash's ServiceMonitor. By the name alone, whatever the
    namespace (a selector cannot test two labels together, and every selector of a panel or rule reads this): a
    workload pod with such a name (`<DaemonSet>-` and five of Kubernetes' generated characters: a Job's pod, the Job
    named like the DaemonSet) is read as none, and verify names it. An exporter run as a sidecar in the
    workload's pod is scraped as that pod, named otherwise: it holds the GPU.
    Not `exporters`: any pod label, an exporter pod's too (the per-GPU panels' judgement of a GPU a picked pod left,
    _left_idle: the picked pods' series)."""
    if labels.exporter_pods is None or not exporters:
        return f'{labels.pod}!=""'
    return f"{labels.pod}!~{quoted('|' + labels.exporter_pods)}"


def pod_unnamed(labels: Labels) -> str:
    """The matcher of a series naming no workload pod (pod_named's complement): no pod label, or an exporter pod's."""
    if labels.exporter_pods is None:
        return f'{labels.pod}=""'
    return f"{labels.pod}=~{quoted('|' + labels.exporter_pods)}"


def _marked(series: str, labels: Labels) -> str:
    """`series` with NAMED_MARK set on those naming a workload pod (pod_named: an exporter pod's name marks none)."""
    marked = f'label_replace({series}, "{NAMED_MARK}", "1", {quoted(labels.pod)}, ".+")'
    if labels.exporter_pods is None:
        return marked
    return f'label_replace({marked}, "{NAMED_MARK}", "", {quoted(labels.pod)}, {quoted(labels.exporter_pods)})'


# added to a naming series' sample time in idle_gpus: a tenth of Prometheus' millisecond, so the newest of a GPU's
# samples tells which side it is (its time * 1e4 ends in 0 without a pod, in 1 naming one), and a tie goes to the pod
NAMED_LATER = 1e-4
NAMED_MARK = "gpudash_named"  # idle_gpus' `marked`: a label set on the naming series (those with a pod)


LATEST = "{0} < " + BLANK_FLOOR  # a gauge's latest sample, blanks left out (_gauge_form)
# a count's reading of a gauge now: its latest sample, a blank no reading (counted; in panels, the GPUs without one
# are read over the look-back: _per_gpu's `within`, _Device._read's `counting`)
COUNTED = "{} < " + BLANK_FLOOR


def counted(is_counter: bool, period: tuple[str, str | None] | None = None) -> str:
    """What a count of GPUs reporting a field reads of each series (`{}` the selector): the series where it holds a
    reading. A GPU reports a field when it has a reading of it: DCGM's blank (the field not supported on the GPU, or
    not read) is no reading, as everywhere else (a gauge's or a counter's floor, blanks.py), so a GPU writing only
    the blank is not counted, as the CloudWatch agent, which drops the blank, publishes nothing for it. Now (no
    `period`): the latest sample, a reading. Over a period (`period`: its length and offset, an alert's): a reading
    among the period's samples, `min_over_time(x[w] offset o) < floor` (its least sample is one), not
    present_over_time, which counts a GPU whatever its samples read."""
    floor = short(reading_floor(is_counter))
    if period is None:
        return "{} < " + floor
    return f"min_over_time({{}}[{period[0]}]{_offset(period[1])}) < {floor}"


def is_counter_field(metric: str, catalog: Catalog) -> bool:
    return metric in catalog and catalog.get(metric).is_counter
GPU_LABEL = "gpudash_gpu"  # the label a GPU is named by: its UUID, else its node spelling (identified)


def identified(expr: str, labels: Labels) -> str:
    """`expr` with the label GPU_LABEL naming each series' GPU with its index (`gpu`): its UUID (under either label the
    exporter writes it: uuid_spellings), or where a series has none, its first non-empty node spelling."""
    return _named(expr, labels, False)


def uuid_spellings(labels: Labels) -> tuple[str, ...]:
    """The labels a GPU is named by its UUID under (identified), the first it has: Labels.uuid, then the other of
    UUID_LABELS. An exporter rolled with --use-old-namespace turned on or off writes `uuid` for `UUID`, or back, from
    one scrape to the next: named by one label alone, the copies of before the rollout were other GPUs for the
    look-back (a fleet panel counted 4 GPUs for 2), and a rule remembering GPUs by their UUID lost every GPU of the
    node an hour on."""
    return (labels.uuid, *(name for name in UUID_LABELS if name != labels.uuid))


def uuid_carried(expr: str, labels: Labels, into: str | None = None) -> str:
    """`expr` with Labels.uuid (or the label `into`) holding each series' UUID under the first label of uuid_spellings
    it has: a GPU's copies from before and after a rollout respelling `uuid` as `UUID` carry one UUID, so a GPU (named
    by its UUID under either: identified) has one UUID label, not one per spelling."""
    spellings = uuid_spellings(labels)
    uuid = quoted(into or labels.uuid)
    joined = f'label_join({expr}, {uuid}, ";", {_listed(map(quoted, spellings))})'
    return f'label_replace({joined}, {uuid}, "$1", {uuid}, {FIRST_JOINED})'


def coalesced_gpu(expr: str, labels: Labels) -> str:
    """identified(coalesce_node(expr)): also the first non-empty node spelling written into the node label."""
    return _named(expr, labels, True)


def _named(expr: str, labels: Labels, node: bool) -> str:
    """identified, and with `node` coalesce_node too: the UUID labels and the node spellings joined once into
    GPU_LABEL, the node label read from the spellings' part of it (with two UUID labels, a joining for the node
    and another for the GPU took some 15 bytes more a naming: most of the bundled all-metrics dashboard's room)."""
    target = quoted(GPU_LABEL)
    uuids = tuple(map(quoted, uuid_spellings(labels)))
    sources = labels.node_sources
    named = f'label_join({expr}, {target}, ";", {_listed((*uuids, *map(quoted, sources)))})'
    if node and sources != (labels.node,):
        skipped = "[^;]*;" * len(uuids)  # the UUID labels' part, then the first non-empty spelling (FIRST_JOINED)
        named = f'label_replace({named}, {quoted(labels.node)}, "$1", {target}, "{skipped}{FIRST_JOINED[1:]})'
    return f'label_replace({named}, {target}, "$1", {target}, {FIRST_JOINED})'  # the UUID, else the first spelling


def spelled(labels: Labels) -> list[list[str]]:
    """One matcher list per node spelling (labels.node_sources, most trusted first): the series whose first non-empty
    spelling it is (the last: every series left, whatever it carries)."""
    sources = labels.node_sources
    return [[*(f'{name}=""' for name in sources[:k]), *([f'{source}!=""'] if k < len(sources) - 1 else [])]
            for k, source in enumerate(sources)]


# A name spelled like a DaemonSet pod's, as Kubernetes generates them (a name, "-", five characters of its generated
# names' alphabet): what an exporter given no NODE_NAME writes for its node (its pod's hostname), but also the shape of
# real node names (Cluster API machines `<cluster>-md-0-<hash>-<5>`, Karpenter node claims `<nodepool>-<5>`, OpenShift
# machines). gpus_named ranks a GPU's copies by their spelling's place (PLACE_RANK each), then in one spelling by the
# evidence that a name is an exporter's pod's: one of the pod names of the exporter DaemonSets the settings name
# (Labels.exporter_pods: EXPORTER_POD_RANK), else the shape alone (POD_LIKE_RANK), then by freshness (0.5): a pod's name
# is no node's name however fresh (at the last of 12 evaluations a copy of the pod's name read within the rule's step
# outranked the node's read a few seconds before), a node named like a pod is taken before a name its DaemonSet's pods
# are given, and no rank within a place reaches the next place.
POD_LIKE = ".+-" + GENERATED_SUFFIX
PLACE_RANK, POD_LIKE_RANK, EXPORTER_POD_RANK = 3, 1, 2


def _pod_tiers(source: str, exporter_pods: str | None) -> tuple[tuple[int, list[str]], ...]:
    """(rank, matchers) of the copies of one node spelling (`source`) by what tells its value to be an exporter pod's
    name, each copy ranked by the first tier that holds it (gpus_named joins them with `or`, which keeps a series of
    the first): the name of a pod of a known exporter DaemonSet (`exporter_pods`, whose names all have the shape), the
    shape alone, none. The node gpudash's scrape job writes (SCRAPED_NODE) is no pod's name, nor is the target's
    address (TARGET_ADDRESS): one tier. Every other spelling is ranked, the last too: with `labels.node: Hostname` (one
    spelling) or a list ending in Hostname, an old exporter's pod name and the node tied there (the line named by the
    pod in 5 of 12 calls)."""
    if source in (SCRAPED_NODE, TARGET_ADDRESS):
        return ((0, []),)
    shaped = (POD_LIKE_RANK, [f"{source}=~{quoted(POD_LIKE)}"])
    known = ((EXPORTER_POD_RANK, [f"{source}=~{quoted(exporter_pods)}"]),) if exporter_pods else ()
    return (*known, shaped, (0, []))


def _ranked_names(metric: str, matchers: list[str], span: str | None, resolution: str, labels: Labels,
                  node: str | None, whole: bool = False, kept: str | None = None, indexless: bool = False) -> str:
    """gpus_named's candidates: each name a copy of `metric` gives its GPU (cluster, GPU_LABEL, index), ranked: the
    copies within `span`, a copy with a sample within the last scrape interval half a rank more; `whole` (or no
    `span`): a panel's, by the step's copies and the dashboard's range (_whole_range_names), of the GPUs `kept`
    holds where given; `indexless`, a GPU named by a UUID of NVIDIA's form without its index (unindexed)."""
    if whole or span is None:
        return _whole_range_names(metric, matchers, resolution, labels, kept=kept)
    seconds = _seconds(resolution)
    terms = []
    for place_rank, each in _tiers(metric, matchers, labels, node):
        less = f" - {place_rank:g}" if place_rank else ""  # x - 0 is x, -0 too
        terms.append(f"(present_over_time({each}[{seconds * 1000}ms]) * 0.5 or "
                     f"present_over_time({each}[{span}]) * 0){less}")
    ranked = terms[0] if len(terms) == 1 else "(" + " or ".join(f"({term})" for term in terms) + ")"
    named = coalesced_gpu(ranked, labels)
    if indexless:
        named = unindexed(named)
    return f"max by ({_listed((labels.cluster, GPU_LABEL, 'gpu', labels.node))}) ({named})"


def _tiers(metric: str, matchers: list[str], labels: Labels, node: str | None) -> list[tuple[int, str]]:
    """(place and rank, selector) of each tier of gpus_named's candidates, best first: the node spellings in their
    order (spelled), each by _pod_tiers; `node` (a regex) matched against each tier's own spelling."""
    tiers = []
    for k, branch in enumerate(spelled(labels)):
        source = labels.node_sources[k]
        named = [f"{source}=~{quoted(node)}"] if node is not None else []
        # the k-th spelling: an exporter pod's name, then one shaped like a pod's, then any other (_pod_tiers); a
        # pod's name matched (its pattern ends in GENERATED_SUFFIX: never empty) needs no `source!=""` beside it
        # (13 bytes a tier, some 1.9 kB of the bundled all-metrics dashboard)
        unset = f'{source}!=""'
        tiers += [(k * PLACE_RANK + rank,
                   selector(metric, [*matchers, *(m for m in branch if not pod_like or m != unset), *named, *pod_like]))
                  for rank, pod_like in _pod_tiers(source, labels.exporter_pods)]
    return tiers


FRESH_LABEL = "gpudash_fresh"  # marks a name's presence terms among its ranks (_whole_range_names), summed away
PICK_LABEL = "gpudash_pick"  # marks a GPU whose name the node variable matches (_picked)


def _whole_range_names(metric: str, matchers: list[str], resolution: str, labels: Labels,
                       listing: bool = False, kept: str | None = None, seen: list[list[str]] | None = None) -> str:
    """gpus_named's candidates in a panel, at each step: every name a copy of `metric` gives the GPU over the dashboard's
    range (DASHBOARD_RANGE, at its end: `@ end()`, which Prometheus reads once per query, not at each step), ranked by
    its best tier (_tiers; the best weighs most, the last 1), and at each step a quarter rank more where a copy of the
    GPU named so has a sample within the look-back (label_lookback) and another quarter where it has one within the
    last scrape interval. So a lesser spelling is named by the range's better one at every step (an exporter upgrade's
    old pod name, then the node), while two names of one tier (a GPU on node-a, then on node-b: a node replaced by
    another on the same hardware) are each drawn where its own copies are, not the one fresh at the range's end over
    the whole range (tests/integration/test_gpu_moved_in_range.py). The presence is one selector of every copy a window
    (_present, marked with FRESH_LABEL, added to the name's rank by the sum), not one per tier beside the tier's: a
    panel names its GPUs so, and a dashboard's ConfigMap has no room for a second selector per tier in each of its
    panels (GF011). The tiers are named and ordered (_name_order) apart from the presence, where all is read at the
    range's end: Prometheus does that once a query, the presence's naming at each step (at 64 GPUs over 6 h, 1.7 s of
    Prometheus CPU for a per-GPU gauge panel named with both together, 1.5 s so). A name present alone (before the range, within the first steps' look-back) reads at most half and is no
    candidate. The tiers are not matched against the node variable: it picks the name chosen (_picked).
    `listing` (the Node variable): the names at the GPU's best tier over the range, each, with no presence: the names
    its lines carry at some step (both nodes of a replaced one; not an upgraded exporter's old pod name); `seen` (the
    matchers of a picked pod or namespace) weighs half a kind more each copy naming the picked pod, so that of the
    GPU's names at its best kind those a copy naming the pod carries are listed where any does, every one where none
    does (the pod named only by an upgraded exporter's copies, which carry its own pod's name): a GPU on node-a held by
    the picked pod, then on node-b (a node replaced on the same hardware) held by another, listed node-b too, where the
    per-GPU panels draw nothing of the pod (tests/integration/test_node_variable_pod_picked.py).
    `kept` (_filtered_gpus): only the copies of the GPUs it holds are ranked, each GPU's every copy."""
    tiers = _tiers(metric, matchers, labels, None)
    terms = [f"present_over_time({each}[{DASHBOARD_RANGE}] @ end())" + (f" * {weight:g}" if weight != 1 else "")
             for weight, each in ((_range_weight(place_rank, labels, listing), each) for place_rank, each in tiers)]
    gpu = _listed((labels.cluster, GPU_LABEL, "gpu"))
    gpu_name = _listed((labels.cluster, GPU_LABEL, "gpu", labels.node))
    if listing:
        ranked = "(" + " or ".join(terms) + ")"
        if seen is not None:  # half a kind more for a copy naming the picked pod, none for the others (`+` matches each)
            copies = f"present_over_time({{}}[{DASHBOARD_RANGE}] @ end())"
            ranked = (f"({ranked} + ({_raw(metric, seen, [], copies)} / 2 or "
                      f"{copies.format(selector(metric, matchers))} * 0))")
        ranks = f"max by ({gpu_name}) ({coalesced_gpu(ranked, labels)})"
        return f"({ranks} == on ({gpu}) group_left () max by ({gpu}) ({ranks}))"
    every, seconds = selector(metric, matchers), _seconds(resolution)
    # the tiers named and ordered (_name_order: the name alone decides it) where every term is read at the range's
    # end, which Prometheus evaluates once a query, not at each step; the presence named at each step
    only = f" and on ({_listed(_gpu_copy_keys(labels))}) ({kept})" if kept else ""
    ranked = _name_order(coalesced_gpu("(" + " or ".join(terms) + ")" + only, labels), labels.node)
    present = coalesced_gpu(_present(every, seconds, labels.cluster, only), labels)
    ranks = f"max by ({gpu_name}, {FRESH_LABEL}) ({ranked} or {present})"
    return f"sum without ({FRESH_LABEL}) ({ranks}) > 0.5"  # by the GPU and name: 10 bytes less a naming


# A name's weight over the range (_range_weight): its kind (a node's name, one shaped like a DaemonSet pod's, a known
# exporter pod's, a target's address), then its spelling's place, PLACE_STEP a place: below a step's presence (0.25,
# _present) with every place and the name order (_name_order) added, above the name order alone (under 2^-7).
PLACE_STEP = 0.01
# The kind again in the fraction, a kind's step the span of every place (len(node_sources) * PLACE_STEP): a GPU's
# copies at two indexes, ranked by the fraction alone (_one_index_per_uuid: a step's presence first), are then told
# apart by their kind before their spelling's place and the name order: the old exporter's pod's name and the node,
# both scraped, whether both are written into Hostname or the pod's into hostname and the node's into Hostname (by
# place first, or by the name order alone, the GPUs were drawn under the old exporter's pod through the overlap). With
# the default four spellings kinds 2 to 4 add 0.04 to 0.12, places up to 0.03: all together below 0.25.


def _range_weight(place_rank: int, labels: Labels, listing: bool = False) -> float:
    """The weight of a name of a tier (_tiers' place and rank) over the dashboard's range (_whole_range_names): the
    kind of name first (a node's name 4, one shaped like a pod's 3, an exporter pod's 2, a target's address 1), then
    the spelling's place (node, hostname, Hostname: PLACE_STEP each), which a step's own copies outweigh. So an
    upgraded exporter's pod name is named by the node's name over the whole range, while two nodes' names, whatever
    labels spell them, are each drawn where its copies are: a GPU moved from a node scraped without a node label
    (its exporter's hostname) to one gpudash's scrape job labels (`node`) drew the first node's half hour under the
    second (spelling ranked over the range first). Of a node's names present at one step, the better spelling's.
    `listing` (the Node variable): the kind alone, every name of the GPU's best kind listed."""
    place, rank = divmod(place_rank, PLACE_RANK)
    sources = labels.node_sources
    kind = 1 if sources[place] == TARGET_ADDRESS else 4 - rank
    return kind if listing else kind + ((kind - 1) * len(sources) + len(sources) - 1 - place) * PLACE_STEP


def _present(every: str, seconds: int, cluster: str, kept: str = "") -> str:
    """Each copy of `every` (a selector) at each step, marked FRESH_LABEL: 0.5 where it has a sample within the last
    scrape interval (`seconds`), 0.25 where it has one within the look-back (label_lookback) alone. Its highest per
    name is what a quarter for a copy within the look-back and another for one within the interval add up to (a
    sample within the interval is one within the look-back): one series a copy, not two. `kept`: a filter of the
    copies (`and ...`). Each weighs a little less by its sample's age, so that of names alike at one node and index
    (gpus_named's slot) the GPU seen there last wins, under the name order's least step (2^-10) all together:
    * a fresh copy, first by the samples its target's (`cluster`, instance, job) longest-lived copy has within the
      look-back over 1e5 (1 to 5: the target that began last wins), then by its sample's age in seconds over 1e7
      (an interval's 3e-6 at 30 s): two exporters of a rollout numbering a node's GPUs A and B apart (0 and 1, then 1
      and 0), both scraped, keep the new exporter's GPU at each index through the overlap, each GPU once. Alike at
      each index, A was kept at both ('Total power draw' 610 W for 800 to 820); with the copy scraped last winning
      (e42c90c9), each index's line flipped GPU as the two exporters' scrapes came in turn, at queries of another
      phase than Grafana's aligned steps ('n1 GPU 0' 510, 300, 510 W at 15, 33 and 45 s); with the copy that began
      last (131f5454), a pod starting on A in the overlap began a copy of A under the old exporter too, and A won both
      indexes (610 W for 820): a pod starting begins a copy, not a target. Targets that began within an interval of
      each other, or an overlap longer than the look-back (the count is capped by it), fall to the copy scraped last.
    * a copy within the look-back alone (its exporter missing scrapes, its target gone, its GPU moved away), by its
      latest sample's time to half an interval (stepped_time's steps, present_over_time's as a counter's: staleness
      markers are no samples) over 1e7: a GPU moved from n1 to n2 kept n1 among its names while its last sample
      there was within the look-back, and the GPU that took n1's index, its exporter then missing two scrapes, ranked
      alike there: the moved GPU could win n1 though named by n2, and the other was left out ('GPUs reporting' 1 for
      2, 'Total power draw' 300 W for 800; tests/integration/test_gpu_moved_slot_gap.py). The latest sample there
      now wins: the GPU that took the index.
    Targets scraped at one millisecond still tie."""
    half, lookback = half_interval(seconds), label_lookback(seconds)
    target = _listed((cluster, *COPY_LABELS))
    present = (f"(timestamp({every}) - time() >= -{seconds}) / 1e7 + 0.5 - on ({target}) group_left () max by "
               f"({target}) (count_over_time({every}[{lookback}])) / 1e5 or (max_over_time(timestamp("
               f"present_over_time({every}[{half}]))[{lookback}:{half}]) - time()) / 1e7 + 0.25")
    present = f"({present}){kept}" if kept else present
    return f'label_replace({present}, "{FRESH_LABEL}", "1", "", "")'


def _gpu_copy_keys(labels: Labels) -> tuple[str, ...]:
    """The labels every copy of one GPU shares (its cluster, UUID and index), whatever node spelling it has: a GPU
    without a UUID shares them with the other GPUs of its index (more, never fewer)."""
    return labels.cluster, labels.uuid, "gpu"


def _filtered_gpus(metrics: tuple[str, ...], matchers: list[str], only: tuple[str, ...], resolution: str) -> str:
    """The copies of `metrics` a panel's own filter (`only`, its matchers: a MIG instance's) keeps, over the
    dashboard's range and the look-back before it (label_lookback: the oldest sample a gauge's line reads at the
    first step), each read once a query (`@`): a panel of MIG instances names the GPUs that have one, every copy of
    each (the same names), not every GPU of the fleet at every step (on a fleet without MIG its naming cost 1.2-1.5 s
    of Prometheus CPU at 64 GPUs over 6 h, 10 s at 500, for a panel that draws nothing)."""
    within = label_lookback(_seconds(resolution))
    return " or ".join(f"present_over_time({each}[{window}] @ {at}())" for each in
                       (selector(metric, [*matchers, *only]) for metric in metrics)
                       for window, at in ((DASHBOARD_RANGE, "end"), (within, "start")))


def _picked(named: str, node: str, labels: Labels) -> str:
    """`named` (one name per GPU) where the name matches `node` (the node variable's regex, as a matcher reads it:
    anchored), marked with PICK_LABEL where it does: the node variable picks the GPUs a step names so, not the copies
    read (a GPU that stood under node-a, then node-b: picking node-a drew node-b's readings under node-a)."""
    marked = f"label_replace({named}, {quoted(PICK_LABEL)}, \"1\", {quoted(labels.node)}, {quoted(node)})"
    return f'({marked} and on ({PICK_LABEL}) label_replace(vector(1), "{PICK_LABEL}", "1", "", ""))'


def _first_name(ranked: str, labels: Labels, ordered: bool = False) -> str:
    """One series per GPU of `ranked` (its candidate names, _ranked_names): the highest ranked, ties told apart by
    the name (_name_order; `ordered`: `ranked` has the order added, _whole_range_names)."""
    if ordered:  # its rows carry the GPU and the name alone (the order's marks summed away): 14 bytes less a naming
        return f"topk without ({labels.node}) (1, {ranked})"
    return f"topk by ({_listed((labels.cluster, GPU_LABEL, 'gpu'))}) (1, {_name_order(ranked, labels.node)})"


# The characters a name's last ones are told apart by (_name_order), Kubernetes' generated names' alphabet first (a
# DaemonSet pod's five-character suffix: each of its characters has a code of its own), then the vowels; any other
# character (0, 1, 3, 8, '.', '-') reads as the first.
NAME_ORDER_ALPHABET = "bcdfghjklmnpqrstvwxz2456789aeiou"
# the last one: two pods of one DaemonSet end alike one time in 27; each character costs ~0.8 kB a naming (the
# multi-region example's all-metrics dashboard is 5 % under what client-side kubectl apply accepts, GF011)
NAME_ORDER_CHARACTERS = 1
NAME_ORDER_BITS = 5  # each character's code, 0 to 31 (NAME_ORDER_ALPHABET's place)
# all codes add less than 2^-7: below the 0.5 of freshness, the 1 between ranks (gpus_named) and a spelling's place
# over the range (PLACE_STEP)


def _name_order(named: str, label: str) -> str:
    """`named` (a rank per GPU and name) with a fraction added that only the name's `label` decides: codes of its last
    NAME_ORDER_CHARACTERS characters, bit by bit (a label set where the character is in the bit's class, joined with a
    weight), so that of names ranking alike topk keeps the same one whatever order Prometheus meets them in (a
    tie went to the first met, which differs from call to call). Names that end alike for those characters still tie."""
    bits = NAME_ORDER_CHARACTERS * NAME_ORDER_BITS
    for k in range(bits):
        position, bit = divmod(k, NAME_ORDER_BITS)
        members = "".join(c for place, c in enumerate(NAME_ORDER_ALPHABET) if place >> bit & 1)
        mark = f"gpudash_o{k}"
        weight = f"2^{k - bits - 7}"  # each above all below it together, all together below 2^-7
        named = (f'label_replace({named}, "{mark}", "1", "{label}", ".*[{members}]{"." * position}") + on ({mark}) '
                 f'group_left () (label_replace(vector({weight}), "{mark}", "1", "", "") or vector(0))')
    return named


def _written(gauge: str) -> str:
    """`gauge` (a form of a selector, _gauge_form's) with DCGM's blank kept: where the selector has a sample."""
    return gauge.replace(f" < {BLANK_FLOOR}", "", 1)


def _either(tiers: tuple[str, ...], keep: tuple[str, ...]) -> str:
    """The first of `tiers` that has a series of each `keep`."""
    return "(" + f" or on ({_listed(keep)}) ".join(tiers) + ")"


def _unblanked(tiers: str, gauge: str) -> str:
    """`tiers` (_Device._read's, or'ed: the copy chosen) without DCGM's blank, where `gauge` drops it."""
    return f"({tiers} < {BLANK_FLOOR})" if gauge in (LATEST, COUNTED) else tiers


def fresh_copies(metric: str, branches: list[list[str]], extra: list[str], gauge: str, resolution: str) -> str:
    """Each copy of a gauge whose latest sample was taken within the last scrape interval (`resolution`), read as
    `gauge` formats a selector: the instant selector's sample (a copy marked stale, by a failed scrape or its exporter
    replaced or gone, has none), kept where one range of the interval holds a sample (a copy from before a Prometheus
    restart, which no staleness marker ends, does not). One range, not taken_within's three: which of two scrapes a
    sample exactly an interval old counts at does not matter here (a copy's readings are all its own), and the
    per-pod used share reads some forty copies' selectors (three ranges each: 3.6 s for 1.9 s without, on the
    preview's sample at load 15). Written in milliseconds (`[30000ms]`), a form no other query uses."""
    seconds = int(resolution.removesuffix("s"))
    gauge = _read_as(metric, gauge)
    fresh = [f"({gauge.format(each, k)} and present_over_time({each}[{seconds * 1000}ms]))"
             for k, each in enumerate(selector(metric, [*branch, *extra]) for branch in branches)]
    return fresh[0] if len(fresh) == 1 else f"({' or '.join(fresh)})"


def older_samples(metric: str, branches: list[list[str]], extra: list[str], labels: Labels,
                  together: tuple[str, ...] = ()) -> str:
    """The series of `metric` of a GPU with a UUID whose latest sample (the instant selector's: timestamp() of the
    selector gives the sample's own time) is older than the newest reading (not DCGM's blank) of the GPU's complete
    copies (scrape targets), whatever pod the copies name: read `unless` it, of a GPU's fresh copies the fresher is
    read (a copy's series of one scrape, or copies sampled at one instant, all stay: the highest is read). The higher
    of two fresh copies was read before c75fe0bb: in a roll the old copy's 200 W for the new one's 60 (a MIG GPU's 350 W
    for 250), up to an interval (test_combined_fleet_story, test_mig_pod_ended_in_roll). A copy one of whose MIG
    instances reads the blank is no complete copy: its time does not make another copy older (a form tried without
    this read such a GPU as nothing where the older copy read it whole: test_copy_choice_hostile); it stays beside the
    older one, and the blank check (one_copy's `blanks`, chosen_copy) leaves it out. A GPU without a UUID is judged
    with the other GPUs of its index (held_labels): it keeps the higher. The pod and namespace variables do not scope
    it (as _left_idle's `anyone`): a picked pod's series older than a newer scrape naming no pod on its GPU is not
    read (the MIG instance a pod left, at the old copy's 19,600 MiB, for up to an interval). Copies that disagree
    throughout (two exporter versions reading a field differently) show the one scraped last, not one steady line.
    `together`: the fields a panel reads of one copy; a copy whose latest sample of one of them is the blank or none
    is no complete copy either (a new exporter's first scrape writing FB_FREE blank left the older copy's FB_USED out
    and its FB_FREE in: no copy held both, and 'Framebuffer in use' lost the GPU: test_fresher_copy_one_field_blank)."""
    uuid = labels.uuid
    anyone, gpus = _unscoped(branches, labels), [*extra, f'{uuid}!=""']
    # every series' time (a blank series is out of the fresh tier anyway), then the times of the copies' readings
    times = _raw(metric, anyone, gpus, "timestamp({0})")
    read = _raw(metric, anyone, gpus, f"(timestamp({{0}}) and {{0}} < {BLANK_FLOOR})")
    copy = _listed((labels.cluster, uuid, "gpu", *COPY_LABELS))
    if f'{MIG_INSTANCE_LABEL}=""' not in extra:  # a copy with a blank MIG instance (its series with a UUID: `read`'s)
        mig = list(dict.fromkeys([*extra, f'{MIG_INSTANCE_LABEL}!=""']))
        read = f"({read} unless on ({copy}) {_raw(metric, anyone, mig, f'{{0}} >= {BLANK_FLOOR}')})"
    for other in (name for name in together if name != metric):  # each other field read too, no instance blank
        read = (f"({read} and on ({copy}) {_raw(other, anyone, gpus, f'{{0}} < {BLANK_FLOOR}')} unless on ({copy}) "
                f"{_raw(other, anyone, gpus, f'{{0}} >= {BLANK_FLOOR}')})")
    gpu = _listed((labels.cluster, uuid, "gpu"))
    return f"({times} < on ({gpu}) group_left () max by ({gpu}) {_parenthesised(read)})"


def _unscoped(branches: list[list[str]], labels: Labels) -> list[list[str]]:
    """`branches` without the pod and namespace variables' matchers (every series of the GPUs the node and GPU
    variables select, whatever pod it names)."""
    workload, unnamed = (f"{labels.pod}=~", f"{labels.namespace}=~"), pod_unnamed(labels)
    return [list(branch) for branch in dict.fromkeys(
        tuple(m for m in branch if not m.startswith(workload) or m == unnamed) for branch in branches)]


# looked_back's tie-break: a reading's share of a millisecond added to its sample's time (0 to 0.94 ms), coarse enough
# to outlast the time's rounding (one float64 ulp at 1.8e9 s is 2.4e-7 s: a ten-thousandth of atan(v / 1e5) was
# below it, and copies read at one millisecond, 90 and 95 %, tied and showed either: test_late_copy_same_millisecond)
# and under a millisecond, so that a later sample's time always ranks higher
_TIE_SCALE = 0.0003


def looked_back(metric: str, branches: list[list[str]], extra: list[str], resolution: str, within: str,
                scale: str = "") -> tuple[str, str]:
    """Panels: (each copy's latest reading of a gauge within the look-back `within` (label_lookback: the window a
    count of GPUs reporting counts a GPU over, counted), each copy's key: the time of that reading), for a GPU without
    a fresh copy (fresh_copies). A step of the scrape interval (`resolution`) reads a copy's sample taken within it
    (not the blank, nor a copy marked stale, nor one from before a Prometheus restart, which no staleness marker
    ends, read again); the copy's latest such step is its reading, and the copy whose latest reading was taken last
    (the sample's own time, not its step's: of copies read in one step, the one scraped after a pod ended on the other;
    of readings taken at one millisecond the higher, _TIE_SCALE of its atan over 1000 added) is the GPU's. A copy
    counts only while it has a reading within `within` itself, the very test a count of GPUs reporting makes (`min_over_time(x[w]) < floor`): a
    GPU whose field reads DCGM's blank at every other scrape keeps its latest reading (an average over GPUs read
    62.727 then 62.7 at alternate scrapes), one writing only the blank has none, one gone none once its last reading
    is older than the look-back (the instant selector read it for 5 minutes where no staleness marker ended it), and a
    series from before an exporter restart or a Prometheus restart is not read beside a newer copy (the highest
    reading was: a pod's 300 W from before a restart shown at the live copy's failed scrape). `scale` multiplies the
    reading (a MIG stand-in's factor)."""
    step = _taken_reading(resolution)
    value = f"last_over_time({step}[{within}:{resolution}]){scale}"
    exact = f"(timestamp({{0}}) + {_TIE_SCALE} * (1.5708 + atan({{0}} / 1000)) and {{0}} < {BLANK_FLOOR})"
    key = f"(max_over_time({exact}[{within}:{resolution}]) and {_read_within(within)})"
    return _raw(metric, branches, extra, value), _raw(metric, branches, extra, key)


def _taken_reading(resolution: str) -> str:
    """A selector's (`{0}`) reading at a subquery step of `resolution`: its latest sample taken within the step before
    (a range: no staleness marker ends a series there, and none from before a Prometheus restart is read again past
    it), not the blank (looked_back). Of a sample exactly a step old (Prometheus 2's closed ranges read it at two
    steps) the later step holds the same reading: the latest reading is the same."""
    return f"(last_over_time({{0}}[{resolution}]) < {BLANK_FLOOR})"


def _unmarked(held: str) -> str:
    """`held` (a form of a selector `{0}` over the look-back: a MIG instance it holds) of an instance Prometheus has not
    marked stale (the instant selector reads it): one the exporter no longer serves is marked at the next scrape (MIG
    reconfigured, an instance destroyed) though the look-back still holds its samples (last_over_time skips the
    marker); one that stopped reporting without a marker is still read. A failed scrape marks every series of its
    target: the GPU has no fresh reading then, and is read from the late tier."""
    return f"(({held}) and {{0}})"


def _superseded(labels: Labels, within: str, resolution: str, by: tuple[str, ...] = ()) -> str:
    """A form of a selector (`{0}`): its series the exporter stopped serving while it still served its copy's others of
    the GPU (a MIG instance destroyed by a reconfiguration; a pod's series of a GPU the exporter names under one of the
    pods sharing it per scrape, named under another since): marked stale (the instant selector reads none) and its
    latest sample within `within` older than the newest of its copy's series (one scrape target's series of the GPU,
    by its UUID and index). A failed scrape marks every series of its target stale at once, the ones it last served
    alike (none older than the copy's newest): those stay the GPU's. A series that stopped without a staleness marker
    (as after a Prometheus restart) is not one: it is read while its latest reading is within the look-back. `by` (a
    GPU instance's labels, the copy's among them): the instances none of whose series (its own, its pods' copies) the
    exporter still served, not each series (a pod gone from an instance others hold leaves the instance). A series'
    latest sample's time is sample_time's: the instant selector's sample's own where it has one (one scrape after a
    MIG reconfiguration, before the next step, the new instances had no time yet at the steps alone, the old ones were
    not superseded, and a pod showed its old instance's 20,000 MiB beside its new one's 5,000), else to half a scrape
    interval (`resolution`). A series (an instance) the instant selector reads is never superseded, so the compared
    side takes the stepped time alone of the others (stepped_time: sample_time's without `timestamp()`, which
    Prometheus before 2.47 seeks anew at each step), the same times: each such series has no sample of its own there."""
    copy = _listed((labels.cluster, labels.uuid, "gpu", *COPY_LABELS))
    marked = f"unless on ({_listed(by)}) {{0}}" if by else "unless {0}"
    stale = f"({stepped_time(within, resolution)} {marked})"
    newest = sample_time(within, resolution)
    if by:
        stale, newest = (f"max by ({_listed(by)}) ({last})" for last in (stale, newest))
    return f"({stale} < on ({copy}) group_left () max by ({copy}) ({newest}))"


def _left_idle(metric: str, branches: list[list[str]], extra: list[str], labels: Labels, within: str,
               scrape: str, picked: tuple[str, ...] = (), held: bool = False) -> str:
    """A panel's series (within the look-back `within`) naming a pod on a GPU instance whose latest scrape named no
    pod (idle_gpus, read over every pod's series: the pod and namespace variables pick which GPUs show, not which of
    their series tell that the pod left), which a per-GPU panel's late tier and count leave out. With the pod or
    namespace variable set, a per-GPU panel read a GPU the picked pod had left at its latest reading under the pod for
    the look-back: 240 W and 70 % for two minutes after the pod ended, where the GPU drew 55 W at 0 %, and "GPUs
    reporting" counted it: the pod's series is marked stale, but the GPU's newer series, without a pod, is not
    in the variables' scope. A GPU pods share in turn (named under one of them per scrape) always names one, and a
    failed scrape leaves no GPU idle: both keep their reading.
    Judged by the samples' times, as the per-pod panels judge a GPU (idle_gpus). Where `picked` (the pod and namespace
    variables' regexes, in a panel of the GPUs held_gpus keeps) has a pod or namespace picked (workload_picked), the
    GPUs the picked pods hold (`held`, held_gpus) by the picked pods' naming samples against every sample without a
    pod, and the late tier and count of those GPUs leave nothing out (a GPU so judged idle is not held; one not idle
    has no series left); at All (not `held`) by every pod's naming samples (idle_gpus' `marked` form), which the late
    tier and count leave out. Each form's selectors are gated (workload_picked) so that one is read at All, the other
    with a pod or namespace picked: a selector gated off meets no series and costs next to nothing. Windows of whole
    intervals (_idle_within_intervals, read at All before 8c28d9b5) read a GPU idle where two exporter copies' newest
    readings lay within an interval of each other: a pod started as its exporter was rolled lost its GPU from the new
    copy's failed or late scrape and its late tier read the old copy's idle 60 W for its 300 W
    (test_rolled_copy_pod_started), and a drained node's GPU, written idle once before its exporter ended, was drawn
    again at the idle 60 W for an interval two intervals later (test_pod_ended_by_drain). Their cost at All: see
    docs/performance.md.
    With a pod picked (`held`) the series left read any pod label as a pod's, an exporter pod's too: one on a GPU
    idle_gpus reads idle is left out all the same. At All the series left, their marking and the recent naming series
    read an exporter pod's `pod` as no pod (pod_named): read as a pod's there, through a ServiceMonitor keeping its
    target's pod, with exporter.virtual_gpus a GPU a pod left was read from that pod's copy at the step it left
    ('Framebuffer in use' 22 % for 19 %: test_exporter_pod_as_no_pod)."""
    anyone = _unscoped(branches, labels)
    pod = pod_named(labels, not held)
    named = [m for m in extra if m not in (pod_named(labels), pod_named(labels, False))]
    gate = [workload_picked(picked, held)] if picked else []  # read with a pod or namespace picked (held), or at All
    left = _raw(metric, branches, [*named, *([] if held else gate), pod],
                f"present_over_time({{0}}[{within}])")
    if held:  # the picked pods' naming samples against any sample without a pod
        idle = idle_gpus(metric, [[*branch, *gate] for branch in anyone], labels, scrape,
                         naming=[[*branch, *gate] for branch in branches])
    else:  # at All: any pod's naming samples against any sample without a pod
        idle = idle_gpus(metric, [[*branch, *gate] for branch in anyone], labels, scrape, marked=True)
    return f"({left} and on ({_listed(held_labels(labels))}) {idle})"


PICKED_LABEL = "gpudash_w"  # a label no series has (workload_picked tests its empty value); short: ~240 a dashboard


def workload_picked(regexes: tuple[str, ...], picks: bool) -> str:
    """A matcher every series meets where one of `regexes` (the pod and namespace variables', `$pod`) matches no empty
    name (a pod or namespace picked: names are never empty) and none meets where all of them do (All, `.*`); not
    `picks`: the other way round. The label PICKED_LABEL, which no series has, is empty, and the regexes'
    concatenation matches "" only where each of them does (a variable's, `$pod`, as Grafana writes it: `.*`, a name
    escaped, or an alternation in parentheses; any other regex in parentheses). A selector holding it costs
    Prometheus next to nothing where it meets no series (_left_idle: one judgement read with a pod or namespace
    picked, another at All)."""
    joined = "".join(regex if regex.startswith("$") else f"({regex})" for regex in regexes)
    return f"{PICKED_LABEL}{'!~' if picks else '=~'}{quoted(joined)}"


# what a per-GPU or fleet panel says it draws with the pod or namespace variable set (draws_whole_gpus)
WHOLE_GPUS_NOTE = ("With a pod or namespace picked: the GPUs its pods hold, each whole (every MIG instance of one); a "
                   "pod's part of a GPU is drawn per pod.")


def draws_whole_gpus(query: Query) -> bool:
    """A panel query of GPUs (a line per GPU or node, or one value over them) whose value with the pod or namespace
    variable set is that of the GPUs the picked pods hold, each whole: a gauge or count (held_gpus), a counter's rate
    (counted_rate: the GPU's recording)."""
    return not query.raw_promql and not query.as_increase and set(group_keys(query.by)) <= {"cluster", "node", "gpu"}


def held_gpus(metrics: tuple[str, ...], scope: Scope, labels: Labels, within: str) -> str:
    """The GPUs (cluster, GPU_LABEL, index) the pods the pod and namespace variables pick hold, as a per-GPU or fleet
    panel draws them with either variable set: a series of one of `metrics` (a field and its MIG stand-in) in the
    scope with a sample within the look-back `within` (label_lookback, as the per-pod panels name pods), less one
    naming a pod on a GPU instance whose latest scrape named none (_left_idle: the pod left it; by the samples' times,
    read only with a pod or namespace picked: at All no GPU is left out). Each such GPU is read
    whole, as with every pod: a GPU split into MIG instances among namespaces read the picked namespace's instances
    alone (n2 GPU 0 20 % where the GPU is at 40 %, 3,000 of its 23,000 MiB used) under a legend that names the
    GPU, beside counter rates and device fields read whole; a pod's or namespace's part of a GPU is what the per-pod
    panels draw."""
    branches = [[*scope.naming(labels), *scope.workload(labels)]]
    held = [f"({_raw(metric, branches, [], f'present_over_time({{}}[{within}])')} unless "
            f"{_left_idle(metric, branches, [], labels, within, _scrape_of(within), scope.picked(), True)})"
            for metric in metrics]
    return identified(held[0] if len(held) == 1 else "(" + " or ".join(held) + ")", labels)


def _scrape_of(lookback: str) -> str:
    """The scrape interval of a panel's look-back (label_lookback)."""
    return f"{_seconds(lookback) // LABEL_LOOKBACK_SCRAPES}s"


def sample_time(within: str, resolution: str, present: bool = False) -> str:
    """A form of a selector (`{0}`): when each of its series' latest sample within `within` was taken: the instant
    selector's sample's own time where it has one, else to half the scrape interval `resolution`, the latest step of
    half the interval whose half interval before it holds a sample (a range: staleness markers are no samples). Two
    scrapes of a target are a scrape interval apart give or take their jitter, so a series the latest scrape wrote
    reads later than one it did not write (a pod gone, a MIG instance destroyed) unless the two scrapes fell within
    half an interval of each other. Read at steps of the interval itself, by the sample the instant selector reads
    (none past a staleness marker), a scrape taken late (past a step) and the next one on time and failed left no step
    between them: a pod of a time-sliced GPU gone at that late scrape looked as recent as the pods it wrote (a
    namespace read their shares added, 10,000 MiB for 6,000), a pod new at it had no time (left out), a destroyed MIG
    instance was read beside the live ones (15,000 for 10,000 MiB). `timestamp()` of a range's function is the step's
    time, cheap; of a selector it seeks every series again at every step on Prometheus before 2.47 (read at the
    instant alone here: read at every step of the subquery, the by-pod panels cost 2.5 times the Prometheus CPU).
    `present`: each step's range read through present_over_time (a counter's: the same step times)."""
    return f"(timestamp({{0}}) or {stepped_time(within, resolution, present)})"


def stepped_time(within: str, resolution: str, present: bool = False) -> str:
    """sample_time's of a series the instant selector does not read: the latest step of half the scrape interval
    (`resolution`) whose half interval before it holds a sample within `within` (`present`: read through
    present_over_time, whose step time is last_over_time's)."""
    seconds = _seconds(resolution)
    half = half_interval(seconds)
    # the steps reach half an interval past `within`: their ranges then hold every sample a step of the scrape interval
    # within it reads (_taken_reading: up to an interval before the step), as the late tier reads them (a destroyed
    # MIG instance whose last sample lay in that margin had no time, was not superseded, and was read beside the new)
    reach = _milliseconds_text(_seconds(within) * 1000 + seconds * 500)
    function = "present_over_time" if present else "last_over_time"
    return f"max_over_time(timestamp({function}({{0}}[{half}]))[{reach}:{half}])"


def half_interval(scrape_seconds: int) -> str:
    """Half the scrape interval, as sample_time writes it (`15s`, `7500ms`)."""
    return _milliseconds_text(scrape_seconds * 500)


def _milliseconds_text(ms: int) -> str:
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


def _read_within(within: str) -> str:
    """A selector (`{0}`) with a reading (a sample under the blank floor) within `within`: a count's test (counted)."""
    return f"min_over_time({{0}}[{within}]) < {BLANK_FLOOR}"


def latest_reading(resolution: str, within: str) -> str:
    """A selector's (`{0}`) latest reading within the look-back `within` where it has one (looked_back's reading),
    else its latest sample within it (DCGM's blank: a series that read nothing else): a copy's late reading in per-pod
    panels (_Device._read), whose pods are those a sample within `within` named (_Device._named_on). The reading
    counts while the series has one within `within` itself (looked_back's test): a step of the subquery reads a
    sample up to a scrape interval older than its step, so without it a series whose readings stopped, its samples
    the blank since, read its last reading for up to a scrape interval past `within` (70 % shown 4.5 s after it at
    a 4 s look-back)."""
    return (f"((last_over_time({_taken_reading(resolution)}[{within}:{resolution}]) and {_read_within(within)}) or "
            f"last_over_time({{0}}[{within}]))")


def _parenthesised(text: str) -> str:
    return text if text.startswith("(") else f"({text})"


def placed(branches: list[list[str]], labels: Labels) -> list[list[str]]:
    """`branches` (a scope's matcher lists) made one per place of the node spelling a series is named by (its first
    non-empty one of `labels.node_sources`: node, hostname, Hostname, instance), the k-th branch the k-th place, so that
    `_raw`'s branch number is that place. A scope's own branch k matches a series without the k-th spelling too where
    the node variable is All (`node=~".*"` matches node=""): its branch 0 held every series, its number told no copy
    apart (two exporters mid-upgrade reading alike, one writing its own pod's name into Hostname, tied)."""
    sources = labels.node_sources
    if len(sources) == 1:
        return branches
    if len(branches) != len(sources):  # one branch for every place (a node scope has one per place: node_matchers)
        assert len(branches) == 1, branches
        branches = branches * len(sources)
    return [list(dict.fromkeys([*branch, *first])) for branch, first in zip(branches, named_first(sources))]


def chosen_copy(labels: Labels, names: tuple[str, ...], branches: list[list[str]], extra: list[str],
                kept: tuple[str, ...] = (), form: str | None = None, fresh: str | None = None,
                lookback: str | None = None) -> str:
    """THE choice of the copy a GPU's gauges are read from, in every per-GPU and per-pod panel and gauge rule: per GPU
    (`cluster`, GPU_LABEL: its UUID, else its node spelling; `gpu`; and `kept`, the outer grouping's labels a choice is
    made apart for, such as a rule's pod), ONE copy: one scrape target's series of the GPU (`instance`, `job`), all its
    MIG instances and, per pod, whatever pod it names (`extra` reads them). Its series, labelled (cluster, GPU_LABEL,
    gpu, *kept, instance, job) with the key as value, are what a field is read from (`and on (...)`), so that every
    field, every MIG instance and each field of a share are one exporter's, per GPU and per pod alike.

    A copy's key: its reading of `names[0]` (a share's used) summed over its MIG instances, DCGM's blank no reading (a
    copy reading it is not fresh: another copy's reading within the lookback is taken before it, and a copy whose
    latest reading is the blank reads it, so the GPU shows none rather than that copy's older reading; in panels a copy
    reading it on one of its MIG instances has no key, as one_copy reads no such copy), 1e14 less for
    each instance reading the blank for another of `names` (a share's free), less a millionth per place of the node
    spelling it is named by (`placed`: node, hostname, Hostname, instance), so copies reading alike are told apart by
    it, not by Prometheus' order of series (which changes at each range query), and the copy naming the node by its
    node name is taken before one naming it by its old exporter's pod name.
    `form` (alert rules: a reading of a step or a window, blanks left out, with `{0}` the selector): the highest
    reading (no place: it would read every selector four times over at each step of a rule's window; one_copy reads a
    single field's highest reading itself).
    Panels (`fresh`, the scrape interval) choose in two tiers, the second for a GPU without a copy in the first: fresh,
    the copies with a sample within the last interval (the instant selector's, kept where a range of the interval holds
    one: not a copy marked stale by a failed scrape, its exporter replaced or gone, nor one from before a Prometheus
    restart, which no staleness marker ends), the highest key; late (`lookback`, per-pod panels), the copy read at the
    latest step of the scrape interval within the lookback (a subquery of `time()`; a step reads a sample taken within
    it, as looked_back's do), of those the highest reading (a
    tenth of its atan over 1e5 added to the time; DCGM's blank no reading, so a copy reading it is as new as its
    latest other reading; no place: a millionth is below the time's precision), a copy only while it has a reading
    within the lookback itself (latest_reading's test, by which the copy chosen is read: a step reads a sample up to
    a scrape interval older than the step, so two copies whose last readings lay on either side of the lookback's
    start tied at one step, and the one past it, read as nothing, was chosen by the higher reading or by the order
    Prometheus met the series in, which changes from call to call). Per-GPU panels read a GPU without a
    fresh copy from its copy with the newest reading within the look-back (one_copy's `late`, looked_back). Of a
    whole GPU's fresh copies only the fresher are keyed (older_samples: a GPU with a UUID), the highest key of those
    chosen; the higher of two fresh copies was read before c75fe0bb, an old copy's readings of a state the new one had
    seen change (in a roll, a share's 0.516 for 0.413: test_combined_fleet_story). A MIG GPU's copies are all keyed (the
    higher shows): a fresher copy reading one instance blank left the GPU with no copy (a form tried before
    c75fe0bb)."""
    spots = placed(branches, labels)
    copy = _listed((labels.cluster, GPU_LABEL, "gpu", *kept, *COPY_LABELS))
    gpu = _listed((labels.cluster, GPU_LABEL, "gpu", *kept))
    # a copy's series made one per MIG instance (the pods it names merged) before the GPU is named (fewer series), each
    # UUID label kept for identified
    written = (labels.cluster, *uuid_spellings(labels), "gpu", *kept, *COPY_LABELS, *labels.node_sources)
    place = "{2}"  # less a millionth per place (_less_placed)

    def per_copy(how: str, series: str, instances: bool = True) -> str:
        one = f"max by ({_listed((*written, *(INSTANCE_IDENTITY if instances else ())))}) ({series})"
        return f"{how} by ({copy}) ({identified(one, labels)})"

    def keyed(read: str, within: str | None = None, spots: list[list[str]] = spots) -> str:
        """The copies' keys of `read` (a form of `{0}`, the selector, and `{1}`, its place); `within` (panels: a
        condition on `{0}`): each other field's blank instances too, and of a whole GPU only its fresher copies
        (older_samples)."""
        key = _raw(names[0], spots, extra, read)
        if within is not None:
            key = f"({key} unless {older_samples(names[0], branches, extra, labels, names)})"
        key = per_copy("sum", key)
        for other in names[1:] if within is not None else ():
            key += f" - 1e14 * {per_copy('sum', _raw(other, spots, extra, f'(({{0}} >= bool {BLANK_FLOOR}){within})'))}"
        if within is not None:  # a copy whose latest reading of a MIG instance is the blank: not the GPU's (one_copy)
            blank = _raw(names[0], branches, [*extra, f'{MIG_INSTANCE_LABEL}!=""'], f"{{0}} >= {BLANK_FLOOR}")
            key = f"({key} unless {per_copy('max', blank)})"
        return key
    if fresh is None:  # a rule's reading of a step (inside its window's subquery) or window: no place (its cost)
        return f"topk by ({gpu}) (1, {keyed(form, spots=branches)})"
    if lookback:
        # DCGM's blank is no reading here (a copy is as new as its latest other reading): one op at each step of the
        # subquery, where ranking it below any reading took three (a quarter more CPU for the panel). A step reads the
        # sample taken within it (_taken_reading), not the instant selector's, which reads a series no staleness
        # marker ended (a copy from before a Prometheus restart) for 5 minutes: such a copy ranked newest at every
        # step and was read over a copy whose reading was newer (90 % shown for 40 %)
        newest = (f"(max_over_time((time() + 0.1 * atan({_taken_reading(fresh)} / 100000))[{lookback}:{fresh}]) "
                  f"and {_read_within(lookback)})")
        return f"topk by ({gpu}) (1, {per_copy('max', _raw(names[0], spots, extra, newest), False)})"
    within = f" and present_over_time({{0}}[{int(fresh.removesuffix('s')) * 1000}ms])"
    return f"topk by ({gpu}) (1, {keyed('(({0} < ' + BLANK_FLOOR + ')' + place + within + ')', within)})"


def _field_series(metric: str, catalog: Catalog, branches: list[list[str]], extra: list[str],
                  window: str, as_increase: bool, over_time: tuple[str, str, str | None] | None = None,
                  copies: str | None = None, resolution: str | None = None,
                  device: _Device | None = None, unfiltered: bool = False, summed: bool = False) -> str:
    """The samples of one field, blank sentinels removed; counters as rate/increase. `summed`: _Device.reading's.

    `unfiltered` (a gauge): the same reading with its blanks kept, so that where it has a series and the filtered
    reading has none, the field read DCGM's blank.

    `over_time` (function, window, offset) takes a gauge over a window (ending `offset` before the instant: an
    earlier period; a counter's growth too) instead of its latest sample, as CloudWatch takes a statistic over
    the observations of each period (alerts).
    A counter's increase read per step (`copies` and `resolution`, below) is exact, as CloudWatch sums the agent's
    deltas (summed_deltas: a reset's reading counts as it is), not increase(), which scales the samples inside
    the window up to its length (50 replays read as 55.6 over nine 30 s steps).
    `copies` (_Merge.copies: a selector `{0}`'s copies of one GPU instance made one series: every label but
    the GPU's identity and the outer grouping merged, so per pod one series per pod and GPU instance) with `resolution` (the scrape interval) take a counter's rate or increase
    from one reading of its copies per step of that interval (a subquery over fresh_reading): the
    exporter repeats a GPU's counter once per pod holding it, and a restarted or upgraded exporter
    writes it again under a new `instance` and exporter pod, so a pod arriving or leaving, or the
    exporter being replaced, inside the window would split the GPU's increase over two series, each
    with a part of it (the device's counter goes on counting through them); per pod, the pod's copies
    split the same way when its exporter is replaced (a new `instance`, exporter pod, node spelling
    `Hostname` -> `hostname`, pod UID or pod labels). Each copy's sample counts
    only at the step that follows it, so a missed scrape is a
    missing step (not the sample before, read again as one more interval of growth), and the rate is
    that of one series of the GPU's readings, timed at the steps: its window ends at the GPU's latest
    step, up to one interval before the query's instant.
    """
    field = catalog.get(metric) if metric in catalog else None
    counter = field is not None and field.is_counter
    shift = over_time[2] if over_time is not None else None  # the window ends that long before the instant
    if not counter:
        gauge = _gauge_form(over_time, resolution, unfiltered)
        shared = device.reading(metric, extra, gauge, summed) if device is not None else None
        if shared is None and device is not None and device.marked:  # a row no pod's mark reaches (mean_sign)
            raise NotCombined(metric)
        return shared or _parenthesised(_raw(metric, branches, extra, gauge))
    if copies and resolution:  # one reading per step of the scrape interval, then over the window
        # Every scope branch inside the one subquery: a GPU's (or pod's) copies that name its node in two spellings
        # (an exporter upgraded from `Hostname` to `hostname`) are one series even when a node is selected.
        selectors = [selector(metric, [*b, *extra]) for b in branches]
        if as_increase:  # each copy's blank left out before the copies are merged, as the agent's filter does
            counter_reading = CounterReading(copies, resolution, tuple(selectors))
            if window == DASHBOARD_RANGE and shift is None:  # panels: `resolution` is the scrape interval
                return range_increase(replace(counter_reading, hold=held_for(resolution)))
            # an alert's period (over_time) has a value only where it holds a reading, as CloudWatch's period has a
            # datapoint only where the agent sent a delta in it
            if over_time is not None and over_time[3]:  # an alert's: each exporter's copy held through a missed scrape
                counter_reading = replace(counter_reading, hold=held_for(over_time[3]), by_target=over_time[3])
            return summed_deltas(counter_reading, window, shift, held=over_time is not None,
                                 reach=over_time[4] if over_time is not None and len(over_time) > 4 else 0)
        # each copy's blank left out before the copies are merged, as for an increase: a window holding a blank
        # gives the rate of its other readings (CloudWatch's deltas skip the blank the agent's filter drops), and
        # a copy reading a blank at every scrape (an upgraded exporter beside the old one) hides no reading
        reading = fresh_reading(CounterReading(copies, resolution, tuple(selectors), fresh=True))
        return _in_rate_unit(f"rate({reading}[{window}:{resolution}]{_offset(shift)})", field)
    else:  # no reading per step (no field reaches this: every counter is read per step)
        def run(function: str) -> str:
            return _raw(metric, branches, extra, function)
        span = "{0}[" + window + "]" + _offset(shift)
        change = run(("increase(" if as_increase else "rate(") + span + ")")
    if not as_increase:
        change = _in_rate_unit(change, field)
    # No blank among the samples the window holds: a blank inside it would read as a climb of 2**63
    # (any window length), a counter stuck on the blank as a rate of 0; both give no data instead.
    clean = run("max_over_time(" + span + ") < " + COUNTER_BLANK_FLOOR)
    return f"({change} and {clean if clean.startswith('(') else f'({clean})'})"


def _in_rate_unit(rate: str, field: Metric) -> str:
    """A counter's per-second rate in its field's charted unit (Unit.rate_scale: e.g. throttled ns per second, a share
    of time)."""
    return f"({rate} * {field.unit.rate_scale:g})" if field.unit.rate_scale != 1 else rate


def _gauge_form(over_time: tuple[str, str, str | None] | None, resolution: str | None, unfiltered: bool = False) -> str:
    """How a gauge's selector (`{0}`) is read: its latest sample, a step's reading (`over_time` with `resolution`,
    gauge_readings) or its statistic over a window (`over_time`), blanks left out unless `unfiltered`."""
    below = "" if unfiltered else f" < {BLANK_FLOOR}"
    if over_time is not None and resolution:  # a step's reading (gauge_readings), a blank one left out
        reading = step_reading('{0}', resolution)
        hold = over_time[3] if len(over_time) > 3 else None
        # a mean's (or a total's): each moment once (any copy's reading is one the GPU gave: a maximum or minimum)
        if hold and len(over_time) > 5 and over_time[0] not in ("max", "min"):
            reading = _one_copy_a_moment(reading, hold, over_time[5])
        return f"({reading}{below})"  # one term (a MIG stand-in scales it), one filter (_written drops it)
    if over_time is not None:  # a window holding a blank sentinel gives no value
        function, span, shift = over_time[:3]
        return f"{function}_over_time({{0}}[{span}]{_offset(shift)}){below}"
    return "{0}" + below


# How long before a step a copy of a GPU's series must have been read to be the one read while another copy serves the
# GPU too (_one_copy_a_moment): longer than a DaemonSet rollout's overlap of two exporter pods (the new pod's start and
# readiness: a minute or two) and its scrape interval, shorter than the time between two rollouts
INCUMBENT_SINCE = "10m"


def _copied_labels(labels: Labels, metric: str, catalog: Catalog) -> tuple[str, ...]:
    """The labels two exporters' copies of one series of `metric` share (_one_copy_a_moment): the GPU's cluster,
    UUID, index and MIG instance, the workload's (a pod's series: a pod's share of a GPU, exporter.virtual_gpus, is the
    pod's own series, not a copy of another pod's or of the device's), and the field's own; not the scrape target's nor
    the node spellings an exporter writes (its own pod's name in Hostname)."""
    uuid = labels.uuid
    return tuple(dict.fromkeys(name for name in (labels.cluster, uuid, "gpu", *INSTANCE_IDENTITY, labels.pod,
                                                 labels.namespace, labels.container, *labels.copies,
                                                 *own_labels_of(metric)) if name))


def _one_copy_a_moment(reading: str, hold: str, shared: tuple[str, ...]) -> str:
    """A step's `reading` of a selector `{0}` (a mean's or a total's, before its blank is left out), one exporter's
    copy of a GPU's series while two serve it (a maxSurge rollout): a copy with a sample within the scrape interval
    `hold` that had one INCUMBENT_SINCE before too (the old exporter pod) is read, and another copy of the series (the
    same labels `shared`; a GPU told by its UUID: a series without one is read as before) is not read while it has
    one. Each moment is then one copy's: both pods' readings, in different steps, weighed the overlap twice (185.7 W
    for 220: tests/integration/test_prometheus_overlap_gauge_weights.py). Where no copy was read INCUMBENT_SINCE
    before (a second rollout within it) or both were (an overlap longer), both are read, as before.

    The copies a step may read (`and`: matched on every label, the metric's name aside) are the incumbents and every
    series of the selector (its instant selector: a superset of the reading's) sharing `shared` with none: three
    reads of the selector a step beside the reading's four, the reading read once (naming the copies left out read
    the selector four times more, the reading twice: 7 reads). The blank is left out after (_gauge_form), once:
    _written keeps DCGM's blank by dropping the form's one filter, and a filter left in a second branch made a device's
    own series absent at its blank steps, so a pod's share was read as the device's (55.3 for 80.6:
    tests/integration/test_per_process_lookback.py)."""
    # within (t - hold, t] on Prometheus 2 too (its ranges are closed: a copy's last sample, one interval before the
    # step, kept the other copy's sample at that step unread, one reading of ten lost: test_per_process_lookback.py)
    now = f"present_over_time({{0}}[{_seconds(hold) * 1000 - 1}ms])"
    # the label the exporter writes the UUID under (_copied_labels: `uuid` with --use-old-namespace, where `UUID`, on no
    # series, read every copy as a GPU without one: 185.7 W for 220, test_prometheus_overlap_gauge_weights.py)
    uuid = next(name for name in shared if name in UUID_LABELS)
    incumbents = (f"(({now} and present_over_time({{0}}[{hold}] offset {INCUMBENT_SINCE}))"
                  f" unless on ({uuid}) vector(1))")
    return f"({reading} and ({incumbents} or on ({_listed(shared)}) {{0}}))"


def summed_deltas(counter: "CounterReading", window: str, shift: str | None = None, held: bool = False,
                  reach: int = 0) -> str:
    """A counter's increase over `window` as the CloudWatch agent's deltas add up: the sum, over the window's readings
    (`reading`: a GPU's reading at each step of `resolution`, held_reading), of each reading less the one before
    it, or the reading itself where it is lower (a reset: the counter starts over, and the agent sends the raw
    value). The reading before a window's first one (within WINDOW_PREVIOUS_WITHIN, a blank left out) counts, so the
    sum is the growth since the reading before the window, a reset inside it or not: 1000, then 1, 17, 33, 50 after
    a reset is 50, where increase() scales the readings up to the window's length (55.6 over 270 s of a 5-minute
    window). A reading with none before it within WINDOW_PREVIOUS_WITHIN (the GPU's first) adds nothing, as the
    agent sends nothing for a series' first scrape (it is its own previous: a delta of 0). A window without a
    reading gives no value. The window is left-open (_left_open). A blank reading is left out, as the agent's filter
    drops it before its deltas: it adds nothing, and the reading after it counts from the reading before it (a
    window of blanks alone gives no value, as CloudWatch has no datapoint then). The GPU's readings are read once
    (each reading is the costly part: a subquery step per scrape interval, four selectors per node spelling):
    `latest`, the latest clean reading within WINDOW_PREVIOUS_WITHIN (the step's own, else the one before it), read
    at the step and at the step before, gives each step's delta (CounterReading.step_delta): the later less the
    earlier (idelta() of the two points, exact), or where it is lower the copies' own deltas (a reset, or a copy's
    older reading). A step without a reading repeats the one before (a
    delta of 0); the reading after a blank or a missed scrape counts from the latest before it; the first reading of
    a chain (none within WINDOW_PREVIOUS_WITHIN before it) has no earlier point and adds nothing. Against the form
    that read the previous reading apart (four readings per step),
    two cases differ in having a value, not in a value: a window holding no reading, after one within
    WINDOW_PREVIOUS_WITHIN before it, is 0 (was no value); a window whose only step with a reading is a chain's
    first, at its last step, gives no value (was 0). `held` (an alarm's period): only the steps with a clean reading
    of their own count, so a window holding none, or only a chain's first, gives no value, as CloudWatch's period
    holds no delta then (the agent sends none for a missed scrape, a blank or a series' first reading) and its
    alarm judges an older period of its evaluation range (render.alarms._of_range). `reach` (seconds; an event
    alarm's, render.alarms.gap_reach): a reading after a gap longer than WINDOW_PREVIOUS_WITHIN counts from its
    copy's own latest reading up to that far back (own_deltas, read from the raw samples: no longer subquery), so
    the growth across the gap is in the first window after it. A level's period (`held` without `reach`, the scrape
    interval known: `counter.by_target`) counts a reading after a gap or a missed scrape by the share of the scrapes
    it stands for that were due inside the period, not whole: on the copy leading at its start, reaching back by the
    scrapes not arrived, where that copy is still read at its end (_led_period), else on the merged steps
    (_prorated)."""
    delta = counter.step_delta(WINDOW_PREVIOUS_WITHIN, reach)
    if held:
        delta = f"({delta} and {counter.clean})"
    if held and not reach and counter.by_target:
        merged = (f"sum_over_time({_prorated(counter, delta, window, shift)}[{_left_open(window)}:"
                  f"{counter.resolution}]{_offset(shift)})")
        return f"(({_led_period(counter, window, shift)} or {merged}) < {INCREASE_BLANK_FLOOR})"
    return (f"(sum_over_time({delta}[{_left_open(window)}:{counter.resolution}]{_offset(shift)}) "
            f"< {INCREASE_BLANK_FLOOR})")


# The instant a rule is evaluated at, read inside a subquery (whose time() is its own step's): a one-step subquery
# pinned to the query's end (an alert rule's evaluation is an instant query: its end is its instant).
EVALUATED_AT = "scalar(last_over_time(timestamp(vector(0))[1ms:1ms] @ end()))"


WHOLE = 1e9  # scrapes "inside" a period for a step the pinned instant cannot place: more than any reading stands for


def _prorated(counter: CounterReading, delta: str, window: str, shift: str | None) -> str:
    """A subquery step's delta (`delta`) in an alert's period (t - window - shift, t - shift], t the rule's instant,
    counted by the scrapes it grew over that fall in the period: a reading n scrape intervals after the reading before
    it (a gap in the GPU's data, a missed scrape: n = the seconds between their steps over the interval, rounded, at
    least 1) holds n scrapes' growth, each an equal share, and the period counts the shares of the scrapes due inside
    it (the k latest, k = the step's seconds after the period's start over the interval, rounded up). A reading one
    interval after the one before (no scrape missed) counts whole, as the CloudWatch agent's delta does in the period
    it is sent in. Truth of a steady link across an 8.5-minute gap: 40 replays per 5 minutes in every period, where
    the whole gap's growth in one period read 68. The merged steps' period (summed_deltas): it stands where the copy
    leading at the period's start is not read at its end (_led_period: a rollout's handover, a GPU's data stopped),
    without the reach back by the scrapes not arrived (_own_share). Cost: the steps' seconds are a second read of the
    readings over the horizon (each period's CPU about doubles)."""
    interval = _seconds(counter.by_target)
    start = f"({EVALUATED_AT} - {_before_end(window, shift)})"
    scrapes = _scrapes_stood_for(counter, interval)
    # evaluated as a range query (a chart of the rule's expression), every step would read the range's end: a step
    # before the pinned period's start counts its delta whole, as before the shares
    inside = f"scalar(ceil(vector((time() - {start}) / {interval})) > 0 or vector({WHOLE:g}))"
    return f"({delta} * clamp_max({inside} / {scrapes}, 1))"


def _before_end(window: str, shift: str | None) -> int:
    """The seconds from an alert period's start to the rule's instant: the period and the shift after it."""
    return _seconds(window) + (_seconds(shift) if shift else 0)


def _scrapes_stood_for(counter: CounterReading, interval: int) -> str:
    """The scrapes a subquery step's reading of `counter` stands for: its seconds after the reading before over the
    scrape interval, rounded, at least 1 (a gap or missed scrapes before it: more than 1)."""
    return f"clamp_min(round({counter.step_seconds(WINDOW_PREVIOUS_WITHIN)} / {interval}), 1)"


def _led_period(counter: CounterReading, window: str, shift: str | None) -> str:
    """An alert period's growth (summed_deltas, `held`) reckoned on the exporter's copy of the GPU leading at its start
    (_leading) alone, its own readings, each delta shared out by the scrapes it stands for that are due in the period,
    reaching back by the scrapes due at its end that have not arrived (_own_share); only where that copy is still
    read at the period's end (_staying). None elsewhere: the merged steps' period (_prorated) stands, where a copy
    hands over to another (a rollout: the old copy's own period holds none of the new copy's growth, the new copy's
    none before its first reading, and the growth between them is in neither; the merged steps count it), or no copy
    leads (none read before the start). Each exporter reads DCGM on its own clock, so the merged steps mix readings
    taken up to a collection apart: with one copy missing 2 of every 3 scrapes beside one that missed none (its
    readings taken 28 s before its scrapes) the merged period read 41, 52 and 42 in turn for 45, the rule (50) firing
    (test_counter_copies_two_of_three); one copy's own readings are each taken as long before its scrape: 44.7-45.3.
    Cost: a second read of the readings, per copy, over a subquery _reach_most intervals longer than the period
    (docs/performance.md)."""
    own = replace(counter, copies=_by_target(counter.copies)[1])
    delta = _own_share(counter, own, f"({own.step_delta(WINDOW_PREVIOUS_WITHIN)} and {own.clean})", window, shift)
    span = _duration_text(_seconds(window) + _reach_most(counter, window) * _seconds(counter.by_target))
    summed = f"sum_over_time({delta}[{_left_open(span)}:{counter.resolution}]{_offset(shift)})"
    return (f"max by ({_by_target(counter.copies)[0]}) ({summed} and {_leading(counter, window, shift)} "
            f"and {_staying(counter, window, shift)})")


def _own_share(counter: CounterReading, own: CounterReading, delta: str, window: str, shift: str | None) -> str:
    """A subquery step's delta (`delta`) of one exporter's copy of the GPU (`own`: _led_period) in an alert's period
    (t - window - shift, t - shift], t the rule's instant, counted by the scrapes it grew over that fall in the period,
    as _prorated counts them: a reading n scrape intervals after the one before holds n equal shares, the k latest
    due inside the period. A period holds as many scrapes' growth as its length, the latest that arrived: where the
    copy's scrapes due at the period's end have not arrived (u of them, _unarrived_own), the period reaches u
    intervals further back, so each step counts k + u shares (a reading before the start, k <= 0: -k of its own
    shares are due before the reach), none below 0 and at most the whole. One exporter missing every 3rd scrape read
    48-49 for its link's 54 per 5 minutes where only the period's first reading reached back (up to 2 shares), 3 of
    5 read 37.5 (test_counter_missed_scrape_patterns). Cost: the steps' seconds are a second read of the copy's
    readings over the span."""
    interval, most = _seconds(counter.by_target), _reach_most(counter, window)
    start = f"({EVALUATED_AT} - {_before_end(window, shift)})"
    scrapes = _scrapes_stood_for(own, interval)
    # evaluated as a range query (a chart of the rule's expression), every step would read the range's end: a step
    # before the pinned period's reach counts its delta whole (as before the shares)
    inside = f"scalar(ceil(vector((time() - {start}) / {interval})) > -{most} or vector({WHOLE:g}))"
    # the unarrived scrapes are keyed by the copy's labels, as the scrapes it stands for are: matched one-to-one, the
    # steps' seconds are read once (carried by `scrapes * 0 +` as well, they were read twice: a period's CPU +0.18 s at
    # 66 GPUs, docs/performance.md)
    unarrived = _unarrived_own(counter, window, shift)
    return f"({delta} * clamp(({inside} + {unarrived}) / {scrapes}, 0, 1))"


def _reach_most(counter: CounterReading, window: str) -> int:
    """The scrapes due at an alert period's end that _unarrived_own counts at the most: all but the period's first (a
    period without a reading of the GPU has no value, as CloudWatch's has no datapoint)."""
    return max(_seconds(window) // _seconds(counter.by_target) - 1, 0)


def _unarrived_own(counter: CounterReading, window: str, shift: str | None) -> str:
    """Each exporter's copy of a GPU (_per_copy): the scrapes due in an alert's period after its latest sample at the
    period's end (its end's scrapes missed, whose growth arrives with a reading after it): k of them where it has no
    raw sample within the period's last k intervals, up to _reach_most (a sample within the period's first interval
    alone); none where it has no sample in the period. Counted as the period's last k intervals holding a sample, each
    k a series of its own (the `gpudash_k` label), one raw read each: M + 1 - that count. Raw samples, not a subquery
    of their timestamps (their latest in the merged steps' form passed promtool's sample limit)."""
    interval, most = _seconds(counter.by_target), _reach_most(counter, window)

    def recent(scrapes: int) -> str:  # 1 where the copy has a raw sample within the period's last `scrapes` intervals
        present = _per_copy(counter, lambda s: f"present_over_time({s}[{scrapes * interval * 1000 - 1}ms] @ end()"
                                               f"{_offset(shift)})")
        return f'label_replace({present}, "gpudash_k", "{scrapes}", "", "")'

    keys = _listed((*_by_target(counter.copies)[0].split(", "), *COPY_LABELS))
    spans = " or ".join(recent(k) for k in range(1, most + 2))
    return f"({most + 1} - count by ({keys}) ({spans}))"


def _leading(counter: CounterReading, window: str, shift: str | None) -> str:
    """The exporter's copy of a GPU (_per_copy) leading at an alert period's start (_led_period): its latest clean
    reading there (its own raw samples, within WINDOW_PREVIOUS_WITHIN) the GPU's largest."""
    keys = _by_target(counter.copies)[0]
    at_start = f"@ end() offset {_before_end(window, shift)}s"
    reading = _per_copy(counter, lambda s: f"(last_over_time({s}[{WINDOW_PREVIOUS_WITHIN}s] {at_start}) "
                                           f"< {COUNTER_BLANK_FLOOR})")
    return f"({reading} >= on ({keys}) group_left () max by ({keys}) ({reading}))"


def _staying(counter: CounterReading, window: str, shift: str | None) -> str:
    """Each exporter's copy of a GPU (_per_copy) still read at an alert period's end: a sample within the hold
    (held_for: HELD_SCRAPES intervals), or its target's scrapes failing (its latest `up` within as long is 0: a scrape
    that failed holds growth that arrives with a later reading). A copy gone (its target removed: `up` stale; a GPU
    whose series stopped while its target answers, `up` 1, as a GPU fallen off the bus: that reach read its last
    period's 54 replays for 5 minutes after; or the GPU's data stopped without `up`) is not: its period is the merged
    steps' (_led_period), which holds the handover to another copy and does not reach back (reached back, a GPU whose
    data stopped read a whole period's growth, 200 replays for 20, for 4.5 minutes after its last reading:
    test_stale_alarm_twins). Matched on the target's labels (the scrape job's: instance, job, node) and the cluster
    label (a Prometheus shared by clusters whose targets are alike: another cluster's failing target read this one's
    GPU off the bus as failing scrapes, 54 for 38), on each raw series before its copy is made one; an `up` without
    the cluster label (the series given it by metric relabelling, which `up` never gets) on the target's labels alone:
    matched on the cluster too it matched nothing, and a failing target's GPU read as gone (54, 33, 22, 11 for 54:
    test_counter_failing_target_up_unlabelled). Two clusters' targets alike on one Prometheus with no cluster label on
    `up` are one series of `up` there: no setup this reads wrongly that Prometheus keeps apart."""
    held = f"[{held_for(counter.by_target)}ms] @ end(){_offset(shift)}"
    period = f"[{_seconds(window) * 1000 - 1}ms] @ end(){_offset(shift)}"
    cluster = _cluster_key(counter)
    target = _listed((cluster, *TARGET_LABELS))

    def staying(s: str) -> str:
        stays = f"present_over_time({s}{period}) and on"
        return (f"(present_over_time({s}{held}) or {stays} ({target}) last_over_time(up{held}) == 0 or {stays} "
                f"({_listed(TARGET_LABELS)}) last_over_time(up{{{cluster}=\"\"}}{held}) == 0)")
    return _per_copy(counter, staying)


def _cluster_key(counter: CounterReading) -> str:
    """The cluster label of `counter`'s GPUs: the first of their physical keys (_Merge._physical: labels.cluster)."""
    return _by_target(counter.copies)[0].split(", ")[0]


@dataclass(frozen=True)
class CounterReading:
    """A counter's readings of one GPU (instance, and outer group) at the steps of the scrape interval `resolution`,
    from its copies (`selectors`: the scope's branches, read as one; `copies`, _Merge.physical, makes them one
    series), and each step's delta, as summed_deltas and range_increase add them up.

    The readings are the copies' merged latest (held_reading: the rules, and with `hold` increases over the range, a
    copy's reading held through a missed scrape), or, `fresh`, the largest of the copies sampled within the step
    (fresh_reading: rate panels); a step's delta is its reading less the one before
    it, except where the merged reading went DOWN: there the copies disagree or the counter restarted, and the
    step's delta is the largest of the copies' own deltas (own_deltas), each copy's reading less its own previous
    one, or the reading itself where it is lower (that copy's reset). A merged reading that goes down is no reset
    of the GPU by itself: while two exporters read one GPU (a rollout with maxSurge, two DaemonSets on a node) each
    reads DCGM on its own clock, so when the copy holding the largest reading leaves (its staleness marker) the
    other's latest may have been taken before it (DCGM collecting every 60 s for a 30 s scrape: 10,085 after
    10,086), and a GPU reset inside such an overlap shows in one copy a scrape before the other (10,068 -> 10,067
    -> 0): read as resets, each counted the counter since boot as one step's increase. Handled per copy, the
    first is one scrape's growth of the remaining copy (its 10,085 less its own 10,079), the second the copies'
    growth since their own readings before (the reset copy's reading itself, the other's few replays before its
    own reset). A copy's own previous reading is looked for as far back as the merged one. A merged reading going
    down to a copy's first reading (a GPU reset between the old exporter's last scrape and the new one's first,
    maxSurge 0) adds nothing, as the CloudWatch agent sends nothing for a new revision's first reading; one exporter
    back from a gap with a lower reading counts it as a reset, as one series does."""

    copies: str
    resolution: str
    selectors: tuple[str, ...]
    fresh: bool = False  # read the copies sampled within each step (fresh_reading), not every copy's latest
    hold: int = 0  # ms a copy's latest reading stands after it (held_for; 0: until its staleness marker)
    by_target: str = ""  # hold each exporter's copy (its scrape target's series made one) at the steps, not each series

    def merged(self, parts) -> str:
        """One expression per selector (`parts`, a function of the selector) joined, its copies made one series."""
        each = [parts(s) for s in self.selectors]
        return self.copies.format(each[0] if len(each) == 1 else "(" + " or ".join(each) + ")")

    @property
    def reading(self) -> str:
        return fresh_reading(self) if self.fresh else held_reading(self)

    @property
    def clean(self) -> str:
        return f"({self.reading} < {COUNTER_BLANK_FLOOR})"

    def step_delta(self, within: int, reach: int = 0) -> str:
        """A subquery step's delta: the step's clean reading less the latest before it, looked for `within` seconds
        back (idelta of two points a step apart), where it is not lower; else own_deltas, looked for as far back, or
        `reach` seconds back where that is further (each copy's own raw samples: a reading after a longer gap
        counts from the copy's reading before the gap, where the merged one has none)."""
        seconds = _seconds(self.resolution)
        # idelta() of the latest clean reading at the step and at the step before, a step apart (the subquery's
        # steps on the same grid)
        rise = f"(idelta({self.latest(self.clean, within)}[{seconds * 1000 + 1}ms:{self.resolution}]) >= 0)"
        return f"({rise} or {own_deltas(self, max(within, 2 * seconds, reach))})"

    def latest(self, expression: str, within: int, offset: str = "") -> str:
        """The latest value of `expression` at a subquery step, looked for `within` seconds back (at least two steps):
        at a step t it holds the steps (t - lookback, t]; a step before t, the steps [t - lookback, t - step], where
        the reading before t's is looked for (no step of the reading sits on the range's edge, on Prometheus 2 or 3).
        `offset`: the subquery's offset modifier (` offset 30s`)."""
        seconds = _seconds(self.resolution)
        lookback = max(within, 2 * seconds)
        return f"last_over_time({expression}[{lookback * 1000 - seconds * 500}ms:{self.resolution}]{offset})"

    def step_seconds(self, within: int, scraped: bool = False) -> str:
        """A subquery step's seconds since the step of the latest clean reading before it, looked for as step_delta
        looks (the time step_delta's delta grew in): the step's interval where it and the step before have a reading,
        n intervals after n - 1 steps without one, 0 at a step without a reading (whose delta is 0), none where
        step_delta has no earlier reading either. With `scraped`, the seconds between the scrapes of the two
        readings (their samples' timestamps, `scraped_at`) and not between their steps."""
        at = self.scraped_at if scraped else f"(time() + 0 * {self.clean})"
        return f"idelta({self.latest(at, within)}[{_seconds(self.resolution) * 1000 + 1}ms:{self.resolution}])"

    @property
    def scraped_at(self) -> str:
        """The scrape time (its sample's timestamp, in seconds) of the clean reading a step reads (fresh: each copy's
        sample taken within the step before; the copies' latest of them)."""
        return self.merged(lambda s: step_reading(s, self.resolution,
                                                  f"(timestamp({s}) + ({s} < {COUNTER_BLANK_FLOOR}) * 0)"))


def counted_name(metric: str, part: str = "step_increase") -> str:
    """A series a counter's recording rules (counted_rules) write: gpudash:<field>:step_increase (each step's delta),
    gpudash:<field>:step_seconds (the seconds it grew in)."""
    return f"gpudash:{metric}:{part}"


COUNTED_PARTS = ("step_increase", "step_seconds")  # counted_rules' two series per counter, in that order

# The seconds recording's ranks of the chosen copies (counted_rules): a copy counted on its own clock ranks
# RANK_OWN_CLOCK above one counted from another copy's scrape (more milliseconds than COUNTED_WITHIN holds), each
# rank times SECONDS_PACKED (more milliseconds than a step's seconds reach) plus the copy's seconds in milliseconds
RANK_OWN_CLOCK = 10 ** 6
SECONDS_PACKED = 10 ** 7

# Seconds back a GPU's previous reading is looked for by its recording (counted_rules): a gap in its readings up to this
# long counts at the first reading after it; the growth of a longer one is counted at no step.
COUNTED_WITHIN = 300


def counted_rules(metric: str, catalog: Catalog, labels: Labels, resolution: str,
                  scope: Scope = Scope()) -> tuple[str, str]:
    """The recording rules of a counter's Grafana rate panels (their expressions, COUNTED_PARTS' order), evaluated at
    the scrape interval (`resolution`): per physical GPU (instance: its UUID, GPU_LABEL, index, MIG instance; the
    field's own labels), at the latest step of the scrape interval at or before the evaluation's instant (its readings
    taken within (step - interval, step]), one exporter's copy's delta at that step (CounterReading.step_delta over
    the copy's own readings: its reading less its own one before, or where lower, its own deltas: a reset) and the
    seconds it grew in (CounterReading.step_seconds, `scraped`: between the scrapes of the copy's reading before and
    this one, their samples' timestamps; 0 and 0 at a step without a reading of it), the reading before looked for
    COUNTED_WITHIN back. Counted over the steps' seconds, a scrape stamped d seconds late moved d seconds of growth
    into the next step: one scrape 5 s late at 30 s scrapes read 1.04 of the rate in a 2-minute window, one 303 ms
    late at 2 s scrapes 144,335 mW for 150,000 in an 8 s one (a loaded Prometheus). The copy is the one leading: the
    largest latest reading of the step or the step before (a copy that missed one scrape, its staleness marker in its
    place, still leads at the step it missed); where copies' latest readings are equal (two exporters reading one
    collection), those of them whose delta is the smallest (the growth since the highest base: a copy's own reading
    before or the step before's largest reading, whichever counts), the same copies in both recordings: each picking
    its own with topk, whose pick among equals is arbitrary, recorded one copy's delta over another's seconds (0.071 to
    0.14 replays per second for 0.1); the delta of the copy whose own step was the longest over the seconds of
    another (each recording choosing apart) counted 70 s of growth over 60 s with three copies (1.067 of the power).
    The seconds recording takes the seconds of one of those copies, a copy counted on its own clock first (its
    reading before is the base), then the one scraped last. A copy that has not read a restart of the
    counter that another copy read within the last COUNTED_WITHIN / 2 seconds does not lead (its own count of
    restarts looks COUNTED_WITHIN back): after a GPU reset a copy lagging by a collection still reads the counter
    from before the reset, the largest reading, and led with its own delta of 0 while the reset copy's readings since
    the reset counted at no step (0.067 replays per second for 0.1 with every 2nd scrape of the fresh copy missed);
    one window for both handed the lead to the copy that read the restart last when the first one's count of it ran
    out (a step's growth lost 300 s after it). Each exporter reads DCGM on its own clock, so a copy's readings lag
    another's by up to a collection (dcgm-exporter -c 60000 under a 30 s scrape: 78 s), and the steps do not count a
    copy's reading from another's: a merged reading going down read as a reset counted the counter since boot
    (after a surge rollout's overlap 4.18e8 mW for a GPU drawing 200,000; a GPU reset while two exporters read it, 84
    replays per second for 0.1), and the fresh copy back from a missed scrape counted from the lagging copy's reading
    counted that lag again at each return (0.22 replays per second for 0.1 with every 2nd scrape missed). A leading
    copy that missed the step adds 0 in 0 s, and its next reading counts from its own before, in the seconds since it;
    one gone for good (a rollout) leads no more after one step, and the next copy's own deltas count from then on
    (its lag is not counted as time without growth). The leading copy's delta is at most its growth above the
    largest reading any copy took in the step before, or a copy whose target's scrapes fail now (its `up` 0) took
    last (where no copy read in it, the largest of the copies' latest readings before: a lead changing across a step
    whose scrapes all failed counted the growth between the two copies' readings twice, 205,128 mW for 200,000),
    where it is not below that (else a reset: its own delta),
    grown in the seconds between the scrapes of the two readings where it is the smaller (a whole step's read 122,500
    mW for 150,000 when one of two exporters scraped 1.5 s apart drifted across a step; a copy back from a missed
    scrape after a restart another copy read first, 50 s of growth over 60 s): two exporters each
    collecting every 60 s, 10 s apart, lead in turn, and each one's own delta counted the collection the other had
    counted (400,000 mW for 200,000). At a leading copy's first reading (no reading of its own before: a replaced
    exporter's new copy) the step is the copies' merged one, its reading less the merged
    reading before, from the other copy (as one series of the GPU's readings counts it). Stateless: each evaluation
    reads the raw series alone, so `promtool tsdb create-blocks-from rules` can write their history; an evaluation
    the server misses leaves a step out of both sums a rate divides (counted_rate). `scope`: the series recorded (on
    a Prometheus holding several clusters, the settings' clusters: settings_clusters)."""
    seconds = _seconds(resolution)
    (matchers,) = scope.matchers(labels)
    copies = _Merge(labels, INSTANCE_IDENTITY).physical("{0}", own_labels_of(metric))
    keys, per_target = _by_target(copies)
    selectors = (selector(metric, matchers),)
    gpu, copy = (CounterReading(c, resolution, selectors, fresh=True) for c in (copies, per_target))
    # the leading copies: each copy whose latest reading at this step or the one before is the largest of those that
    # have read every restart of the counter another copy read within the last COUNTED_WITHIN / 2 (a copy's own count
    # looks COUNTED_WITHIN back: where both looked as far, the lead went to the copy that read a restart last once the
    # first one's count of it ran out). Each exporter's copy's restarts are counted over its readings as one, whichever
    # pod label they carry (counted per series, a reset read as the GPU's pod label moved was no restart of the copy
    # that read it first, and the lagging copy led: 0.05 replays per second for 0.1). A copy behind on restarts is left
    # out of the largest reading only (one reading of the restarts, not two): it leads where its reading is as large,
    # which a copy still reading the counter before a restart another copy read is not
    latest = f"last_over_time({copy.reading}[{seconds * 1500}ms:{resolution}])"
    workload = _listed((labels.pod, labels.namespace, labels.container, *labels.copies))
    restarts = [c.merged(lambda s, within=within: f"resets(max without ({workload}) ({s} < {COUNTER_BLANK_FLOOR})"
                                                  f"[{within}s:{resolution}])")
                for c, within in ((copy, COUNTED_WITHIN), (gpu, COUNTED_WITHIN // 2))]
    behind = f"({restarts[0]} < on ({keys}) group_left () {restarts[1]})"
    leading = f"({latest} == on ({keys}) group_left () max by ({keys}) ({latest} unless {behind}))"
    # a copy's growth above the largest reading of any copy at the step before (where not below it: else a reset),
    # beside its own delta: the smaller counts, so two copies that lead in turn (each collecting every 60 s, 10 s
    # apart) do not each count the collection the other counted
    read_before = f"last_over_time({copy.reading}[{seconds * 1000 - 1}ms:{resolution}] offset {resolution})"
    # a copy's reading below its own reading before is its counter since a restart, whichever of its series read the
    # two (own_deltas reads each series apart: a reset read as the pod label moved was no delta at all)
    read_before_own = copy.merged(lambda s: f"(last_over_time({s}[{COUNTED_WITHIN}s] offset {resolution}) "
                                            f"< {COUNTER_BLANK_FLOOR})")
    # where no copy read in the step before, the largest of the copies' latest readings their steps read before it
    # (own_before): the leading copy's own delta from its reading below another copy's later one counted that growth
    # twice (a lead changing across a step whose scrapes all failed: 205,128 mW for 200,000 over a 2-minute window).
    # Not the raw samples: a reading its own step did not read (a scrape late into the next step, its staleness
    # marker after it in that step) is no scrape the seconds count from (one exporter: 30 s of growth over 90 s)
    own_before = copy.latest(copy.clean, COUNTED_WITHIN, f" offset {resolution}")
    # a copy whose target's scrapes fail now (its `up` 0: not one that left, whose `up` is marked stale) holds its
    # latest reading in the step before's: the lead's growth up to it is counted, and a lagging copy read alone
    # there counted it again (224,242 mW for 200,000 where the leading copy's scrapes failed two steps). Its target
    # is its instance and job where it was scraped (with the node the scrape job writes: both carry it, or neither),
    # matched on its raw series within COUNTED_WITHIN
    failing = f"({selector('up', matchers)} == 0)"
    target = _listed((labels.cluster, *COPY_LABELS, SCRAPED_NODE))
    failing_copy = copy.merged(lambda s: f"(present_over_time({s}[{COUNTED_WITHIN}s]) and on ({target}) {failing})")
    held = f"({read_before} or {own_before} and {failing_copy})"
    before_step, before_latest = (f"max by ({keys}) ({read})" for read in (held, own_before))
    before = f"({before_step} or {before_latest})"
    above = f"(({copy.reading} - on ({keys}) group_left () {before}) >= 0)"
    own = f"({copy.step_delta(COUNTED_WITHIN)} or ({copy.reading} and {read_before_own}))"
    grew = (f'min without ({RANGE_PART}) (label_replace({own}, "{RANGE_PART}", "own", "", "") or '
            f'label_replace({above}, "{RANGE_PART}", "above", "", ""))')
    # growth above the step before's readings grew in the seconds between the scrapes of the two readings (one
    # step counted the growth since another copy's reading scraped late in the step before as a whole step's: two
    # exporters scraped 1.5 s apart every 2 s read 122,500 mW for 150,000 where the later one's scrape crossed a
    # step); the copy's own seconds may span missed scrapes
    taken = copy.scraped_at
    taken_before = (f"(max by ({keys}) (last_over_time({taken}[{seconds * 1000 - 1}ms:{resolution}] offset "
                    f"{resolution}) and ({read_before} == on ({keys}) group_left () {before_step})) or "
                    f"max by ({keys}) ({copy.latest(taken, COUNTED_WITHIN, f' offset {resolution}')} and "
                    f"({own_before} == on ({keys}) group_left () {before_latest})))")
    # the growth above counts (it is not the larger of the two) where the step before's largest reading is above the
    # copy's own reading before (its delta's), or where the copy's own delta is a restart (its reading below its own
    # latest raw sample before: the counter since the restart): one subquery of the steps before, where comparing the
    # two deltas read the copy's own delta again. Without the restart's test, a copy that missed the step before while
    # another copy read the restart there counted its growth above that reading over its own seconds since its
    # reading before the restart (50 s of growth over 60 s: a 2-minute window read 0.933 of the GPU's power). A copy
    # whose own reading before is the base (as large as the step before's largest) counts on its own clock, from its
    # own scrape of it, whether it read in the step before or not: counted from a third copy's late scrape of that
    # sample (an exporter polling the hostengine every 90 s: 35 s for the copy's 90), a step read 90 s of growth over
    # 60 s (another copy's, the most), 1.2 of the GPU's power for 2 minutes; and where copies read the same sample
    # (one nv-hostengine's collections) at different lags, counting each step from the latest scrape of the reading
    # before ended the steps on the lagging copy's scrapes where it tied and on the other's where it lagged: an
    # exporter polling every 60 s scraped 20 s past beside one polling every 30 s scraped 5 s past, 45 s then 15 s
    # for 30 s of growth each, read 222,222 mW for 200,000 at every minute for as long as both ran
    restarted = f"({copy.reading} < {read_before_own})"
    counts_above = f"({own_before} < on ({keys}) group_left () {before} or {restarted})"
    # A copy back from missed scrapes (its own step over 1.5 intervals) whose growth above the base is below its own
    # delta counts the share of its own seconds that growth is of its own delta, where it read a new collection at each
    # of its samples within COUNTED_WITHIN (`steady`: its span on its own clock is its growth's) and its reading is no
    # restart: counted from the base copy's scrape, the seconds were off by the two copies' lags (copies reading one
    # hostengine's collections 23 and 8 s after them, the fresher one missing two scrapes: at its return 60 s of
    # growth over 45 s, after the other copy had counted its 30 s on its own clock; 222,222 mW for 200,000 at 13 and 14
    # minutes, 218,182 at 15). A copy polling less often than it is scraped (its span is not its growth's: 60 s of
    # growth over its 30 s) or one scraped off its beat (a scrape 7 s early read the collection before again) counts
    # from the base's scrape as before
    own_seconds = copy.step_seconds(COUNTED_WITHIN, scraped=True)
    repeats = copy.merged(lambda s: f"(count_over_time({s}[{COUNTED_WITHIN}s]) - changes({s}[{COUNTED_WITHIN}s]))")
    steady = f"on ({keys}) (max by ({keys}) ({repeats}) <= 1)"
    grew_in = (f"(({own_seconds} > {seconds * 1.5:g}) * clamp_max({above} / ({copy.reading} - {own_before} > 0), 1) "
               f"and {steady} unless {restarted} or "
               f"({above} and {counts_above}) * 0 + ({taken} - on ({keys}) group_left () {taken_before}) or "
               f"{own_seconds})")
    # the leading copies' step, or at a copy's first reading, the copies' merged step (from the reading of another
    # copy). Of the leading copies' deltas the smallest: the growth since the highest base (where two tied copies
    # missed the step before, the larger delta, a lagging copy's from its older reading, counted again what the other
    # had counted at the step before: 90 s of growth over 60 s, 1.2 of the GPU's power for 2 minutes), and the
    # seconds of one copy whose delta that is (`chosen`): a copy on its own clock before one counted from another
    # copy's scrape, then the copy whose latest scrape is the latest (one copy's clock from step to step where tied
    # copies read each sample: the most of their seconds read 0.968 of the GPU's power for 2.5 minutes where one
    # copy's scrape was stamped 5 s late, 35 s then that copy's 25 s beside the other's 30). A leading copy that
    # missed the step is ranked by its latest scrape. Both recordings choose the same copies: the delta of the
    # copy whose own step was the longest, its growth above a third copy's lagging reading, over the seconds of a
    # tied copy that had counted further two steps before, read 70 s of growth over 60 s (1.067 of the GPU's power for
    # 2 minutes). Cost: the seconds recording reads the deltas and the lead a second time (the counters' group +28 %
    # at 66 GPUs), where picking by the longest own step read the steps' seconds instead; the ranks +20 % more on it
    # (0.235 -> 0.28 CPU-s per evaluation at 66 GPUs)
    grew_leading = f"({grew} and {leading})"
    chosen = f"({grew_leading} == on ({keys}) group_left () min by ({keys}) ({grew_leading}))"
    # each chosen copy's rank and seconds packed into one number, so that one max picks them and `chosen` is read
    # once (comparing the ranks, then taking the seconds of the highest, read it three times: the seconds recording
    # twice the CPU): rank * SECONDS_PACKED + its milliseconds, exact integers in a float64 (below 2^53). The rank:
    # RANK_OWN_CLOCK on its own clock, plus RANK_OWN_CLOCK - 1 less the milliseconds since its latest scrape (within
    # COUNTED_WITHIN); the most milliseconds where ranks tie
    another_clock = f"({own_before} < bool on ({keys}) group_left () {before})"
    since = f"round((time() - {copy.latest(taken, COUNTED_WITHIN)}) * 1000)"
    rank = f"({RANK_OWN_CLOCK} * (2 - {another_clock}) - 1 - {since})"
    packed = f"({rank} * {SECONDS_PACKED} + round({grew_in} * 1000) and {chosen})"
    parts = (f"({part} or {merged})" for part, merged in (
        (f"min by ({keys}) ({grew_leading})", gpu.step_delta(COUNTED_WITHIN)),
        (f"max by ({keys}) ({packed}) % {SECONDS_PACKED} / 1000", gpu.step_seconds(COUNTED_WITHIN, scraped=True))))
    # the one step of (t - interval, t] (Prometheus 2's closed ranges and 3's left-open alike)
    return tuple(f"last_over_time({part}[{seconds * 1000 - 1}ms:{resolution}])" for part in parts)


def recorded_rate(metric: str, catalog: Catalog, as_increase: bool, over_time, extra, also=()) -> bool:
    """Whether a query's counter is read as a panel's rate of its recording (counted_rule): a rate (not an increase)
    per GPU in a panel (not an alert's period), of the whole field (no outer grouping's matchers: a pod, a MIG
    instance)."""
    return (metric in catalog and catalog.get(metric).is_counter and not as_increase and over_time is None
            and not extra and not also)


def counted_rate(metric: str, catalog: Catalog, merge: "_Merge", window: str, resolution: str) -> str:
    """A counter's rate over `window` per physical GPU from its recording (counted_rules): the growth of the window's
    steps over the seconds it grew in, so a missed scrape (a step of 0 in 0 s, the next one's delta grown in two
    intervals), a missed evaluation (a step out of both sums) or which recorded steps the window's edges hold
    (Prometheus 2's closed ranges, 3's left-open ones) changes no steady rate, and a GPU whose window holds no reading
    has none; the scope's cluster and GPU matchers on it; with pod or namespace variables, for the GPUs a copy of
    which in the scope has a sample within the window, less a GPU whose latest scrape named no pod, as the per-pod
    rates read them (_named_rates): a GPU the picked pod left (ended, or recreated on another GPU) was drawn for the
    window after (test_pod_moved_gpu: 150,000 mW beside its new GPU's 60,000). Judged by the samples' times (idle_gpus,
    the picked pods' naming samples against every sample without a pod), as the gauge panels judge a picked pod's
    GPUs (_left_idle, held), each selector gated by workload_picked: at All it meets no series and leaves no GPU out
    (every series in scope is read, a GPU's own series without a pod among them). By windows of whole intervals a pod
    started as its exporter was rolled lost its GPU's rate from the new copy's failed or late scrape, and a drained
    node's GPU came back under the ended pod from two intervals after its idle scrape (test_counter_rate_pod_picked).
    With a pod picked the panel costs about twice its Prometheus CPU, at All a little less (docs/performance.md)."""
    labels = merge.labels
    field = catalog.get(metric)
    grew, seconds = (f"sum_over_time({selector(counted_name(metric, part), list(merge.naming))}[{window}])"
                     for part in COUNTED_PARTS)
    series = _in_rate_unit(f"({grew} / ({seconds} > 0))", field)
    if not merge.workload:
        return series
    # a GPU a scrape within the window named a picked pod on, not one whose latest scrape named no pod since (idle_gpus,
    # read with a pod or namespace picked alone: every series a picked pod's matchers meet names a pod): the GPU a
    # picked pod left (ended, or recreated on another GPU) was drawn for the window after, at its rate
    scope = [[*merge.naming, *merge.workload]]
    present = f"present_over_time({selector(metric, scope[0])}[{window}])"
    gate = [workload_picked(merge.workload_regexes, True)]
    idle = idle_gpus(metric, [[*merge.naming, *gate]], labels, resolution, naming=[[*scope[0], *gate]])
    present = identified(f"({present} unless on ({_listed(held_labels(labels))}) {idle})", labels)
    return f"({series} and on ({_listed((labels.cluster, GPU_LABEL, 'gpu'))}) {present})"


# outer grouping keys besides `pod` that keep a workload, MIG instance or field label: no rate per GPU (reads_recording)
_NOT_PER_GPU_KEYS = frozenset(("namespace", "container", "mig_instance", *FIELD_LABEL_KEYS))


def reads_recording(query: Query, catalog: Catalog) -> bool:
    """A panel query whose counter's rate is read from its recording (counted_rules): a rate per GPU (an outer grouping
    that keeps no pod, MIG instance or field label) or per pod (_named_rates: each GPU's per-GPU rate)."""
    keys = set(group_keys(query.by))
    if not reads_copies_per_step(query, catalog) or query.as_increase or query.over or query.aggregation == "count":
        return False
    return keys <= POD_KEYS if "pod" in keys else not keys & _NOT_PER_GPU_KEYS


def recording_note(scrape_seconds: int, per_pod: bool = False) -> str:
    """What a panel of reads_recording says of its rate."""
    groups = " or ".join([COUNTER_GROUP] + [f"-{n}" for n in range(2, COUNTER_GROUPS + 1)])  # counter_groups' names
    rate = (f"Per GPU, from its recording (rule group {groups}, evaluated every {scrape_seconds} s): the "
            f"growth of its copies' readings at each {scrape_seconds} s step (where their merged reading went down, "
            f"the copies' own growth) over the seconds it grew in")
    window = (f"A reading counts at the step after its scrape, and a step at the rule group's evaluation after it (at "
              f"an offset Prometheus keeps in each {scrape_seconds} s), so the window ends at the GPU's latest step "
              f"evaluated, up to {scrape_seconds} s and that offset before the panel's time.")
    if per_pod:
        return (f"Per pod, the GPUs a scrape within the rate window named the pod on, each with the GPU's rate as "
                f"the per-GPU panels read it. {rate}. {window} The counter is the whole GPU's (DCGM counts per device, "
                f"not per pod): a GPU pods share (time-slicing, MIG instances) counts in full under each of them (a "
                f"time-sliced GPU an exporter without KUBERNETES_VIRTUAL_GPUS names under one of them per scrape, not "
                f"always the same one: under each pod a scrape of the window named), and a pod that left a GPU shows "
                f"its rate while the window holds a scrape that named it. No data where that rule group is not "
                f"loaded (gpudash verify says so) or before it was deployed.")
    return (f"{rate}. No data where that rule group is not loaded (gpudash verify says so) or before it was deployed. "
            f"{window}")


def counted_fields(queries, catalog: Catalog) -> tuple[str, ...]:
    """The counters panels read as a rate of their recording (counted_rule), in the order first queried."""
    return tuple(dict.fromkeys(name for q in queries for name in recorded_counters(q, catalog)))


def recorded_counters(query: Query, catalog: Catalog) -> tuple[str, ...]:
    """The counters a panel query reads as a rate of their recording: its field where reads_recording, and in a ratio
    (`over`) each counter among the field and what it divides by, each read per GPU as a field alone is (recorded_rate)
    where no outer grouping keeps a workload or MIG instance. A ratio's counters were read from recordings no rule
    wrote: the panel drew nothing (lint GF002)."""
    if not query.over:
        return (query.metric,) if reads_recording(query, catalog) else ()
    if query.raw_promql or query.as_increase or query.aggregation == "count" or \
            set(group_keys(query.by)) & {"pod", *_NOT_PER_GPU_KEYS}:
        return ()
    return tuple(name for name in (query.metric, *query.over) if name in catalog and catalog.get(name).is_counter)


DASHBOARD_RANGE = "$__range"  # a panel's increase window: the dashboard's time range (range_increase)
RANGE_MS = "${__range_ms}"  # Grafana's exact length of the time range, in milliseconds (`$__range` is rounded to 1 s)
RANGE_PART = "gpudash_part"  # the label range_increase tells its two parts apart by, summed away


def range_increase(counter: CounterReading) -> str:
    """A counter's increase during the dashboard's time range [from, to] (Grafana's instant query at `to`, the range
    `${__range_ms}` long): the sum of the deltas (summed_deltas) of exactly the scrapes taken in it, to the
    millisecond, on Prometheus 2's closed ranges and 3's left-open ones alike, as CloudWatch sums the agent's deltas of
    the scrapes in [start, end). A window of whole steps is not the range: a step reads the scrape taken within
    (step - interval, step], so the first step at or after `from` may read a scrape taken before it, and the scrapes
    after the last step before `to` belong to a step after it. Grafana's "Previous hour" starts on a step and ends at
    .999 (`[$__range:30s]` read the scrape 1 ms before the hour and none of its last 30 s); "Last 1 hour" starts and
    ends anywhere in a step. The parts, added up (`sum without` the label telling them apart):

    * the deltas of the steps of [from - 1 ms, to - 1 ms] (`[${__range_ms}ms:step] offset 1ms`; Prometheus 3 reads
      (from - 1 ms, to - 1 ms]), the first step's made the range's: that step may read a scrape taken before
      `from` beside the range's own (a Prometheus scraping more often than the step, or two copies of a GPU scraped
      at different times), and its delta counts from r0, the latest reading of the steps before it, while the
      range counts from p, the latest scrape before `from` (each copy's latest clean sample taken within the step
      before `from`, where the first step can have read it, the copies merged). Part `before` takes the first
      step's delta as the steps count it (read again at that step: none where no reading within PREVIOUS_WITHIN
      precedes it, a GPU's first) off and adds q's delta from p (q: the first step's reading; q less p, or q where
      it is lower: a reset), read once each, pinned with `@ end() offset ${__range_ms}ms` and a negative offset of
      a step. It is 0 where the step before the window read p (r0 is p), the first step's whole delta where that
      step read p alone (the scrape before `from` is left out), and else the difference between counting q from r0
      and from p: 7, 8 before `from`, then 0 and 9 count 0 from r0 = 7 as from p = 8, so nothing is taken off (p
      less r0 was, and the bar read 8 for 9). Without a scrape within the step before `from` (p), nothing changes:
      the first step counts from r0, the latest reading up to PREVIOUS_WITHIN before it (a first reading after a
      gap counts from the reading before the gap). A step exactly at from - 1 ms (`from` 1 ms past a multiple of
      the step) is the window's first on Prometheus 2, its reading all before `from` (taken off here); on 3 it is
      in no part, and the window's first step counts from it (reasoned: Prometheus 3 is not run here);
    * the scrapes after the window's last step, up to `to`: each copy's latest sample when it was taken after the
      last step at or before to - 1 ms (`timestamp()` of it, read once, in whole milliseconds), its delta from the
      latest reading of the steps before it (within PREVIOUS_WITHIN). A range shorter than a step may hold no step:
      then the first step `before` would read is one after `to`, so that part is left out and the tail, the
      range's only reading, counts from p where there is one (as the first step does).

    A GPU without a clean sample taken in the range has no value (Prometheus 2: [from, to]; 3: (from, to], so a GPU
    whose only sample in the range is at `from` to the millisecond has none there), as CloudWatch has no
    datapoint: the steps alone read 0 after a reading within PREVIOUS_WITHIN before the range. p, q, the first
    step's delta, the samples' presence and the tail's `timestamp()` are instant reads, not one per step (the
    first step's delta reads PREVIOUS_WITHIN at that step, beside the range's own steps)."""
    resolution, merged, clean = counter.resolution, counter.merged, counter.clean
    seconds = _seconds(resolution)
    lookback = _duration_text(max(PREVIOUS_WITHIN, 2 * seconds))
    pinned = f"[1ms:1ms] @ end() offset {RANGE_MS}ms)"  # read at `from` (the later of two 1 ms steps)
    delta = counter.step_delta(PREVIOUS_WITHIN)
    # the window's first step: the one step of [from - 1 ms, from + step - 2 ms] (Prometheus 3: (from - 1 ms, ...])
    first = f"[{seconds * 1000 - 1}ms:{resolution}] offset -{seconds * 1000 - 2}ms)"
    # each copy's latest sample, taken within the step before `from` (where the first step can have read it), clean:
    # not a copy's reading held from before (held_reading), which may be an exporter's that left before a reset
    p = merged(lambda s: f"last_over_time((({s} offset 1ms < {COUNTER_BLANK_FLOOR}) and "
                         f"present_over_time({s}[{seconds * 1000 - 1}ms] offset 1ms)){pinned}")
    q = f"last_over_time(last_over_time({clean}{first}{pinned}"
    counted = f"last_over_time(last_over_time({delta}{first}{pinned}"
    # the first step's delta as the steps count it (from r0; none where r0 is not within PREVIOUS_WITHIN) less its
    # delta from p (q less p, or q where it is lower: a reset)
    # where q is below p and the first step has a delta, that delta is the range's (CounterReading: a merged reading
    # going down is a copy's older reading or a reset, read from the copies' own deltas), not q as a reset: nothing
    # is taken off; q below p without a delta counts q (a reset). The first step's delta is read once (the costly part).
    above = f"({q} >= bool {p})"
    before = f"((({counted}) * {above} or ({q} * ({above} - 1))) - clamp_min({q} - {p}, 0))"
    steps = f"sum_over_time({delta}[{RANGE_MS}ms:{resolution}] offset 1ms)"
    last_step = f"scalar(floor((round(vector(time() * 1000)) - 1) / {seconds * 1000}) * {seconds * 1000})"
    def after_last_step(s: str) -> str:
        return f"(timestamp({s}) * 1000 > {last_step} + 0.5)"
    # the copies' held readings (held_reading) where a copy has a clean sample taken after the last step
    sampled = merged(lambda s: f"(({s} < {COUNTER_BLANK_FLOOR}) and {after_last_step(s)})")
    tail = f"({held_latest(counter)} and {sampled})"
    previous = f"last_over_time({clean}[{lookback}:{resolution}] offset 1ms)"
    # as a step's delta: below the steps' latest reading, the copies' own deltas, else a reset
    own = own_deltas(counter, PREVIOUS_WITHIN, after_last_step)
    after = f"((({tail} - ({previous} or {tail})) >= 0) or {own} or {tail})"
    # a range shorter than a step may hold none (its steps end before `from`): the first step `before` reads is one
    # after `to`, and the tail (counted from the step before `from`) is the range's first reading, counted from p
    holds_step = f"on () (vector({last_step}) >= round(vector(time() * 1000)) - {RANGE_MS} - 1)"
    after = f"((({tail} - {p} * ({tail} >= bool {p})) unless {holds_step}) or {after})"
    # a clean sample taken in the range
    taken = merged(lambda s: f"(min_over_time({s}[{RANGE_MS}ms]) < {COUNTER_BLANK_FLOOR})")
    parts = (f'label_replace({steps}, "{RANGE_PART}", "steps", "", "") or '
             f'label_replace(-({before} and {holds_step}), "{RANGE_PART}", "before", "", "") or '
             f'label_replace({after}, "{RANGE_PART}", "tail", "", "")')
    # never below 0 (a guard: the parts add up to each scrape's delta, none below 0)
    return (f"(clamp_min(sum without ({RANGE_PART}) (({parts}) and ignoring ({RANGE_PART}) {taken}), 0) "
            f"< {INCREASE_BLANK_FLOOR})")


def _named_span(window: str, as_increase: bool, over_time: tuple[str, str, str | None] | None) -> str:
    """The span whose copies of a GPU its name is read from (gpus_named): a panel's rate window, or the dashboard's
    range for an increase over it; a fixed window's increase looks back as far as its readings may (WINDOW_PREVIOUS_
    WITHIN before it); an alert's periods (`over_time`) all look back PREVIOUS_WITHIN from the instant, so that each
    period names a GPU alike (the rule adds its periods up per GPU, by its labels)."""
    if over_time is not None:
        return _duration_text(PREVIOUS_WITHIN)
    if as_increase and window == DASHBOARD_RANGE:
        return f"{RANGE_MS}ms"
    if as_increase and not window.startswith("$"):
        return _duration_text(_seconds(window) + WINDOW_PREVIOUS_WITHIN)
    return window


def _left_open(window: str) -> str:
    """A window of fixed length less a millisecond: the readings of (instant - window, instant] on Prometheus 2's
    closed ranges as on 3's left-open ones, as CloudWatch's period holds the deltas of [start, end) (a reading on
    the window's first step belongs to the window before). A dashboard macro is left as it is (the dashboard's
    range itself: range_increase)."""
    return window if window.startswith("$") else f"{_seconds(window) * 1000 - 1}ms"


# Seconds back a reading's previous one is looked for: a counter's increase across a gap in a GPU's data (its exporter
# away, a node rebooting) up to this long counts at the first reading after the gap, a longer gap's nowhere. An
# increase over the dashboard's range (range_increase) looks an hour back: the lookback costs one reading per step of
# the scrape interval beside the range's own. An increase over a fixed window (summed_deltas: alert rules, at their 5 s
# step) looks 10 minutes back. The CloudWatch agent's awsemf cache keeps a counter's reading 15 to 30 minutes (by the
# phase of its sweep; 5 to 10 in upstream's copy, which the agent no longer builds), so after a gap of 10 to 30
# minutes the alarm can fire where its rule does not (tests/integration/test_counter_gap_twins.py, strict xfails): 30
# minutes would triple the samples a rule holds at once (15 already passes `promtool test rules`' sample limit on a
# test fleet of a dozen GPUs), an hour read 720 more steps per GPU at each evaluation;
# docs/cloudwatch.md, "A counter across a gap".
PREVIOUS_WITHIN = 3600
WINDOW_PREVIOUS_WITHIN = 600


def _seconds(duration: str) -> int:
    return int(duration[:-1]) * _UNITS[duration[-1]]


LOOKBACK_SECONDS = 300  # Prometheus' lookback delta (its default): an instant selector reads a sample this old


def _duration_text(seconds: int) -> str:
    return f"{seconds // 60}m" if seconds % 60 == 0 else f"{seconds}s"


def _offset(shift: str | None) -> str:
    """The offset modifier that moves a window `shift` back (none for no shift)."""
    return f" offset {shift}" if shift else ""


_UNITS = {"s": 1, "m": 60, "h": 3600}


def _plus(window: str, shift: str | None) -> str:
    """`window` and `shift` (durations such as 5m, 30s) added up, as one duration."""
    if not shift:
        return window
    return _duration_text(sum(_seconds(d) for d in (window, shift)))


def fresh_reading(counter: "CounterReading") -> str:
    """A GPU's reading at each step of the scrape interval, from its copies (the exporter repeats a device's
    counter once per pod holding it, and again under a replaced exporter's new `instance`), as a subquery's
    inner query (CounterReading's selectors and copies): each copy's sample taken within the step before
    (step_reading: a sample counts at the one step that follows it), the copies' largest (one reading, repeated).
    A copy's older sample, which the instant selector would give for minutes after a missed scrape or after its
    pod left, is not read again at a later step: a rate over these readings sees each scrape once, as a rate over
    one series sees it, whatever pods come and go. Each copy's blank reading is left out before the copies are
    merged, as the agent's filter drops a datapoint before its metricstransform merges the copies: a copy reading a
    blank (an upgraded exporter beside the old one) does not hide the other's reading at that step."""
    return counter.merged(lambda s: step_reading(s, counter.resolution, f"({s} < {COUNTER_BLANK_FLOOR})"))


def held_reading(counter: CounterReading) -> str:
    """A counter's reading at the steps where a copy of the GPU has a sample taken within the step before (as
    fresh_reading), the largest of every copy's latest clean sample (the instant selector's), not only of the copies
    sampled in that step.

    Each exporter reads DCGM on its own clock: while two read one GPU (a rollout with maxSurge, two DaemonSets on a
    node), a copy scraped later may hold a reading taken before the other copy's latest, so the copies sampled step
    by step went down and up (10,086, then 10,085 from the other exporter), and summed_deltas read each step down as
    a reset, the counter since boot as one increase (a link replaying 30 per 5 minutes fired the replays rule through
    a one-minute overlap). Each copy's own readings climb, so the largest of their latest does not go down while the
    exporters' readings interleave (at the rules' 5 s step a step holds one exporter's scrape). It still goes down
    where a copy leaves (its staleness marker) and the other's latest was taken before it, or where the GPU is reset
    while both read it: CounterReading.step_delta reads such a step from the copies' own deltas.

    With `hold` (held_for; increases over the dashboard's range), a copy's latest reading is its latest sample within
    that long, a staleness marker skipped: a copy that missed a scrape (its target's staleness marker written in its
    place) still holds its reading until its next. Read with the instant selector, the copy holding the freshest reading (two exporters
    collecting on their own clocks) left the merge at each missed scrape: the merged reading went down to the
    lagging copy's, that step was read from the copies' own deltas, and the next, the fresh copy back, counted
    again from the lagging reading: each miss added about one collection's growth (a link replaying 30 per
    5 minutes read 57-71 with every 2nd scrape of the fresh copy missed). A copy gone for longer (its pod left, a run
    of missed scrapes) drops out after `hold`, where the merged reading may go down as before."""
    seconds = _seconds(counter.resolution)
    return f"({held_latest(counter)} and {counter.merged(lambda s: taken_within(s, seconds))})"


def held_latest(counter: CounterReading) -> str:
    """Every copy's latest clean reading merged (the largest): its latest sample within `counter.hold` (staleness
    markers skipped: a copy gone without one, after a Prometheus restart, is read for the hold, not the instant
    selector's 5 minutes), or without a hold the instant selector's; a copy whose latest sample is DCGM's blank
    none."""
    if counter.hold and counter.by_target:
        keys = _by_target(counter.copies)[0]
        inner = _per_copy(counter, lambda s: f"({s} < {COUNTER_BLANK_FLOOR})")
        return f"max by ({keys}) ({inner} or last_over_time({inner}[{counter.hold}ms:{counter.by_target}]))"
    if counter.hold:
        return counter.merged(lambda s: f"(last_over_time({s}[{counter.hold}ms]) < {COUNTER_BLANK_FLOOR})")
    return counter.merged(lambda s: f"({s} < {COUNTER_BLANK_FLOOR})")


def _per_copy(counter: CounterReading, part) -> str:
    """`part` (a function of a selector) over the counter's selectors, made one series per exporter's copy of the GPU
    (_by_target)."""
    each = [part(s) for s in counter.selectors]
    return _by_target(counter.copies)[1].format(each[0] if len(each) == 1 else "(" + " or ".join(each) + ")")


def _by_target(copies: str) -> tuple[str, str]:
    """The labels of one physical GPU in `copies` (_Merge.physical's `max by (<labels>) (...)` of a selector `{0}`),
    and `copies` keyed by each exporter target too (COPY_LABELS): one series per exporter's copy of the GPU."""
    head = "max by ("
    assert copies.startswith(head), copies
    keys, rest = copies[len(head):].split(")", 1)
    return keys, f"{head}{_listed((*keys.split(', '), *COPY_LABELS))}){rest}"


# Scrape intervals a copy's latest reading is held for (held_reading): one missed scrape and half an interval of
# jitter; a copy missing two scrapes in a row drops out of the merge until its next. Increases over the dashboard's
# range only: in the rules (a 5 s step over 10 minutes) the hold's range passed promtool's sample limit on a dozen
# GPUs' copies, and an offset instant selector read a copy gone without a staleness marker for 5 minutes.
HELD_SCRAPES = 2.5


def held_for(scrape: str) -> int:
    """The ms a copy's latest counter reading is held after it (held_reading), for the scrape interval `scrape`."""
    return int(HELD_SCRAPES * _seconds(scrape) * 1000)


def own_deltas(counter: CounterReading, within: int, taken=None) -> str:
    """Each copy's own delta at a step where it has a sample taken within the step before (taken_within; `taken`, a
    function of the selector: where the copy has the sample read otherwise): its clean reading less its own latest
    one at or before the step before (within `within` seconds), or the reading itself where it is lower (that copy's
    counter restarted); none for a copy without a clean reading within `within` a step before (its first, or a blank
    before); the copies' largest (CounterReading)."""
    seconds = _seconds(counter.resolution)

    def own(s: str) -> str:
        now = f"({s} < {COUNTER_BLANK_FLOOR})"
        before = f"(last_over_time({s}[{_duration_text(within)}] offset {counter.resolution}) < {COUNTER_BLANK_FLOOR})"
        kept = taken(s) if taken is not None else taken_within(s, seconds)
        return f"(({now} - ({before} <= {now} or {before} * 0)) and {kept})"
    return counter.merged(own)


def step_reading(selector: str, resolution: str, kept: str | None = None) -> str:
    """A series' reading at a subquery step of `resolution` (`<seconds>s`): its latest sample when that was
    taken within the step before, (t - step, t]; none otherwise. The instant selector gives the latest sample at
    or before the step (within the lookback delta, 5 minutes by default), kept where the series has a sample
    taken within the step (taken_within), on Prometheus 2 and 3 alike, so no one range boundary decides which step
    a sample counts at: a range selector of the step less a millisecond (Prometheus 2's closed ranges) leaves a
    sample taken 1 ms after a step in no step on Prometheus 3 (left-open ranges), a range of the whole step reads a
    sample taken on a step twice on 2. Unlike a range, the instant selector honours a staleness marker: a series'
    last sample whose marker (written a scrape later) falls within the same step is not read, which happens only
    where Prometheus scrapes more often than the step. `kept` (an expression of the selector, such as `x == 0`) is
    what the step keeps instead of the sample itself."""
    seconds = int(resolution.removesuffix("s"))
    return f"({kept or selector} and {taken_within(selector, seconds)})"


def taken_within(selector: str, seconds: int) -> str:
    """Each series of `selector` that has a sample taken within (t - seconds, t], on Prometheus 2 and 3 alike, from
    ranges only (`timestamp()` of a selector, which says the same, seeks every series again at every step of a
    subquery on Prometheus before 2.47: several times the cost). Prometheus 2 reads a range [t - r, t], 3 reads
    (t - r, t]; samples are whole milliseconds. `x[<seconds less 1 ms>]` is (t - seconds, t] on 2 and misses only a
    sample taken exactly at t - seconds + 1 ms on 3; `x[<seconds>]` is (t - seconds, t] on 3 and adds only a sample
    taken exactly at t - seconds on 2, which `x[1ms] offset <seconds>` (2: [t - seconds - 1 ms, t - seconds]) holds
    and removes. On 3 that last range is the sample at t - seconds alone, which one series cannot have beside one
    at t - seconds + 1 ms (its scrapes are far more than a millisecond apart): the three give the window exactly
    on both. Ranges skip staleness markers; the reading itself is the instant selector's (step_reading), which
    honours them as before."""
    return (f"(present_over_time({selector}[{seconds * 1000 - 1}ms]) or (present_over_time({selector}[{seconds}s]) "
            f"unless present_over_time({selector}[1ms] offset {seconds}s)))")


def reads_copies_per_step(query: Query, catalog: Catalog) -> bool:
    """A panel query that takes a counter's rate or increase from one reading per step of the scrape interval
    (fresh_reading): every counter, its copies merged per GPU (per pod and GPU for a query per pod)."""
    return not query.raw_promql and query.metric in catalog and catalog.get(query.metric).is_counter


def copies_note(scrape_seconds: int, per_pod: bool = False, whole_range: bool = False) -> str:
    """What a panel of reads_copies_per_step says of its readings' timing (the only way it differs from a rate over
    one series per GPU, or per pod and GPU); per pod, also that a GPU's counter is the device's. `whole_range`: an
    increase over the dashboard's range (range_increase), which counts the scrapes of the range itself."""
    if whole_range:
        return (f"Per {'pod and ' if per_pod else ''}GPU, read from its copies once per {scrape_seconds} s step, "
                f"counting the scrapes taken within the selected time range, to the millisecond.")
    if not per_pod:
        return (f"Per GPU, read from its copies (one per pod sharing it with KUBERNETES_VIRTUAL_GPUS, else one whose "
                f"pod can change from scrape to scrape) once per {scrape_seconds} s step: a reading "
                f"counts at the step after its scrape, so the window ends at the GPU's latest step, up to "
                f"{scrape_seconds} s before the panel's time.")
    return (f"Per pod, the GPUs a scrape within the rate window named the pod on, each with the GPU's rate read "
            f"from all its copies once per {scrape_seconds} s step, as the per-GPU panels read it: a reading counts at "
            f"the step after its scrape, so the window ends at the GPU's latest step, up to {scrape_seconds} s before "
            f"the panel's time. The counter is the whole GPU's (DCGM counts per device, not per pod): a GPU pods share "
            f"(time-slicing, MIG instances) counts in full under each of them (a time-sliced GPU an exporter without "
            f"KUBERNETES_VIRTUAL_GPUS names under one of them per scrape, not always the same one: under each pod a "
            f"scrape of the window named), and a pod that left a GPU shows its rate while the window holds a scrape "
            f"that named it.")


# What reading every step exactly costs (benchmarks/queries.py; docs/performance.md, the cost of exact counter queries).
COST_NOTE = ("Reading each scrape exactly takes time in proportion to GPUs x range: on Prometheus 2.42 about 2 s "
             "for one day of 64 GPUs and 10 to 12 s for one day of 256 GPUs, so 256 GPUs over 7 days (about 80 s) "
             "pass Grafana's default 30 s query timeout; narrow the node, gpu or pod variable, or shorten the range.")


# a target's labels, its `up`'s and those of every series scraped from it (gpudash's scrape job's: _staying)
TARGET_LABELS = ("instance", "job", "node")
COPY_LABELS = ("instance", "job")  # one exporter's copy of a GPU's series: the target Prometheus scrapes it from


@dataclass(frozen=True)
class _Merge:
    """How the series of one GPU become one. Kept: the labels naming one GPU (`identity`, the node
    coalesced into one label), those of a MIG instance, those the outer grouping keeps, and a field's
    own labels (an XID code); every other label is merged: the pods a series repeats for, the pod's
    UID and labels, the exporter's instance and pod (a restart or an upgrade)."""

    labels: Labels
    instance: tuple[str, ...]  # the MIG instance labels the GPU's value combines (none: instances stay apart)
    kept: tuple[str, ...] = ()  # the labels the outer grouping keeps (per pod: its namespace and name)
    naming: tuple[str, ...] = ()  # the matchers of the GPUs a counter's names are read from (Scope.naming)
    # A gauge per GPU: its value per GPU (GPU_LABEL), its node named after (named_gpus). With it, the values this
    # merge keeps carry no node label at all: GPU_LABEL stands where the node stood (_keep), the outer grouping's node
    # left out, so a GPU two copies name apart is one series until named_gpus writes the one node it is shown under.
    per_uuid: bool = False
    node: str | None = None  # the scope's node regex: a counter's GPUs are those it names (named; a recorded rate's)
    workload: tuple[str, ...] = ()  # the scope's pod and namespace matchers (the copies a recorded rate must have)
    whole: bool = False  # a panel's: its GPUs named by the dashboard's range (gpus_named's `whole`)
    picked: tuple[str, ...] = ()  # the pod and namespace variables' regexes where held_gpus keeps the GPUs (_left_idle)
    workload_regexes: tuple[str, ...] = ()  # the pod and namespace variables' regexes (a recorded rate's, counted_rate)
    # a rule's gauge over the fleet (grouped by nothing or by cluster): each GPU (GPU_LABEL, ONE_LABEL) of the rule's
    # span and the node and slot its chosen copy names (newest_nodes); `_slotted`
    newest_node: str | None = None
    # a rule's counter over the fleet: a GPU named by a UUID of NVIDIA's form one counter whatever its index (physical)
    uuid_counter: bool = False
    # a panel's gauge per pod (the look-back's readings, each series naming its GPU by GPU_LABEL) whose lines name no
    # index: a pod's GPU is POD_GPU_LABEL, its UUID where of NVIDIA's form, else its index (_pod_gpu)
    pod_gpu: bool = False
    # with `pod_gpu`: pod_gpu_marks' indexes of each pod at which a copy carries no UUID of NVIDIA's form (_pod_gpu)
    pod_marks: str | None = None

    def _keep(self, own: tuple[str, ...], instances: bool) -> str:
        node = GPU_LABEL if self.per_uuid else self.labels.node
        kept = (name for name in (*self.kept, *own) if not self.per_uuid or name != self.labels.node)
        # per pod (the outer grouping keeps the pod, not the node): a pod runs on one node, so its GPUs are told apart
        # by their index alone, whatever node spellings their copies carry; with `pod_gpu`, by the UUID where it is of
        # NVIDIA's form (whatever index each exporter gives the GPU), by the index where not
        slot = () if self.per_pod() else (node,)
        gpu = POD_GPU_LABEL if self.pod_keyed() else "gpu"
        return _listed((self.labels.cluster, *slot, gpu, *(INSTANCE_IDENTITY if instances else ()), *kept))

    def pod_keyed(self) -> bool:
        """Whether a pod's GPUs are told apart by POD_GPU_LABEL (`pod_gpu`), not by their index."""
        return self.pod_gpu and self.per_pod()

    def _merged(self, series: str) -> str:
        """`series` ready for a grouping by `_keep`: its node coalesced into one label, or per pod with `pod_gpu`
        (whose grouping keeps no node) its GPU keyed by POD_GPU_LABEL."""
        if self.pod_keyed():  # a reading taken as it is (exporter.virtual_gpus' own shares at a rule's step) names
            # no GPU yet: keyed by its index, a pod's share never met its GPU's naming by UUID (pod_indexes)
            named = series if GPU_LABEL in series else identified(series, self.labels)
            return _pod_gpu(named, self.labels, self.pod_marks)
        return coalesce_node(series, self.labels)

    def per_pod(self) -> bool:
        """Whether the outer grouping keeps the pod and not the node."""
        return self.labels.pod in self.kept and self.labels.node not in self.kept and not self.per_uuid

    def grouping(self) -> str:
        """The labels of one GPU's (and outer group's) value, MIG instances combined."""
        return self._keep((), False)

    def named_apart(self, instances: bool) -> str:
        """The labels of one GPU's value (with `instances`, of one GPU instance's) and outer group, the GPU told apart
        by its name (GPU_LABEL, which the series carry) and not by the node: a per-pod look-back's value names the node
        by the copy its evaluation chose, and two copies of a tie (reading alike, the node spelled alike: two
        exporters' own pod names in Hostname) are taken at random, evaluation by evaluation (Prometheus' order of
        series), so a value and a test of it evaluated apart named one GPU by two nodes."""
        keep = self._keep((GPU_LABEL,), instances).split(", ")
        return _listed(name for name in keep if name != self.labels.node)

    def combines(self) -> bool:
        """Whether a GPU's MIG instances make one value (the outer grouping does not keep them apart)."""
        return not all(name in self.kept for name in self.instance)

    def copies(self, series: str, own: tuple[str, ...] = ()) -> str:
        """`series`' copies of one reading of one GPU instance (and outer group) made one series: their max."""
        return f"max by ({self._keep(own, True)}) ({self._merged(series)})"

    def physical(self, series: str, own: tuple[str, ...] = (), copy: bool = False, indexless: bool = False) -> str:
        """A counter's copies of one physical GPU (instance, and outer group) made one series: their max, the GPU named
        by its UUID (GPU_LABEL) and not by the node spelling a copy carries, which `named` joins back after the rate or
        increase; with `copy`, one series per node the GPU's copies name (coalesced from its spellings: an exporter
        replaced by one spelling it `hostname` for `Hostname` is one copy). Two exporters reading one GPU (a maxSurge
        rollout, the old one writing its own pod's name into Hostname, the new one the node into hostname) are copies
        of one counter, not two GPUs: the energy panel drew `n6 GPU 0` 199,840 and `nvidia-dcgm-exporter-x7k2p GPU 0`
        199,407 mW for one GPU drawing 200,000, and a fleet sum read it twice. An increase reads all the copies at once
        (its sum of deltas does not depend on when within a step a reading was taken), so across a rollout renaming
        the node the new exporter's readings go on from the old one's. A panel's rate is each copy's (`copy`), then the
        highest (`fastest`): both exporters' readings in one series, taken at different instants within a step, read a
        4 s rate between 134,000 and 266,000 mW for 200,000 (1 s scrapes on a loaded machine); an alert's rate is its
        period's increase over the period's seconds (_per_gpu). A node replaced by one of the
        same name, or a GPU swapped, puts another GPU under the same node and index within a window: its counter is
        another counter, whose first reading is no reset of the old one's (merged by node and index alone, a new GPU
        reading 2 remapped rows after the old one's 5 counted 2 remaps). The CloudWatch agent keeps a counter's
        previous reading per series, the UUID among its labels: a new GPU's first reading sends nothing. With
        `uuid_counter` (a rule over the fleet) a GPU named by a UUID of NVIDIA's form is one counter whatever its index
        (unindexed): an old exporter and a new one numbering the GPUs apart (C, A, B for A, B, C) were two counters of
        each GPU while both served it, the fleet's 1-minute energy increase 1.5 to 2.0 times its energy
        (tests/integration/test_fleet_counter_rollout_apart.py). `indexless` (an alert's increase of a counter per GPU
        or node, _per_gpu): so too, its increase per UUID then drawn at the one index its naming keeps (`named`'s `by_uuid`)."""
        named = coalesced_gpu(series, self.labels) if copy else identified(series, self.labels)
        if self.uuid_counter or indexless:  # `series` is a template (`{0}`): the form's braces doubled
            named = unindexed(named, template=True)
        return f"max by ({self._physical(own, copy)}) ({named})"

    def _physical(self, own: tuple[str, ...], copy: bool = False, one: bool = False) -> str:
        """The labels of one physical GPU (instance, and outer group), with `copy` the node its copy names."""
        labels = self.labels
        spellings = {*labels.node_sources, labels.node}
        kept = (name for name in (*self.kept, *own) if name not in spellings)
        kept = (name for name in kept if not one or name != "gpu")  # `one`: the index is ONE_LABEL's (_uuid_one)
        return _listed((labels.cluster, GPU_LABEL, ONE_LABEL if one else "gpu", *INSTANCE_IDENTITY, *kept,
                        *((labels.node,) if copy else ())))

    def fastest(self, rates: str, own: tuple[str, ...] = (), one: bool = False) -> str:
        """The rates of a GPU's copies (`physical` with `copy`) made one: the highest, that of the copy read over the
        most of the window (copies read throughout read alike; a copy that began or ended inside it reads a part of the
        GPU's growth: an upgrade renaming the node without overlap reads low while the window holds the switch); `one`:
        by ONE_LABEL for the index (_uuid_one: a UUID's copies at two indexes one)."""
        return f"max by ({self._physical(own, one=one)}) ({rates})"

    def named(self, series: str, metric: str, span: str, resolution: str, by_uuid: bool = False) -> str:
        """`series` (a counter's rate or increase per GPU, `physical`) with the node label of the name gpus_named gives
        its GPU (in a panel, the range's name; an increase over the range reads the range's copies already); `by_uuid`
        (`physical`'s `indexless`): one per UUID of NVIDIA's form, drawn at the one index its naming keeps."""
        if by_uuid:
            series = _uuid_one(series)
        # a panel's increase over the range: named from the range's copies, by_uuid at the index the lines beside it
        # draw the GPU at (the step's presence first, _one_index_per_uuid; a rule's _newest_index counts the copies'
        # samples within the span, which a range shorter than the new exporter's life gives the old one fewer of)
        return named_gpus(series, (metric,), list(self.naming), span, resolution, self.labels, self.node,
                          self.whole and (span != f"{RANGE_MS}ms" or by_uuid), by_uuid=by_uuid,
                          indexless=self.uuid_counter)

    def gpus(self, series: str, own: tuple[str, ...] = ()) -> str:
        """The rates or increases of the physical GPUs (`physical`, `named`) that stood under one node and index (and
        outer group) within a window added up: one series per GPU slot, as the CloudWatch widget sums their deltas under
        the node and GPU dimensions."""
        return f"sum by ({self._keep(own, True)}) ({series})"

    def _copy(self, own: tuple[str, ...], instances: bool) -> str:
        """The labels of one exporter's copy of a GPU (instance): the GPU named by its UUID (GPU_LABEL) and the copy by
        its scrape target (COPY_LABELS), with the node spelling it writes and what the outer grouping keeps."""
        return _listed((self.labels.cluster, GPU_LABEL, "gpu", self.labels.node,
                        *(INSTANCE_IDENTITY if instances else ()), *self.kept, *own, *COPY_LABELS))

    def chooses_apart(self, own: tuple[str, ...] = ()) -> tuple[str, ...]:
        """The outer grouping's labels a copy is chosen apart for (chosen_copy's `kept`: a rule's pod), not the node's
        spellings (a copy's own) nor a MIG instance's (one exporter per GPU)."""
        spellings = (*self.labels.node_sources, self.labels.node, *INSTANCE_IDENTITY)
        return tuple(dict.fromkeys(name for name in (*self.kept, *own) if name not in spellings))

    def one_copy(self, how: str, fields: tuple[str, ...], own: tuple[str, ...] = (), chosen: str | None = None,
                 fresh: tuple[str, ...] = (), blanks: tuple[tuple[str, ...], tuple[str, ...]] | None = None,
                 late: tuple[tuple[str, ...], str] | None = None,
                 late_blanks: tuple[str, ...] | None = None, successive: tuple[str, ...] = ()) -> str:
        """A gauge made one value per GPU (instance, and outer group), that of ONE exporter's copy of the GPU: each of
        `fields` (series of gauges, blanks left out) made one series per copy and GPU instance (their max: the pods a
        copy repeats the device's value for) and added up, the copy's MIG instances combined (`how`), read from the
        copy `chosen` (chosen_copy, made with `chooses_apart`: a share's, by its used; None: the copy with the highest
        value), in panels (`fresh`, the fields' series with a sample within the last scrape interval) from its fresh
        series, a GPU without a fresh copy from its copies' highest value. A GPU is its UUID (GPU_LABEL;
        a series without one, its node spelling) and its MIG instance: two exporters reading it (mid-upgrade, the old
        one writing its own pod's name into Hostname and the new one the node into hostname) are two copies of ONE
        GPU, not two GPUs (a renamed node's GPU read 300 + 100 W), and their MIG instances are not mixed (35,000 MiB
        of one beside 9,000 of the other read 44,000 where they read 36,000 and 39,000). The node spelling shown is
        the copy chosen's. Each field is merged per copy before they are added, so fields whose series carry other
        labels (exporter.virtual_gpus: pod_uid on the per-process fields) add up.
        `blanks` (fields a GPU's MIG instances add up: the fields' series on MIG instances, with their blanks and
        without): a copy one of whose instances reads DCGM's blank for a field (or has no series of one) is no reading
        of the GPU, so it is not chosen while the GPU has a copy reading every instance, in the fresh tier and in the
        late one alike; a GPU whose copies in the tier read all lack an instance has no value (BLANK_INSTANCE_NOTE).
        Its other instances' sum outread the complete copy (an old exporter's 25,000 + blank over the new one's
        12,000 + 8,000 MiB), and a blank checked per node spelling, not per copy, either hid the GPU (the copy chosen
        named by the old exporter's pod) or let the incomplete copy's sum show (both copies named n3).
        `late` (panels, with `fresh`: looked_back's readings of the fields and the key of the first): a GPU without a
        fresh copy is read from its copy with the newest reading within the look-back, each field's latest reading
        there, not from its copies' latest samples (a blank one, or one marked stale, no reading). With `late_blanks`
        (one field: its series on MIG instances whose samples within the look-back are all the blank; several: the
        fields' series on MIG instances with a reading within it; `blanks` then the fields' series on MIG instances
        with a sample within the look-back and their fresh readings), the blank check is made per tier: a fresh copy
        with an instance the look-back holds and no fresh reading of it (its latest sample the blank, or older than
        the scrape interval: it stopped reporting) is no fresh reading (the GPU is read from the late tier), and a
        late copy is left out only where an instance has no reading but the blank within the look-back (or, of
        several fields, a sample within it of one and no reading within it of another) (its total of 42,000 MiB read
        10,000 at the scrapes an instance's reading was the blank: the GPU left out); an instance with no sample
        within the look-back is no instance of the GPU any more.
        `successive` (panels, with `fresh`: own labels whose series follow one another, the XID code): a GPU's series
        of each such label are chosen among as its copies are, not kept apart: its fresh series (the fresher where two
        are), else the one with the newest reading within the look-back. Kept apart, the code before stayed beside
        the new one for the look-back, its series read from the late tier: the largest of them read 119 for 90 s after
        the code fell to 79 (test_xid_code_falls)."""
        apart = not self.combines()
        chosen_among = set(successive) - set(self.kept) if fresh else set()
        among = tuple(name for name in self.chooses_apart(own) if name not in chosen_among)
        gpu = _listed((self.labels.cluster, GPU_LABEL, "gpu", *among))
        # the late tier only for a GPU none of whose own labels' series is fresh: the exporter writes all of them at
        # each scrape, so a series it wrote no more beside a fresh one has ended (an XID's count once its window
        # passed, the exporter writing the series without `xid` instead: 1 read for 0 for the look-back)
        unfresh = _listed((self.labels.cluster, GPU_LABEL, "gpu",
                           *(name for name in among if name in self.kept or name not in own)))
        identity = _listed((self.labels.cluster, GPU_LABEL, "gpu", *(INSTANCE_IDENTITY if apart else ()), *among))
        if self._highest_of_all(how, fields, own, chosen, fresh, blanks, identity):
            # the highest copy's value is the highest of every series of the GPU: one max, no copy to choose
            return f"max by ({self._keep(own, apart)}) ({coalesced_gpu(fields[0], self.labels)})"

        def per_copy(fields: tuple[str, ...]) -> str:
            each = [f"max by ({self._copy(own, True)}) ({coalesced_gpu(s, self.labels)})"
                    for s in fields]
            value = each[0] if len(each) == 1 else "(" + " + ".join(each) + ")"
            return value if apart else brief_aggregation(how, self._copy(own, False), value)
        value = per_copy(fields)
        on = _listed((self.labels.cluster, GPU_LABEL, "gpu", *self.chooses_apart(own), *COPY_LABELS))
        later = value
        if late is not None and fresh:  # the copy with the newest reading within the look-back, its latest readings
            newest = f"max by ({self._copy(own, False)}) ({coalesced_gpu(late[1], self.labels)})"
            later = f"({per_copy(late[0])} and on ({on}) topk by ({gpu}) (1, {newest}))"
        now = per_copy(fresh) if fresh else value
        if late is not None and fresh and blanks is not None and late_blanks is not None:  # checked per tier
            now = f"({now} unless on ({on}) {self._incomplete(own, *blanks)})"
            if late_blanks:  # none: instances that average (a blank one is left out of the mean, in both tiers)
                late_out = self._per_instance(own)(late_blanks[0]) if len(late_blanks) == 1 \
                    else self._incomplete(own, blanks[0], late_blanks)
                later = f"({later} unless on ({on}) ({late_out}))"
            blanks = None
        if chosen is not None:  # the copy chosen, its fresh series only where it has; a GPU without: its highest copy
            first = f"{now} and on ({on}) {chosen}"
            candidates = f"({first} or on ({unfresh}) {later})" if fresh else f"({first})"
        else:  # the highest copy, of the fresh ones where the GPU has one
            candidates = f"({now} or on ({unfresh}) {later})" if fresh else value
        if blanks is not None:  # a copy lacking an instance: no reading of the GPU
            candidates = f"({candidates} unless on ({on}) {self._incomplete(own, *blanks)})"
        # slotted, a GPU's copies are made one there (their max per GPU), not by a topk per GPU and index
        if self._slots() or chosen is not None and not fresh and blanks is None:
            return f"max by ({self._keep(own, apart)}) {self._slotted(candidates, own)}"
        return brief_aggregation("max", self._keep(own, apart), f"topk by ({identity}) (1, {candidates})")

    def _slots(self) -> bool:
        """Whether each GPU is put under the node and index its newest copy names (_slotted)."""
        return self.newest_node is not None and not self.per_uuid and self.combines()

    def _slotted(self, series: str, own: tuple[str, ...] = ()) -> str:
        """`series` (the copies of each GPU: GPU_LABEL, index and the copy's node kept), with `newest_node` (a rule's
        gauge over the fleet), made one per GPU, its copies' max, and put under the node and slot (index) its chosen
        copy within the rule's span names (newest_nodes), whichever copy a reading is of, so that the slot's max
        (`_keep`: node and index) meets a GPU's copies at one node and index in every step of a period, and never two
        GPUs. An old exporter
        writing its own pod's name as Hostname and a new one writing the node and numbering the GPUs apart shared no
        slot: a fleet rule counted each GPU twice ('more than 9 GPUs' read 12, the fleet's power 5,750 W for 4,500 over
        1-minute periods from 15 to 150 s after the rollout, over 5-minute ones to 330 s:
        tests/integration/test_exporter_overlap_long_and_unnamed.py). Put under the newest copy's node alone, each copy
        at its own index, a step holding both exporters' scrapes (the new one's 1 to 4 s before the old one's) held two
        GPUs in a slot and read the larger (A 300 W and C 700 W at index 0: 1,900 W for 1,500, mean 633 W for 500;
        at the same second with no `node` label the node's name a tie per GPU: 5 GPUs for 3, up to 2,700 W;
        tests/integration/test_fleet_rule_numbered_apart_same_step.py). A GPU of a UUID of NVIDIA's form is one GPU
        whatever index its copies give it (ONE_LABEL empty, _uuid_one); a GPU without one (GPU_LABEL its node) keeps
        each index, and still its node and index are the GPU: one whose new exporter writes no UUID (its copies under
        the UUID's index), or two swapped at one index, stay one GPU (tests/integration/test_fleet_rule_uuid_dropped.py).
        Every GPU the series holds has an entry (newest_nodes reads the span the series' readings are in): one join, no
        series repeated (keeping the GPUs without an entry by `or` read the per-GPU part twice, some 2.7 times the
        bytes)."""
        if not self._slots():
            return series
        gpu = _listed((self.labels.cluster, GPU_LABEL, ONE_LABEL))
        each = _listed((self.labels.cluster, GPU_LABEL, ONE_LABEL, *self.chooses_apart(own)))
        return f"(max by ({each}) ({_uuid_one(series)}) + on ({gpu}) group_left ({self.labels.node}, gpu) " \
               f"{self.newest_node})"

    def _highest_of_all(self, how: str, fields: tuple[str, ...], own: tuple[str, ...], chosen: str | None,
                        fresh: tuple[str, ...], blanks: object, identity: str) -> bool:
        """Whether one_copy's value is the highest of the field's series of each GPU (its MIG instances combined by
        their max, or kept apart), so that choosing a copy changes nothing (alert rules, at each step of a period's
        subquery: the copy choice was three aggregations over every series of the fleet per step). The highest copy
        (topk 1, one series a GPU) of each copy's highest series, then their max per kept group, is the highest series
        of each group when every kept label is one the copy is chosen by (each GPU's copies in one kept group): the
        same float (max and topk alike pass over NaN while a group has a number), so the same values."""
        if chosen is not None or fresh or blanks is not None or len(fields) != 1:
            return False
        if how != "max" and self.combines():  # MIG instances added up or averaged per copy: a copy's sum is no series'
            return False
        kept = {name.strip() for name in self._keep(own, not self.combines()).split(",")}
        return kept <= {name.strip() for name in identity.split(",")}

    def _incomplete(self, own: tuple[str, ...], written: tuple[str, ...], read: tuple[str, ...]) -> str:
        """The copies (one_copy's `blanks`) one of whose MIG instances reads DCGM's blank for one of the fields, or has
        no series of one: each copy's instances with a series of any field (`written`, blanks kept) less those reading
        every field (`read`, blanks left out)."""
        each = self._per_instance(own)
        return f"(({' or '.join(map(each, written))}) unless ({' and '.join(map(each, read))}))"

    def _per_instance(self, own: tuple[str, ...]):
        """A function making `series` one per copy's MIG instance (_incomplete)."""
        instance = _listed((self.labels.cluster, GPU_LABEL, "gpu", *INSTANCE_IDENTITY, *self.chooses_apart(own),
                            *COPY_LABELS))
        return lambda series: f"max by ({instance}) ({identified(series, self.labels)})"

    def __call__(self, how: str, series: str, own: tuple[str, ...] = ()) -> str:
        if how == "max":
            return f"max by ({self._keep(own, not self.instance)}) ({self._merged(series)})"
        one = self.copies(series, own)
        if all(name in self.kept for name in self.instance):  # the instances stay apart: nothing to combine
            return one
        # a repeated series is counted once before instances add up or average
        return f"{how} by ({self._keep(own, False)}) ({one})"


def kinds_apart(query: Query, catalog: Catalog) -> bool:
    """A per-pod alert on a field MIG does not report, whose stand-in the CSV collects, judges a pod's whole
    GPUs and its MIG instances apart (expression's `kind`), each against the threshold: a whole GPU and a
    MIG slice are distinct resources a pod asks for (nvidia.com/gpu, nvidia.com/mig-<profile>), a slice may
    be a seventh of a GPU, so a mean over both weighs a slice as a GPU and hides a slice left idle beside a
    busy GPU. CloudWatch can only judge them apart (one metric per GROUP BY alarm: the rule's second alarm)."""
    return ("pod" in group_keys(query.by) and query.aggregation != "count" and not query.over
            and not query.raw_promql and catalog.mig_substitute(query.metric) is not None)


def _per_gpu(metric: str, catalog: Catalog, branches: list[list[str]], extra: list[str], merge: _Merge,
             window: str, as_increase: bool, count: bool, over_time: tuple[str, str, str | None] | None = None,
             kind: str | None = None, resolution: str | None = None, device: _Device | None = None,
             also: tuple[str, ...] = (), checked: bool = True, share: tuple[str, ...] = (),
             within: str | None = None, periods: Periods | None = None) -> str:
    """One value per GPU (and per outer group): the MIG instances of one GPU combined (`merge`).

    A count (`count`) counts the GPUs with a reading of the field (counted): in an alert's period (`over_time`), each
    GPU with a reading in it (per pod, each a scrape within the look-back of the period's steps named the pod on:
    _Device.named_in_period); in a panel, each GPU with a reading within the look-back `within` (label_lookback, the
    per-pod panels' window; per pod, `device`'s look-back reads it so), not only one whose latest sample is one: a
    GPU whose field reads DCGM's blank at every other scrape read 11 GPUs then 10 at alternate scrapes.

    A gauge a GPU's instances add up (memory) has no value for a GPU one of whose instances reads the blank (unless
    `checked` is False: the caller keeps only GPUs a total of this field and others has, which is checked): the rest
    of its instances are not the GPU (a 3g.40gb's free memory blank beside a 1g.10gb's 10,000 MiB read 10,000 MiB
    free; its share of memory 20,000 / 30,000 = 0.667 where 0.4 is used). Only MIG instances are looked at for it
    (a whole GPU's blank leaves no series already), so a fleet of whole GPUs pays next to nothing for it.

    `also` (gauges a GPU's instances add up, as `metric`; _total): their readings added to `metric`'s series by series
    before the copies of a reading are merged, so that a total (used + free) is one copy's: two exporters serving a GPU
    (one writing Hostname, the other hostname, mid-upgrade) read 40,000 + 40,000 and 60,000 + 20,000 MiB; their
    fields merged apart read 60,000 + 40,000 of an 80,000 MiB GPU. Where a field's copies carry other labels than
    another's (a field the exporter splits per process, read as the device's value per GPU), they are merged apart.

    `share` (a share's fields, used and free): a copy of each GPU is chosen by its used (chosen_copy, a blank free
    counted against it), and `metric` (or with `also`, that sum) is read from it, so that a share's used and total are
    one copy's, the same exporter's for each MIG instance: two exporters serving a MIG GPU read 0.88 (an instance's
    larger used from each) where they read 0.72 and 0.78. The per-pod lookback chooses the same way (_Device._read).
    A gauge in panels is read from the chosen copy's series with a sample within the last scrape interval where the
    GPU has a fresh copy (a pod's series from before a Prometheus restart, which no staleness marker ends, read 300 W
    beside the fresh 100 W), else (`within`, the look-back a count reads) from its copy with the newest reading
    within the look-back, at that reading (looked_back: a GPU whose fresh sample is DCGM's blank keeps its reading of
    the scrape before; the mean over GPUs read 62.727 then 62.7 at alternate scrapes), else its copies' highest
    reading.

    Where MIG does not report a field (GPU utilization), its stand-in on the instances
    is used, averaged over the GPU's instances, and the field itself on other GPUs; without
    a stand-in the CSV collects, MIG instances give no data for it.

    `periods` (an alert's counter, `over_time` without its offset): each period's increase (or rate) marked with its
    PERIOD_LABEL, the GPUs named once for all of them (the name is read at the instant, alike in every period:
    _named_span), each period's value then aggregated apart, as in one expression per period.
    """
    own_labels = own_labels_of(metric)
    counter = bool(resolution) and metric in catalog and catalog.get(metric).is_counter
    if periods is not None and (count or metric in MIG_UNSUPPORTED or not counter or over_time is None
                                or recorded_rate(metric, catalog, as_increase, over_time, extra, also)):
        raise NotCombined(metric)
    # a gauge per GPU: one exporter's copy of the GPU (_Merge.one_copy); the per-pod lookback chooses its own (_Device)
    one_copy = device is None or device.lookback is None
    if count:  # how many GPUs have a reading of the field (counted): a GPU two exporters read counts once
        substitute = catalog.mig_substitute(metric) if metric in MIG_UNSUPPORTED else None

        def stood_in(read: Callable[[str, list[str]], str]) -> str:
            """`read(field, more matchers)` of the field, where MIG does not report it (per GPU and per pod alike) a
            MIG instance read by its stand-in's reading, other GPUs by the field's own."""
            if substitute is None or kind == "whole":
                return read(metric, [])
            on_mig = read(substitute[0], [f'{MIG_INSTANCE_LABEL}!=""'])
            if kind == "mig":
                return on_mig
            whole = read(metric, [f'{MIG_INSTANCE_LABEL}=""'])
            return f"({on_mig} or {whole})"
        # an alert's period (`over_time`): each GPU with a reading in it; per pod each such GPU a scrape within the
        # look-back of the period's steps named the pod on (the look-back read at the evaluation's instant read every
        # period alike, and lost a pod whose node left inside the latest one; no look-back counted a pod named in turn
        # at the scrapes naming it alone: 1 GPU for 2 at every other period at one scrape per period)
        if one_copy or over_time is not None:
            period = over_time[1:3] if over_time is not None else None if within is None else (within, None)
            # a rule's count per pod: the GPUs read under the pod at a step of the period (a reading at the step, a
            # scrape within the per-pod look-back before it naming the pod: _Device.named_in_period), as its total's
            # rule reads them
            named = over_time is not None and not one_copy and device.lookback is not None

            def read(name: str, more: list[str]) -> str:
                if named:
                    return device.named_in_period(name, [*extra, *more], _gauge_form(over_time, resolution), period)
                form = counted(is_counter_field(name, catalog), period)
                if device is not None and device.reads_device(name):  # the device's readings, not a pod's share
                    if over_time is not None:
                        return device.counted_in_period(name, [*extra, *more], period)
                    if within is not None:
                        return device.counted_within(name, [*extra, *more], resolution, within)
                if over_time is None and within is not None:  # a panel's: not a GPU the picked pod left
                    left = _left_idle(name, branches, [*extra, *more], merge.labels, within, resolution, merge.picked)
                    return f"({_raw(name, branches, [*extra, *more], form)} unless {left})"
                return _raw(name, branches, [*extra, *more], form)
            return merge.one_copy("max", (stood_in(read),), own_labels)
        return merge("max", stood_in(lambda name, more: device.reading(name, [*extra, *more], COUNTED)), own_labels)
    how = catalog.get(metric).per_gpu_aggregation if metric in catalog else "max"

    def is_counter(name: str) -> bool:
        return name in catalog and catalog.get(name).is_counter

    def choose(names: tuple[str, ...], more: tuple[str, ...] = ()) -> str | None:
        """The copy of each GPU its gauges are read from (chosen_copy): panels by their latest samples, fresh ones
        first; rules by the reading or window they judge (None: a field's own highest reading, one_copy's topk, the
        copy chosen_copy's key chooses where readings differ, at a third of the CPU: no key read beside the value)."""
        if len(names) == 1:  # one field: its highest reading (one_copy's topk; in panels, of its fresh copies first):
            return None  # chosen_copy's key alike, save DCGM's blank (no reading) and equal readings' node spellings
        fresh = resolution if over_time is None else None
        return chosen_copy(merge.labels, names, branches, [*extra, *more], merge.chooses_apart(own_labels),
                           _gauge_form(over_time, resolution), fresh)

    def fresh_only(names: tuple[str, ...], more: tuple[str, ...] = ()) -> tuple[str, ...]:
        """Panels: the fields' series with a sample within the last scrape interval (fresh_copies), blanks left out
        (a GPU whose fresh copies all read the blank shows its copies' highest other reading: only a series from
        before a Prometheus restart can be one), or () where they are read otherwise (rules; exporter.virtual_gpus'
        per-process fields)."""
        if over_time is not None or not resolution:
            return ()
        if device is not None and device.shares and set(names) & set(PER_PROCESS_FIELDS):
            if within is None or not all(device.reads_device(name) or name not in PER_PROCESS_FIELDS
                                         for name in names):
                return ()
            return tuple(device.tiers(name, [*extra, *more], resolution, within, fresher=merge.labels)[0]
                         if device.reads_device(name) else fresh_copies(name, branches, [*extra, *more], LATEST,
                                                                        resolution)
                         for name in names)
        fresh = (fresh_copies(name, branches, [*extra, *more], LATEST, resolution) for name in names)
        if choose(names) is not None:  # the copy chosen_copy chooses, the fresher already
            return tuple(fresh)
        return tuple(f"({each} unless {older_samples(name, branches, [*extra, *more], merge.labels, names)})"
                     for name, each in zip(names, fresh))

    def late_only(names: tuple[str, ...], more: tuple[str, ...] = (), scale: str = "") \
            -> tuple[tuple[str, ...], str] | None:
        """Panels, with fresh_only: each field's latest reading within the look-back `within` and the key of the
        copy it is read from (looked_back; a per-process field's device value, _Device.tiers); None where
        fresh_only reads nothing or no look-back is given."""
        if within is None or not fresh_only(names, more):
            return None
        read = [device.tiers(name, [*extra, *more], resolution, within, scale)[1] if device is not None
                and device.reads_device(name) else looked_back(name, branches, [*extra, *more], resolution, within,
                                                               scale) for name in names]
        return tuple(served(name, more, value) for name, (value, _) in zip(names, read)), read[0][1]

    def served(name: str, more: tuple[str, ...], series: str) -> str:
        """Panels' late tier: `series` (of the field `name`) without the series the exporter stopped serving while it
        served the GPU's others (_superseded): a MIG instance destroyed by a reconfiguration (read beside the new ones
        at a failed scrape within the look-back, 47,000 for 15,000 MiB), a pod's series of a GPU the exporter named
        under another pod since (time-slicing without KUBERNETES_VIRTUAL_GPUS: the older scrape's reading, 55 % for
        50 %, where the copy's series' highest was read); a per-process field's device value (_Device.tiers, one
        series per GPU instance) without the MIG instances none of whose series (its own, its pods' copies, on an
        exporter with per-process shares or without) is still served."""
        if within is None:
            return series
        if device is not None and device.reads_device(name):  # an instance none of whose series is served
            if f'{MIG_INSTANCE_LABEL}=""' in more:  # a whole GPU's device value: the GPU itself
                return series
            mig = list(dict.fromkeys([*extra, *more, f'{MIG_INSTANCE_LABEL}!=""']))
            identity = (*device.identity, *own_labels_of(name))
            gone = _raw(name, device.unscoped, [m for m in mig if m != device.named],
                        _superseded(merge.labels, within, resolution, identity))
            return f"({series} unless on ({_listed(identity)}) {gone})"
        gone = _raw(name, branches, [*extra, *more], _superseded(merge.labels, within, resolution))
        left = _left_idle(name, branches, [*extra, *more], merge.labels, within, resolution, merge.picked)
        return f"({series} unless ({gone} or {left}))"

    def averaged_instances(names: tuple[str, ...], mig: tuple[str, ...]) \
            -> tuple[tuple[tuple[str, ...], tuple[str, ...]] | None, tuple[str, ...] | None]:
        """Panels, of fields a GPU's MIG instances average (one_copy's `blanks`, `late_blanks`): a copy is fresh only
        where each MIG instance with a reading within the look-back has a fresh one, else the late tier reads each at
        its latest reading within it (an instance that stopped reporting, or read the blank at a scrape, dropped out
        of the fresh mean: 0.540 for 0.3395 over the two minutes after an instance's last sample); an instance with no
        reading within it (the blank only, or gone) is left out of the mean in both. (None, None) elsewhere."""
        if within is None or f'{MIG_INSTANCE_LABEL}=""' in extra or not fresh_only(names, mig):  # whole GPUs only
            return None, None
        return instances_within(names, mig, _read_within(within)), ()

    def instances_within(names: tuple[str, ...], mig: tuple[str, ...], held: str) \
            -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Panels' check of a copy's MIG instances per tier (one_copy's `blanks`): each field's instances the look-back
        holds (`held`, a form of `{0}` over `within`) that Prometheus has not marked stale (_unmarked), and the fresh
        series of the instances (fresh_only), which a fresh copy has of each of them."""
        return (tuple(_raw(name, branches, [*extra, *mig], _unmarked(held)) for name in names),
                fresh_only(names, mig))
    if metric not in MIG_UNSUPPORTED and one_copy and not is_counter(metric):
        def read(name: str, more: tuple[str, ...] = (), unfiltered: bool = False) -> str:
            return _field_series(name, catalog, branches, [*extra, *more], window, as_increase, over_time, None,
                                 resolution, device, unfiltered)
        fields = (metric, *also)
        # a share's fields are read from the copy its used chooses (its other fields' blanks counted against it)
        names = share if metric in share and set(also) <= set(share) else (metric,)
        blanks = late_blanks = None
        if how == "avg" and not own_labels and merge.combines():  # panels: an instance behind is read late
            blanks, late_blanks = averaged_instances(fields, (f'{MIG_INSTANCE_LABEL}!=""',))
        if checked and how == "sum" and not own_labels and merge.combines():
            # a copy with an instance reading a blank for any of the fields (or without a series of one) is not read;
            # a GPU without another is left out (panels: the late tier's instances by their readings within `within`)
            mig = (f'{MIG_INSTANCE_LABEL}!=""',)
            blanks = (tuple(read(name, mig, True) for name in fields), tuple(read(name, mig) for name in fields))
            if within is not None and fresh_only(fields):  # panels: checked per tier (one_copy)
                # the instances the look-back holds (a sample within it) and Prometheus has not marked stale
                # (_unmarked), each of which a fresh copy reads fresh: an instance that stopped reporting (no staleness
                # marker) counts at its latest reading while that is within the look-back (the late tier: the instant
                # check took the copy's other instances alone as fresh, 20,040 for 32,079 MiB), and not at all once
                # it is older; one the exporter no longer serves (MIG reconfigured) is no instance of the GPU (its old
                # instances' 32,000 MiB were read beside the new ones' 15,000 for the look-back)
                blanks = instances_within(fields, mig, f"last_over_time({{0}}[{within}])")
                # one field: its instances reading only the blank; several: those with a reading (_incomplete)
                late_blanks = tuple(served(name, mig, _raw(name, branches, [*extra, *mig],
                                                           f"min_over_time({{0}}[{within}]) "
                                                           f"{'>=' if len(fields) == 1 else '<'} {BLANK_FLOOR}"))
                                    for name in fields)
        return _across_own_labels(metric, catalog, merge, merge.one_copy(
            how, tuple(map(read, fields)), own_labels, choose(names), fresh_only(fields), blanks, late_only(fields),
            late_blanks, successive_labels(metric)))
    if metric not in MIG_UNSUPPORTED:
        # a counter's increase from the readings of all its copies, its rate per node its copies name (then the highest)
        # an alert's increase per GPU, and a panel's over the dashboard's range: a GPU named by a UUID of NVIDIA's form
        # one counter whatever its index, its increase then drawn at the one index its naming keeps (two exporters
        # numbering a node's GPUs apart added two GPUs' increases at one index, 3,660 replays for 2,400, and alerted
        # twice for a node they spelled apart: tests/integration/test_exporter_overlap_counter_lines.py; the health
        # dashboard's remapped rows read 21, 21, 31 for 23, 10, 16: test_exporter_overlap_pod_rates_and_bars.py)
        # an alert's rate: its period's increase (summed_deltas: each exporter's copy held, the copies' own deltas where
        # their merged reading goes down, the period reckoned on the copy leading at its start) over the period's
        # seconds, as CloudWatch's rate is its period's deltas over PERIOD(). Read as rate() of the copies sampled at
        # each step (one series per node the copies name), two exporters' readings of a GPU out of scrape order (each
        # reads DCGM on its own clock: the new pod's reading, taken 20 s before its scrape 11 s after the old one's,
        # older than the old pod's latest) went down and up at every scrape, each step down a counter reset: the
        # fleet's 5-minute energy rate read 250 to 1,530 times its energy through a rollout, 680 to 3,219 times with
        # one node (tests/integration/test_counter_rules_readings_out_of_order.py). Cost: the increase's (bytes and
        # Prometheus CPU about 12 and 60 times the rate's at 66 GPUs: docs/performance.md)
        per_second = counter and over_time is not None and not as_increase
        as_increase = as_increase or per_second
        by_uuid = counter and as_increase and not merge.uuid_counter
        copies = merge.physical("{0}", own_labels, not as_increase, by_uuid) if counter else None

        def fields(more: list[str], copies: str | None, unfiltered: bool = False, over=over_time) -> str:
            """The field's series (`also`: the fields' added up, series by series; `unfiltered`: where any of them
            has a series, so that an instance writing one field and no series of another leaves the GPU out)."""
            if also and not unfiltered and device is not None and set(device.total) == {metric, *also} \
                    and device.chooses(metric, LATEST):  # the sum of the copy chosen (_Device._read)
                return _field_series(metric, catalog, branches, [*extra, *more], window, as_increase, over, copies,
                                     resolution, device, summed=True)
            read = [_field_series(name, catalog, branches, [*extra, *more], window, as_increase, over, copies,
                                  resolution, device, unfiltered) for name in (metric, *also)]
            # per pod (a look-back's device readings) each field names the node by the copy its own evaluation chose,
            # of a tie either (_Merge.named_apart): fields of one GPU are joined by its name, not the node's spelling,
            # the sum named as the first field is (`group_left ()`: one-to-one `ignoring` would drop the spellings)
            apart = "" if device is None or device.lookback is None else \
                f" ignoring ({_listed(merge.labels.node_sources)})" + ("" if unfiltered else " group_left ()")
            return read[0] if len(read) == 1 else "(" + f" {'or' if unfiltered else '+'}{apart} ".join(read) + ")"
        if counter and recorded_rate(metric, catalog, as_increase, over_time, extra, also):
            # a panel's rate per GPU from its recording (counted_rule), named by one node in the scope
            rate = counted_rate(metric, catalog, merge, window, resolution)
            if merge.whole:  # one rate per UUID of NVIDIA's form (its copies' indexes one), drawn at one index
                series = merge.fastest(_uuid_one(rate), own_labels, one=True)
            else:
                series = merge.fastest(rate, own_labels)
            series = merge.gpus(named_gpus(series, (metric,), list(merge.naming), window, resolution, merge.labels,
                                           merge.node, merge.whole, by_uuid=merge.whole), own_labels)
        elif counter:  # one rate per GPU (its UUID), named by one node, then the GPUs of a node and index added up
            if merge.uuid_counter:  # a GPU named by its UUID has no index: its instances combined apart from others
                own_labels = (*own_labels, GPU_LABEL)
            if periods is None:
                series = fields([], copies)
            else:  # each period's marked (PERIOD_LABEL), kept apart by every grouping after
                series = "(" + " or ".join(
                    f'label_replace({fields([], copies, over=(*over_time[:2], one, *over_time[3:]))}, '
                    f'"{PERIOD_LABEL}", "{k}", "", "")' for k, one in enumerate(periods)) + ")"
                own_labels = (*own_labels, PERIOD_LABEL)
            if per_second:
                series = f"({_in_rate_unit(series, catalog.get(metric))} / {_seconds(window)})"
            series = series if as_increase else merge.fastest(series, own_labels)
            series = merge.gpus(merge.named(series, metric, _named_span(window, as_increase, over_time), resolution,
                                            by_uuid), own_labels)
        else:
            series = fields([], copies)
        value = _across_own_labels(metric, catalog, merge, merge(how, series, own_labels))
        if checked and how == "sum" and not own_labels and merge.combines() and not catalog.get(metric).is_counter:
            def on_instances(unfiltered: bool, named: tuple[str, ...] = ()) -> str:  # the field's MIG instances,
                # with or without their blanks
                return merge.copies(fields([f'{MIG_INSTANCE_LABEL}!=""'], None, unfiltered), named)
            if device is None or device.lookback is None:
                value = (f"({value} unless on ({merge.grouping()}) ({on_instances(True)} unless "
                         f"{on_instances(False)}))")
            else:  # per pod: told apart by the GPU's name, not the node its copy names (_Merge.named_apart)
                named = (GPU_LABEL,)
                mig = [*extra, f'{MIG_INSTANCE_LABEL}!=""']

                def valued(name: str) -> str:  # 1 where the field's series reads a value, 0 where DCGM's blank
                    read = _field_series(name, catalog, branches, mig, window, as_increase, over_time, None,
                                         resolution, device, True)
                    return merge.copies(f"({read}) < bool {BLANK_FLOOR}", named)
                if also and not device.chooses(metric, LATEST):  # each field read once (summed: the copy's sum)
                    blank = _blank_instances(tuple(map(valued, (metric, *also))), merge.named_apart(True))
                else:
                    blank = (f"({on_instances(True, named)} unless on ({merge.named_apart(True)}) "
                             f"{on_instances(False, named)})")
                # the GPUs a pod is named on at one index read once (a pod runs on one node: _Merge.per_pod), the
                # highest reading, as its other panels read them: a GPU named by its UUID where its series carry one
                # and by its node where none does is two names for the look-back after a rollout dropping or adding
                # the UUID label, and adding them read the pod's memory twice for one scrape interval (20,010 MiB for
                # 10,010)
                value = (f"max by ({merge.grouping()}) ({merge(how, series, named)} unless on "
                         f"({merge.named_apart(False)}) {blank})")
        return value
    own = _field_series(metric, catalog, branches, [*extra, f'{MIG_INSTANCE_LABEL}=""'], window, as_increase,
                        over_time, resolution=resolution, device=device)
    substitute = catalog.mig_substitute(metric)

    def merged(name: str, how: str, series: str, more: str, scale: str = "") -> str:
        if one_copy and not is_counter(name):
            blanks, late_blanks = averaged_instances((name,), (more,)) \
                if how == "avg" and more != f'{MIG_INSTANCE_LABEL}=""' and not own_labels_of(name) \
                and merge.combines() else (None, None)
            return merge.one_copy(how, (series,), own_labels_of(name), choose((name,), (more,)),
                                  tuple(f"{fresh}{scale}" for fresh in fresh_only((name,), (more,))),
                                  late=late_only((name,), (more,), scale), blanks=blanks, late_blanks=late_blanks,
                                  successive=successive_labels(name))
        return merge(how, series, own_labels_of(name))
    if substitute is None or kind == "whole":
        return merged(metric, how, own, f'{MIG_INSTANCE_LABEL}=""')
    stand_in, factor = substitute
    mig = _field_series(stand_in, catalog, branches, [*extra, f'{MIG_INSTANCE_LABEL}!=""'], window, as_increase,
                        over_time, resolution=resolution, device=device)
    on_mig = merged(stand_in, catalog.get(stand_in).per_gpu_aggregation, f'{mig} * {factor:g}',
                    f'{MIG_INSTANCE_LABEL}!=""', f" * {factor:g}")
    whole = merged(metric, how, own, f'{MIG_INSTANCE_LABEL}=""')
    return on_mig if kind == "mig" else f"({on_mig} or {whole})"


FIELD_MARK = "gpudash_field"  # _blank_instances: which field a series of a GPU instance is a reading of


def _blank_instances(readings: tuple[str, ...], instance: str) -> str:
    """The GPU instances (`instance`: the labels naming one, and its outer group) with a series of any of the fields
    whose `readings` (each a field's series of the instances, 1 where it reads a value, 0 where DCGM's blank) lack a
    value of one of them: one read of each field, where `U unless F` (the instances with a series of any field, less
    those with a value of every field added up) read each twice over. The instance has a value of every field where
    each field has a series reading 1 (the sum of the fields' largest reads their count)."""
    marked = " or ".join(f'label_replace({read}, "{FIELD_MARK}", "{k}", "", "")' for k, read in enumerate(readings))
    return f"(sum by ({instance}) (max by ({instance}, {FIELD_MARK}) ({marked})) < {len(readings)})"


# What a value of fields a MIG GPU's instances add up (_per_gpu) reads where one of them is blank.
BLANK_INSTANCE_NOTE = ("A GPU one of whose instances reads DCGM's blank for any of the fields has no value: the rest "
                       "of its instances are not the GPU.")


def pooled_note(part: str, whole: tuple[str, ...], query: Query) -> str:
    """What a pod's (or a namespace's) share of memory (pooled) reads."""
    group, holds = ("pod", "it holds") if "pod" in group_keys(query.by) else ("namespace", "its pods hold")
    return (f"Per {group}: the sum of {part} of the GPUs and MIG instances {holds} over the sum of their "
            f"{' + '.join(whole)}, the share of the memory {holds} (not the mean of its GPUs' shares). A GPU that reads "
            f"DCGM's blank for any of the fields (on a GPU split into MIG instances: one of its instances) is left out "
            f"of both sums.")


def over_note(query: Query, catalog: Catalog) -> str | None:
    """What a panel of a field over a total of fields (`over`) reads on a MIG GPU (_per_gpu) or per pod (pooled), or
    None."""
    if not query.over or query.raw_promql or query.aggregation == "count" or "mig_instance" in group_keys(query.by):
        return None
    if pooled(query, catalog):
        return pooled_note(query.metric, query.over, query)
    return (f"On a GPU split into MIG instances, {', '.join(dict.fromkeys((query.metric, *query.over)))} are each "
            f"combined over its instances (memory added up). {BLANK_INSTANCE_NOTE}")


def memory_share_note(query: Query, catalog: Catalog) -> str | None:
    """What a panel of a share of memory (MIG_MEMORY_SHARES) reads on a MIG GPU (_memory_share), or None."""
    if query.metric not in MIG_MEMORY_SHARES or query.raw_promql or query.aggregation == "count" \
            or "mig_instance" in group_keys(query.by):
        return None
    used, free = MIG_MEMORY_SHARES[query.metric]
    if pooled(query, catalog):
        return pooled_note(used, (used, free), query)
    if used in catalog and free in catalog:
        return (f"On a GPU split into MIG instances: the sum of its instances' {used} over the sum of their {used} + "
                f"{free}, the share of the memory they hold (not the mean of their shares). {BLANK_INSTANCE_NOTE}")
    return (f"GPUs split into MIG instances are left out: their share is the sum of their instances' {used} over "
            f"their {used} + {free}, which the counters CSV does not collect.")


def _memory_share(metric: str, catalog: Catalog, per_gpu) -> str:
    """A share of memory (MIG_MEMORY_SHARES) per GPU: a whole GPU's own reading; a MIG GPU's, the sum of its instances'
    used memory over the sum of the memory they hold (used + free), not the mean of their shares (none while one of
    them reads a blank: _per_gpu). Without both fields in the CSV, MIG GPUs are left out (docs/labels-and-values.md
    says so)."""
    whole = per_gpu(metric, True, (f'{MIG_INSTANCE_LABEL}=""',))
    used, free = MIG_MEMORY_SHARES[metric]
    if used not in catalog or free not in catalog:
        return whole
    mig = (f'{MIG_INSTANCE_LABEL}!=""',)
    held = per_gpu(used, True, mig)
    total = _total((used, free), catalog, lambda name, also: per_gpu(name, True, mig, also))
    return f"({held} / (({total}) > 0) or {whole})"  # 0 / 0: none


def pooled(query: Query, catalog: Catalog) -> tuple[tuple[str, bool], tuple[tuple[str, bool], ...]] | None:
    """A per-pod (or per-namespace) mean, not per GPU, of a share of memory: a field of MIG_MEMORY_SHARES, or a field
    over a total of fields that a GPU's instances add up (`over`, framebuffer used over used + free). Its (field,
    whole) and those of its total, to pool over the GPUs and instances the pod (the namespace's pods) holds
    (_pooled), or None. A namespace's mean of its GPUs' shares read 0.5 for a full 3g.40gb on one GPU and an empty
    1g.10gb on another, 0.803 for both on one GPU, as a pod's did."""
    keys = group_keys(query.by)
    if query.aggregation != "avg" or query.raw_promql or not {"pod", "namespace"} & set(keys) or "gpu" in keys \
            or "mig_instance" in keys:
        return None
    if query.metric in MIG_MEMORY_SHARES and not query.over:
        used, free = MIG_MEMORY_SHARES[query.metric]
        return ((used, True), ((used, True), (free, True))) if used in catalog and free in catalog else None
    fields = (query.metric, *query.over)
    if query.over and all(name in catalog and catalog.get(name).per_gpu_aggregation == "sum" for name in fields):
        return (query.metric, query.whole_gpu), tuple((name, True) for name in query.over)
    return None


def _pooled(part: tuple[str, bool], whole: tuple[tuple[str, bool], ...], catalog: Catalog, per_gpu,
            grouping: str, spellings: tuple[str, ...] = (), named: tuple[tuple[str, ...], str] | None = None) -> str:
    """A pod's share of memory (pooled): the used memory of every GPU and MIG instance it holds over the memory they
    hold, so its instances weigh by their memory wherever they are (a full 3g.40gb on one GPU and an empty 1g.10gb on
    another: 0.803; the mean of the two GPUs' shares read 0.5, while both on one GPU read 0.803). A GPU without a
    reading of every field (a blank; on MIG, one of its instances': _per_gpu) is left out of both sums, as it is left
    out of a pod's mean. `spellings`: the node labels a GPU's reading carries from the copy chosen, which the used
    memory and the total may each take from another exporter's copy where two copies tie (Prometheus orders series
    anew at each range query): the GPU is kept by its other labels, not dropped (a pod left the panel at some calls)."""
    total = " + ".join(per_gpu(*key) for key in whole) if not all(whole_gpu for _, whole_gpu in whole) else \
        _total(tuple(name for name, _ in whole), catalog, lambda name, also: per_gpu(name, True, also=also))
    # the field's own check of blank MIG instances is left out where the total holds the field: the total's covers it
    part_gpu = per_gpu(*part, checked=part[0] not in {name for name, _ in whole})
    if named is not None:
        return _pooled_once(part_gpu, total, grouping, *named)
    kept = f" ignoring ({_listed(spellings)})" if spellings else ""
    return f"(sum by ({grouping}) ({part_gpu} and{kept} ({total})) / (sum by ({grouping}) ({total}) > 0))"


SUM_LABEL = "gpudash_sum"  # _pooled_once: which of a pod's two sums (used + total, total) a series adds to, summed away


def _pooled_once(part: str, total: str, grouping: str, gpu: tuple[str, ...], named: str) -> str:
    """_pooled's share with its total read once (PromQL has no shared subexpression: the total in the numerator's
    filter and again as the denominator cost half of the panel, 118 s of Prometheus CPU at 500 GPUs over 6 h). Per GPU
    of a pod (`gpu`: the labels a GPU's line of a pod is told apart by, its node spellings left out as _pooled's
    filter leaves them), two series from `named` (every GPU a pod was named on within the look-back, a cheap read of
    the same series the panel's pods are named by): SUM_LABEL "used" reading the GPU's used memory plus its total,
    "total" its total, each kept only where the GPU has both (one-to-one matches); summed per pod they are U + T and
    T, and one aggregation over the two gives their ratio as exp(ln(U + T) - ln(T)), less 1: U / T within 1e-14 of
    the division. A GPU without a total (a blank) is left out of both sums as before; a pod of no memory (T 0) has no
    value (NaN or +Inf, dropped)."""
    on = f"on ({_listed(gpu)})"
    pods = f"group by ({_listed(gpu)}) ({named})"
    marked = (f'(label_replace({pods}, "{SUM_LABEL}", "used", "", "") or '
              f'label_replace({pods} * 0, "{SUM_LABEL}", "total", "", ""))')
    per_gpu = (f"({marked} * {on} group_left () sum by ({_listed(gpu)}) ({part}) + {on} group_left () "
               f"sum by ({_listed(gpu)}) ({total}))")
    signs = (f'(label_replace(vector(1), "{SUM_LABEL}", "used", "", "") or '
             f'label_replace(vector(-1), "{SUM_LABEL}", "total", "", ""))')
    logs = f"ln(sum by ({grouping}, {SUM_LABEL}) {per_gpu}) * on ({SUM_LABEL}) group_left () {signs}"
    return f"(exp(sum by ({grouping}) ({logs})) - 1 < Inf)"


def _summable(name: str, catalog: Catalog) -> bool:
    """A gauge a GPU's MIG instances add up, of one series per instance (memory): _total adds such fields per copy."""
    return (name in catalog and not catalog.get(name).is_counter and name not in MIG_UNSUPPORTED
            and catalog.get(name).per_gpu_aggregation == "sum" and not catalog.get(name).own_labels)


def _total(fields: tuple[str, ...], catalog: Catalog, per_gpu) -> str:
    """The total of `fields` per GPU (`per_gpu(field, also)`): gauges a GPU's instances add up (memory) added series by
    series before the copies of a reading are merged (_per_gpu's `also`: each copy's total is the memory it holds, so
    the total is one exporter's), else each merged on its own and added."""
    if len(fields) > 1 and all(_summable(name, catalog) for name in fields):
        return per_gpu(fields[0], fields[1:])
    return " + ".join(per_gpu(name, ()) for name in fields)


def _across_own_labels(metric: str, catalog: Catalog, merge: _Merge, series: str) -> str:
    """One value per GPU from the series a field's own labels split it into (the counts of all XID
    codes add up), unless the query groups by those labels. A field whose value is its latest series' ("latest": the
    XID code) is one series per GPU already where a panel reads it (one_copy's `successive`); a rule's step reads the
    series with a sample within the step, one code of an exporter's copy: their max."""
    field = catalog.get(metric) if metric in catalog else None
    labels = [label for label in (field.own_labels if field else ()) if label not in merge.kept]
    if not labels:
        return series
    how = "max" if field.across_own_labels == "latest" else field.across_own_labels
    return f"{how} without ({', '.join(labels)}) ({series})"


GAUGE_OVER_TIME = {"max": "max", "min": "min"}  # any other aggregation: the mean over the window


_ANSWERS = BuildMemo()  # expression()'s answers, per catalog (build_memo.py)


def expression(query: Query, labels: Labels, catalog: Catalog, scope: Scope = Scope(),
               rate_window: str = "$__rate_interval", increase_window: str = DASHBOARD_RANGE,
               gauge_window: str | None = None, per_instance: bool = False, kind: str | None = None,
               resolution: str | None = None, offset: str | Periods | None = None, named_within: str | None = None,
               hold: str | None = None, reach: int = 0, regions: Regions = (), against: float | None = None,
               naming: list | None = None) -> str:
    """The PromQL for one neutral query (`_expression`), worked out once per query, labels, catalog and arguments.
    `naming` (a list; an alert's statistic): a rule's gauge per pod and GPU is left keyed by the pod's GPU
    (POD_GPU_LABEL) and its naming appended to the list (`naming[-1](expr, how)`: `expr`, keyed so, named by the GPU's
    index and aggregated by `how` per the query's outer labels), so that a rule of several periods names each GPU
    once, not once a period (pod_indexes); nothing is appended where the query is not read so."""
    if naming is not None:
        return _expression(query, labels, catalog, scope, rate_window, increase_window, gauge_window, per_instance,
                           kind, resolution, offset, named_within, hold, reach, regions, against, naming)
    answers = _ANSWERS.table(catalog)
    key = (query, labels, scope, rate_window, increase_window, gauge_window, per_instance, kind, resolution, offset,
           named_within, hold, reach, regions, against)
    answer = answers.get(key)
    if answer is None:
        answer = answers[key] = _expression(query, labels, catalog, scope, rate_window, increase_window, gauge_window,
                                             per_instance, kind, resolution, offset, named_within, hold, reach,
                                             regions, against)
    return answer


# (Region, the cluster label's values of its clusters), one per Region: a fleet value judged per Region (by_region)
Regions = tuple[tuple[str, tuple[str, ...]], ...]
REGION_LABEL = "region"  # the label a value judged per Region carries its Region in


def regions_scope(regions: Regions) -> tuple[tuple[str, str], ...]:
    """The Scope regexes of the series a value judged per Region reads: those of the clusters `regions` name (a
    cluster of no known Region belongs to no Region's value)."""
    return (("cluster", "|".join(regex_literal(value) for _, values in regions for value in values)),)


def settings_clusters(settings: Settings) -> Scope:
    """The series a rule reads on a Prometheus holding several clusters (clusters[].prometheus_label): those of the
    settings' clusters, so a cluster the settings do not name (another team's on the same Prometheus) never counts or
    fires. A Prometheus per cluster: every series (Scope())."""
    if not settings.shared_prometheus:
        return Scope()
    scope = settings.memo.get("settings_clusters")  # asked per alarm and period: the clusters' regex written once
    if scope is None:
        scope = settings.memo["settings_clusters"] = Scope(regions_scope(
            (("", tuple(c.prometheus_label for c in settings.clusters)),)))
    return scope


def by_region(expr: str, cluster: str, regions: Regions) -> str:
    """`expr` (series that carry the cluster label `cluster`) with the Region of each series' cluster written into
    REGION_LABEL (label_replace matches the whole value: one anchored alternation of a Region's clusters)."""
    for region, values in regions:
        expr = (f"label_replace({expr}, {quoted(REGION_LABEL)}, {quoted(region)}, {quoted(cluster)}, "
                f"{quoted('|'.join(regex_literal(value) for value in values))})")
    return expr


def _expression(query: Query, labels: Labels, catalog: Catalog, scope: Scope, rate_window: str, increase_window: str,
                gauge_window: str | None, per_instance: bool, kind: str | None, resolution: str | None,
                offset: str | None, named_within: str | None, hold: str | None = None, reach: int = 0,
                regions: Regions = (), against: float | None = None, naming: list | None = None) -> str:
    """The PromQL for one neutral query.

    `scope` restricts the series (dashboard variables). Per-pod queries also require
    the pod label, so GPUs that no pod holds do not show up as an empty pod.
    `gauge_window` (alerts) takes each gauge over that window: the max or min for a max or
    min query, the mean otherwise - what CloudWatch computes from the period's observations. With
    `resolution`, of the GPU's readings (gauge_readings): merged and aggregated at each step, then the window.
    `per_instance` (alerts), with the MIG branch (`kind` "mig"), judges a pod on the MIG instances it holds, each
    its own series, as the rule's MIG alarm reads the per-pod-and-instance set: per pod and GPU each instance of the
    pod's GPU on its own (its GPU_I_ID and profile kept: a busy instance does not hide an idle one). Otherwise a
    pod's field of the instance is read per GPU, the instances it holds there combined (memory added, activity
    averaged), as the panels read it (tests/support/two_instances.py). Whole GPUs, and pods sharing one, are as
    without it.
    `kind` ("whole" or "mig", with `kinds_apart`) takes only whole GPUs' own readings or only MIG
    instances' stand-in for a field MIG does not report.
    `offset` (alerts, with `gauge_window`) ends every window that long before the instant: an earlier period.
    `resolution` (the scrape interval) lets a counter merged over its pods' copies merge them before
    its rate or increase (a subquery at that step, see _field_series).
    With `labels.copies` (exporter.virtual_gpus), a field the exporter splits per process is read as
    `_Device` says: the device's value per GPU, each pod's share per pod (the device's value where
    `query.whole_gpu` asks, and in the total a per-pod `over` divides by).
    `named_within` (panels, label_lookback()): a per-pod gauge (or count) shows each pod a scrape within that window
    named on a GPU, with the GPU's latest reading (_Device.lookback), not only the pod the latest scrape named.
    `regions` (a fleet alert on a Prometheus holding clusters of several Regions): a value per Region of the clusters
    it names, as CloudWatch's alarm per Region judges them: only their series read, each GPU's value (which keeps
    its cluster) given its cluster's Region (by_region), the outer grouping by REGION_LABEL first.
    `against` (an alert's mean per pod over one period, compared with that level): in place of the mean, a value whose
    sign is that of the mean less the level, exactly, from one read of the GPUs' readings (mean_sign); NotCombined
    where the query is not read so.
    """
    if regions:
        scope = Scope((*scope.regexes, *regions_scope(regions)))
    if query.raw_promql:
        if isinstance(offset, tuple):
            raise NotCombined(query.metric)
        return query.raw_promql
    keys = group_keys(query.by)
    if "model" in keys and gauge_window is None and resolution is not None and not pooled(query, catalog):
        each = replace(query, by=_model_slot(keys))  # each GPU's value, as a panel grouped by node and GPU reads it
        inner = _expression(each, labels, catalog, scope, rate_window, increase_window, gauge_window, per_instance,
                            kind, resolution, offset, named_within, hold, reach, regions)
        lookback = named_within or label_lookback(_seconds(resolution))
        span = increase_window if query.as_increase else rate_window if is_counter_field(query.metric, catalog) \
            else lookback
        return modelled(inner, query, labels, catalog, scope, span, resolution, lookback)
    if (named_within and resolution and gauge_window is None and "pod" in keys and set(keys) <= POD_KEYS
            and not query.as_increase and not query.over and query.aggregation != "count"
            and not reads_gauges(query, catalog)):
        return _named_rates(query, labels, catalog, scope, rate_window, resolution, keys)
    # a line per pod, namespace or container: the GPUs a pod holds (GPUs no pod holds made a line "Namespace " or a
    # container without a name of their own)
    extra = [pod_named(labels)] if set(WORKLOAD_KEYS) & set(keys) else []
    if "mig_instance" in keys:
        extra.append(f'{MIG_INSTANCE_LABEL}!=""')
    extra += [f'{key}!=""' for key in keys if key in FIELD_LABEL_KEYS]  # lines name a code: series with one
    branches = scope.matchers(labels)
    window = increase_window if query.as_increase else rate_window
    count = query.aggregation == "count"
    outer = [label_name(key, labels) for key in keys]
    if "mig_instance" in keys:  # an instance is shown with its profile
        outer.insert(outer.index(MIG_INSTANCE_LABEL) + 1, MIG_PROFILE_LABEL)
    # The series of one GPU instance differ by labels gpu_identity does not list (pods, their UIDs and labels,
    # the exporter's instance and pod): merging every label but the GPU's identity, its MIG instance, what the
    # outer grouping keeps and a field's own labels (an XID code) leaves one series per GPU instance, then per
    # GPU (and per GPU and pod). A group's use of a GPU is read once per GPU, as the panels read it: a field of the
    # instance (its memory, its engine activity) combined over the instances the group holds on the GPU (memory
    # added, activity averaged: a pod on two instances of an A100 using 1,000 and 3,000 MiB uses 4,000 MiB of it), a
    # count counting GPUs, and a field of the whole device (power, temperature, clocks), which the exporter repeats
    # on each instance, read once. Only alerts on MIG instances alone (`kind` "mig", kinds_apart, whose CloudWatch
    # twin reads each instance) and a pod's least free memory (per_device_headroom: an allocation lives in one
    # instance) judge each MIG instance a pod holds on its own (`apart`).
    apart = per_instance and (kind == "mig" or per_device_headroom(query)) \
        and "pod" in keys and not count and _instance_value(query.metric, catalog, kind)
    if apart and kind == "mig" and "gpu" in keys:  # each MIG instance of a pod's GPU judged on its own
        outer += [name for name in INSTANCE_IDENTITY if name not in outer]
    # a rule's gauge per pod and GPU: the period's steps key a pod's GPU by POD_GPU_LABEL (its UUID of NVIDIA's form,
    # else its index: _pod_gpu), per cluster, and the period's statistic is named by one index at the evaluation,
    # outside the period's subquery (pod_indexes); `indexed`: the outer grouping then, the index among it
    # A panel's (a user's: Query(..., ("pod", "gpu")), its legend naming the index) alike: each step's value keyed by
    # the pod's GPU (with pod_gpu_marks, as the by-pod panels), then named by its index at that step
    indexed, marks = None, None
    if (resolution and named_within and "gpu" in keys and labels.pod in outer and labels.node not in outer
            and not count and not query.over and query.metric not in MIG_MEMORY_SHARES
            and named_pods_looked_back(query, catalog) and not isinstance(offset, tuple) and not regions
            and (gauge_window is not None or not pooled(query, catalog))):
        indexed = list(outer)
        outer = [labels.cluster, *(POD_GPU_LABEL if name == "gpu" else name for name in outer
                                   if name != labels.cluster)]
        period = (_seconds(gauge_window) + (_seconds(offset) if offset else 0) if gauge_window else 0) \
            + _seconds(named_within) + _seconds(resolution)
        if gauge_window is None:
            marks = pod_gpu_marks(_pod_fields(query, catalog), labels, named_within)
        indexes = pod_indexes(_named_fields(query.metric, catalog), scope.matchers(labels), extra, labels,
                              _duration_text(max(PREVIOUS_WITHIN, period)), marks)

        def indexes_named(statistic: str, how: str, grouping: list[str]) -> str:
            """A period's `statistic` per pod's GPU (POD_GPU_LABEL) named by its index (pod_indexes), then `how` (sum,
            max or min) by `grouping`: two GPUs of a pod named at one index are one series (their sums and counts added
            up, a mean of both), not an error."""
            pod = _listed((labels.cluster, labels.namespace, labels.pod, POD_GPU_LABEL))
            return f"{how} by ({_listed(grouping)}) ({statistic} + on ({pod}) group_left (gpu) {indexes})"
    marked = against is not None
    if marked:  # a mean per pod's GPU over one period, its rows read at each step of the window (_Device._stepped)
        if not (query.aggregation == "avg" and gauge_window is not None and resolution and "gpu" in keys
                and named_pods_looked_back(query, catalog) and not query.over and not regions
                and query.metric not in MIG_MEMORY_SHARES and not isinstance(offset, tuple)
                and _seconds(gauge_window) // _seconds(resolution) <= mean_sign.MAX_STEPS
                and mean_sign.exact_against(against)):
            raise NotCombined(query.metric)
        unmarked = ", ".join(outer)
        outer.append(mean_sign.STAT_LABEL)  # kept by every grouping after the pods' rows are marked
    node = next((regex for key, regex in scope.regexes if key == "node"), None)
    # a value of GPUs, not of pods (per pod: _Device's look-back, _named_rates), in a panel with the node variable:
    # the node picks which GPUs show (those its name is, gpus_named), never which copy of a GPU is read
    gauges = reads_gauges(query, catalog)
    of_gpus = (node is not None and gauge_window is None and resolution is not None
               and set(keys) <= {"cluster", "node", "gpu", "mig_instance"})
    # a gauge per GPU: its value per GPU (GPU_LABEL) whichever copy it is read from, its node named apart (named_gpus);
    # so too a panel's gauge over GPUs (a fleet's or node's mean, total or maximum) and a count of GPUs with the node
    # variable, the GPUs then kept by their names (a counter's rate or increase: _Merge.named)
    named = (set(keys) <= {"cluster", "node", "gpu", "mig_instance"} and resolution is not None
             and (gauges and not count and {"node", "gpu"} <= set(keys) or of_gpus and (gauges or count)))
    # a panel's value of whole GPUs (no MIG instance apart) with the pod or namespace variable: the GPUs the picked pods
    # hold (held_gpus), each read as with every pod, whole
    held, picked = None, ()
    if named and gauge_window is None and named_within and "mig_instance" not in keys \
            and any(key in ("pod", "namespace") for key, _ in scope.regexes):
        held = held_gpus(_named_fields(query.metric, catalog), scope, labels, named_within)
        picked = scope.picked()
        scope = Scope(tuple((k, r) for k, r in scope.regexes if k not in ("pod", "namespace")))
        branches = scope.matchers(labels)
    anywhere = Scope(tuple((k, r) for k, r in scope.regexes if k != "node")).matchers(labels)  # any node spelling
    # the node variable's alone (no workload's): the copies placing a GPU on the node (on_node)
    placing = Scope(tuple((k, r) for k, r in scope.regexes if k not in ("pod", "namespace"))).matchers(labels)
    if (named or of_gpus) and node is not None:  # the GPU's copies under any node spelling: the node's GPUs are those
        # a copy spelled with the node names (named_gpus; a counter's, _Merge.named), the value read from the copies
        # All nodes reads (an old exporter's copy, its own pod's name in Hostname, read 60 % where the node-spelled
        # copies read 50 %; a counter's increase read the new exporter's copy alone, begun later, 1 for 2 rows)
        branches = anywhere
    workload = scope.workload(labels)
    # a rule's gauge over the fleet: each GPU under the node its newest copy within the rule's span names (_slotted)
    newest = None
    if gauge_window is not None and resolution and set(keys) <= {"cluster"} and not named:
        # the span the period's readings are in: its window and the step a reading looks back, ending at its offset
        pinned = offset if isinstance(offset, str) else None
        shifts = offset if isinstance(offset, tuple) else ()
        span = _seconds(gauge_window) + max((_seconds(shift) for shift in shifts if shift), default=0) \
            + _seconds(resolution)
        newest = newest_nodes(_named_fields(query.metric, catalog), branches, labels, _duration_text(span),
                              hold or resolution, pinned, _duration_text(span - _seconds(resolution)))
    # a rule's counter over the fleet: a GPU named by a UUID of NVIDIA's form one counter whatever index its copies
    # give it (_Merge.physical, unindexed)
    uuid_counter = (gauge_window is not None and bool(resolution) and set(keys) <= {"cluster"} and not named
                    and not count and query.metric in catalog and catalog.get(query.metric).is_counter)
    pod_gpu = bool(named_within) and gauge_window is None and "gpu" not in keys \
        and named_pods_looked_back(query, catalog) or indexed is not None
    merge = _Merge(labels, () if apart else INSTANCE_IDENTITY, tuple(outer), scope.naming(labels), named, node,
                   workload, gauge_window is None, picked, scope.picked(), newest_node=newest,
                   uuid_counter=uuid_counter, pod_gpu=pod_gpu,
                   pod_marks=marks if indexed is not None else
                   pod_gpu_marks(_pod_fields(query, catalog), labels, named_within) if pod_gpu else None)
    periods = offset if isinstance(offset, tuple) else None  # several periods at once (Periods)
    # an alert's counter per GPU: each period's increase read apart, the GPUs named once (_per_gpu's `periods`)
    counted_periods = None
    if periods is not None:
        if not (gauge_window is not None and resolution and not count and not regions):
            raise NotCombined(query.metric)
        if not (named and gauges):
            if gauges or named or query.over or query.metric in MIG_MEMORY_SHARES:
                raise NotCombined(query.metric)
            counted_periods = periods
            outer.append(PERIOD_LABEL)  # kept by the outer grouping, after the GPUs' values
        offset = None  # a step's reading is the same text in every period: the windows alone are shifted

    # a gauge (or count) per pod, in panels and rules alike: the pods a scrape within the lookback named
    # (_Device.lookback; a rule's at each step of its window, _Device._stepped)
    lookback = named_within if named_pods_looked_back(query, catalog) else None
    # the copies a GPU's reading is chosen from: any pod's and namespace's, and per pod (`lookback`) any node
    # spelling's too: the node variable selects the GPUs (those a copy spelled with the node named the pod on,
    # _Device._named_on), not the copy read, so an old exporter's copy (its own pod's name in Hostname) is chosen with
    # a node selected as with All nodes (the node view read the node-spelled copy's 50 % where All read 60 %)
    apart_from = ("pod", "namespace", *(("node",) if lookback or of_gpus else ()))
    unscoped = Scope(tuple((k, r) for k, r in scope.regexes if k not in apart_from)).matchers(labels)

    def per_gpu(metric: str, whole: bool, only: tuple[str, ...] = (), also: tuple[str, ...] = (),
                checked: bool = True) -> str:
        # (a 6th: the labels a copy's series shares with another exporter's copy of it, _one_copy_a_moment)
        over_time = None if gauge_window is None else (GAUGE_OVER_TIME.get(query.aggregation, "avg"), gauge_window,
                                                       offset, hold, reach, _copied_labels(labels, metric, catalog))
        # a GPU instance's copy (_Merge.one_copy): the device's value is one exporter's, named by the GPU's UUID
        identity = (*gpu_identity(labels), *INSTANCE_IDENTITY, labels.uuid, *COPY_LABELS)
        device = _Device(branches, unscoped, identity, labels.pod, bool(set(WORKLOAD_KEYS) & set(keys)),
                         whole, bool(labels.copies), lookback, labels, resolution, tuple(outer), share,
                         gauge_window is not None, query.aggregation in ("sum", "avg"),
                         *((anywhere, placing) if lookback and node is not None else ()), marked=marked,
                         uuid_fresh=merge.pod_keyed()) \
            if labels.copies or lookback else None
        return _per_gpu(metric, catalog, branches, [*extra, *only], merge, window, query.as_increase, count,
                        over_time, kind, resolution, device, also, checked, share,
                        named_within if gauge_window is None else None, counted_periods)

    combined = not count and merge.combines()  # a GPU's instances make its value
    pool = pooled(query, catalog) if combined and gauge_window is None else None  # panels (alerts: each instance)
    # a share's fields, read from the copy its used chooses (chosen_copy)
    share = tuple(name for name, _ in pool[1]) if pool else MIG_MEMORY_SHARES.get(query.metric, query.over)
    share = share if len(share) > 1 and all(_summable(name, catalog) for name in share) else ()
    if pool:
        spellings = tuple(name for name in labels.node_sources if name not in outer) if lookback else ()
        # the pods' GPUs the share is read per (_pooled_once): any series of the used field naming a pod in the look-back
        # per pod, a GPU by its UUID of NVIDIA's form or its index (_pod_gpu), as the used memory and the total are
        keyed = merge.pod_keyed() and lookback
        gpu = tuple(dict.fromkeys(name for name in (labels.cluster, POD_GPU_LABEL if keyed else "gpu", *outer)
                                  if name not in spellings))
        named = _raw(pool[0][0], [list(workload)], [pod_named(labels)], f"present_over_time({{}}[{lookback}])")
        named = (gpu, _pod_gpu(identified(named, labels), labels, merge.pod_marks) if keyed else named) \
            if lookback else None
        return _pooled(*pool, catalog, per_gpu, ", ".join(outer), spellings, named)
    value = per_gpu(query.metric, query.whole_gpu)
    if query.metric in MIG_MEMORY_SHARES and combined:
        value = _memory_share(query.metric, catalog, per_gpu)
    if query.over:
        total = _total(query.over, catalog, lambda name, also: per_gpu(name, True, also=also))
        value = f"{value} / (({total}) > 0)" if len(query.over) > 1 else f"{value} / ({total} > 0)"  # 0 / 0: none
    grouping = ", ".join(outer)
    if regions:  # each GPU's value keeps its cluster (gpu_identity): its Region's, then grouped per Region
        if named:
            raise ValueError("a value per Region is of an alert grouped by no cluster's object")
        value = by_region(value, labels.cluster, regions)
        grouping = ", ".join((REGION_LABEL, *outer))
    alert = gauge_window is not None and resolution and not count and reads_gauges(query, catalog)
    if marked:
        if named or not alert or mean_sign.STAT_LABEL not in value:  # every row read from the marked pods
            raise NotCombined(query.metric)
        step = f"sum by ({grouping}) ({mean_sign.counted_too(value)})"
        summed = f"sum_over_time(({step})[{gauge_window}:{resolution}]{_offset(offset)})"
        if indexed is not None and naming is not None:  # the caller names each pod's GPU once (`naming`)
            naming.append(lambda statistic, how: indexes_named(statistic, how, indexed))
        elif indexed is not None:
            summed = indexes_named(summed, "sum", [*indexed, mean_sign.STAT_LABEL])
            unmarked = ", ".join(indexed)
        return mean_sign.signed(summed, unmarked, against)
    if named:  # per GPU (its UUID, GPU_LABEL), named (named_gpus), then the outer grouping: a panel at each step, an
        # alert once per evaluation, after its periods' statistics (gauge_readings' `named`)
        inner = _listed((labels.cluster, GPU_LABEL, "gpu", *(name for name in outer if name != labels.node)))
        fields = _named_fields(query.metric, catalog)
        # a panel of MIG instances names the GPUs that have one (a gauge's lines read the look-back alone)
        held_by = tuple(extra) if "mig_instance" in keys and not is_counter_field(query.metric, catalog) else ()

        def gpus(series: str, how: str, span: str | None) -> str:
            named_ = named_gpus(series, fields, list(scope.naming(labels)), span, resolution, labels, node,
                                span is None, held_by)
            if span is None and not {"node", "gpu", "mig_instance"} & set(keys):  # a panel's value over the GPUs
                named_ = one_per_uuid(named_, labels, fields, list(scope.naming(labels)),
                                      named_within or label_lookback(_seconds(resolution)))
            return f"{how} by ({grouping}{f', {PERIOD_LABEL}' if periods else ''}) ({named_})"

        def aggregated(how: str) -> str:
            per_gpu_ = brief_aggregation(how, inner, value)
            if held is not None:
                per_gpu_ = f"({per_gpu_} and on ({_listed((labels.cluster, GPU_LABEL, 'gpu'))}) {held})"
            return per_gpu_ if alert else gpus(per_gpu_, how, None)
    else:
        def aggregated(how: str) -> str:
            return f"{how} by ({grouping}) ({value})" if grouping else f"{how}({value})"
    if alert and not named and (query.aggregation == "sum" or query.aggregation == "avg" and "gpu" not in keys):
        # each GPU's mean over its readings in the window, added up or averaged: a failed scrape (its series stale
        # until the next) drops one reading of the node's GPUs, not their share of the total at that step, and a GPU
        # that joins or leaves inside the window counts and weighs once, as one there all along (the mean of every
        # reading weighed a node that joined halfway at half a GPU); a mean per GPU stays its readings' mean
        mean = f"avg_over_time(({value})[{gauge_window}:{resolution}]{_offset(offset)})"
        how = query.aggregation
        if indexed is not None and naming is not None:  # the caller names each pod's GPU once (`naming`)
            naming.append(lambda statistic, how_: indexes_named(statistic, how_, indexed))
        elif indexed is not None:
            return indexes_named(f"{how} by ({grouping}) ({mean})", how, indexed)
        return f"{how} by ({grouping}) ({mean})" if grouping else f"{how}({mean})"
    if alert:
        name = None if not named else \
            (lambda statistic, how: gpus(statistic, OUTER_OF_STATISTIC.get(how, how), _duration_text(PREVIOUS_WITHIN)))
        if indexed is not None and naming is not None:  # the caller names each pod's GPU once (`naming`)
            naming.append(lambda statistic, how: indexes_named(statistic, how, indexed))
        elif indexed is not None:
            def name(statistic: str, how: str) -> str:
                return indexes_named(statistic, OUTER_OF_STATISTIC.get(how, how), indexed)
        return gauge_readings(aggregated, query.aggregation, gauge_window, resolution, periods or offset, name)
    if indexed is not None:  # a panel's: each step's GPUs named there
        return indexes_named(aggregated(query.aggregation), query.aggregation, indexed)
    return aggregated(query.aggregation)


def _model_slot(keys: tuple[str, ...]) -> tuple[str, ...]:
    """The keys of each GPU's value in a query grouped by model (modelled): its other keys, the node and the GPU."""
    return tuple(dict.fromkeys((*(key for key in keys if key != "model"), "node", "gpu")))


SPACED_MARK = "gpudash_spaced"  # gpu_models: a model spelled with blanks (summed away)


def modelled(inner: str, query: Query, labels: Labels, catalog: Catalog, scope: Scope, span: str, resolution: str,
             lookback: str) -> str:
    """A panel grouped by model: `inner` (the query's value per GPU: `_model_slot`'s keys, as a panel grouped by node
    and GPU reads it, one copy of each GPU) given the model of its GPU (gpu_models), then the query's aggregation per
    model. The exporter writes the model as `modelName`, with --replace-blanks-in-model-name its blanks as dashes: a
    rollout turning the flag on or off respells every GPU at once, so the model is no label a GPU's copies are kept
    apart by (each GPU counted under both spellings for the look-back after such a rollout: 4 GPUs for 2, 1,600 W for
    800), and a counter's recorded rate carries none (a rate grouped by model drew its GPUs' 800,000 mW under no
    model at all)."""
    keys = group_keys(query.by)
    outer = [label_name(key, labels) for key in keys]
    if "mig_instance" in keys:  # an instance is shown with its profile
        outer.insert(outer.index(MIG_INSTANCE_LABEL) + 1, MIG_PROFILE_LABEL)
    slot = [label_name(key, labels) for key in _model_slot(keys) if key in ("cluster", "node", "gpu")]
    metrics = tuple(dict.fromkeys((*_named_fields(query.metric, catalog), *query.over)))
    models = gpu_models(metrics, list(scope.naming(labels)), span, resolution, lookback, labels, tuple(slot))
    model = label_name("model", labels)
    how = OUTER_OF_STATISTIC.get(query.aggregation, query.aggregation)
    return (f"{how} by ({_listed(outer)}) ({inner} + on ({_listed(slot)}) group_left ({model}) (0 * {models}))")


def gpu_models(metrics: tuple[str, ...], matchers: list[str], span: str, resolution: str, lookback: str,
               labels: Labels, slot: tuple[str, ...]) -> str:
    """One series per GPU slot (`slot`: its cluster where kept, node and index) of any of `metrics`, labelled with the
    model of the GPU its copies name so: the model as the GPU's (its UUID's) newest copy spells it, a copy with a sample
    within the last scrape interval, else within the look-back, else within `span` (the rate window, the dashboard's
    range of an increase); of copies alike so, the spelling with blanks (the exporter's default) before the one with
    dashes, so that one is shown at every step and call. The GPU stands under every node name its copies give it over
    the dashboard's range, whichever the panel's value is named by (gpus_named: the range's best name at each step, an
    upgraded exporter's old pod name named by the node: keyed by each copy's own node at the step, the GPU had no model
    before the upgrade and left the panel)."""
    model = label_name("model", labels)
    gpu = (labels.cluster, GPU_LABEL, "gpu")
    ms = _seconds(resolution) * 1000
    ranks = " or ".join(f"present_over_time({each}[{ms}ms]) * 2 or present_over_time({each}[{lookback}]) or "
                        f"present_over_time({each}[{span}]) * 0"
                        for each in (selector(metric, matchers) for metric in metrics))
    marked = (f'label_replace({identified(f"({ranks})", labels)}, "{SPACED_MARK}", "1", {quoted(model)}, ".* .*") + '
              f'on ({SPACED_MARK}) group_left () (label_replace(vector(0.5), "{SPACED_MARK}", "1", "", "") or '
              f'vector(0))')
    newest = f"topk by ({_listed(gpu)}) (1, max by ({_listed((*gpu, model))}) ({marked}))"
    named = " or ".join(f"present_over_time({selector(metric, matchers)}[{DASHBOARD_RANGE}] @ end())"
                        for metric in metrics)
    names = f"max by ({_listed((*gpu, labels.node))}) ({coalesced_gpu(f'({named})', labels)})"
    each = f"max by ({_listed((*slot, model))}) ({names} + on ({_listed(gpu)}) group_left ({model}) {newest})"
    return f"topk by ({_listed(slot)}) (1, {each})"


def _instance_value(metric: str, catalog: Catalog, kind: str | None) -> bool:
    """Whether a MIG instance's series of `metric` hold the instance's own value (catalog per_instance), or, read on
    MIG instances alone (`kind` "mig"), the per-instance field that stands in for it; else a whole-device reading the
    exporter repeats on each instance."""
    if metric in catalog and catalog.get(metric).per_instance:
        return True
    return kind == "mig" and catalog.mig_substitute(metric) is not None


def _named_fields(metric: str, catalog: Catalog) -> tuple[str, ...]:
    """The fields a gauge's GPUs are named from (named_gpus): the field, and what a MIG GPU's value is read from in
    its place (its stand-in on MIG instances, a share's used memory), so that every GPU with a value has a name."""
    substitute = catalog.mig_substitute(metric)
    instead = (*((substitute[0],) if substitute else ()), *MIG_MEMORY_SHARES.get(metric, ())[:1])
    return tuple(dict.fromkeys((metric, *(name for name in instead if name in catalog))))


def named_gpus(series: str, metrics: tuple[str, ...], matchers: list[str], span: str | None,
               resolution: str, labels: Labels, node: str | None = None, whole: bool = False,
               only: tuple[str, ...] = (), by_uuid: bool = False, indexless: bool = False) -> str:
    """`series` (one or more per GPU: `cluster`, GPU_LABEL, `gpu`) with the node label of its GPU's name (gpus_named,
    from the copies of `metrics`, the first that has the GPU), whichever copy its value was read from: THE naming step
    of every per-GPU line and alert, so that a GPU's legend and an alert's labels do not follow the copy a value is read
    from (two copies reading alike flipped a legend from call to call between "n3 GPU 0" and the old exporter's pod
    name, and an alert's node label between evaluations; an old exporter reading higher named the line by its pod).
    `node` (the node variable): the copies whose node spelling matches it are those the name is read from. A gauge is
    named in a panel at its instant from the copies the instant selector reads (`span` None); in an alert once per
    evaluation, after each period's statistic (gauge_readings' `named`), from the copies of the last hour, as a
    counter's alert. `whole` (a panel's): named at each step as gpus_named's `whole` says, `only` as it says.
    A gauge in a panel (`span` None) is slotted: of the names GPUs are given at one index (cluster, node, index), the
    one ranking highest (its copies the freshest: gpus_named' rank), each GPU then named by the best name it has left
    (gpus_named), so a GPU named by its UUID where its series carry one and by its node where none does is one GPU
    across a rollout dropping or adding the UUID label: the old exporter's copies, within the look-back, were a second
    GPU ('GPUs reporting' 4 for 2, a GPU's line the mean of old and new readings). Not an alert's: its statistics span
    periods, which the old name's readings fill while the new name's are too few (a hot GPU's alert went quiet from
    the rollout for some 6 minutes); its labels (node, index) hold the two names as one alert. `by_uuid` (a panel's
    counter: `series` one per UUID of NVIDIA's form, ONE_LABEL, _uuid_one): drawn at the one index of the UUID its
    naming keeps (_one_index_per_uuid), its `gpu` the naming's. Keyed by UUID and index, two exporters numbering a
    node's GPUs apart were two GPUs at one index, summed by _Merge.gpus ('n1 GPU 0' 1,000 W of energy for 700, the
    300 and 700 W GPUs each exporter had there; with no `node` label n2's GPUs drawn twice,
    tests/integration/test_exporter_overlap_counter_lines.py); the naming keeps the new exporter's index from its
    first scrape, before its copy has a rate, and the UUID's rate is the old copy's then; in an alert (`span` given)
    the index of the copy that began last (_newest_index). `indexless` (a rule's
    counter over the fleet, _Merge.uuid_counter): a GPU named by a UUID of NVIDIA's form is named once, whatever its
    index, as `series` holds it (its `gpu` empty)."""
    if by_uuid:  # `series` one per UUID (ONE_LABEL, _uuid_one), drawn at the index its naming keeps
        either = gpus_named(metrics, matchers, span, resolution, labels, node, whole, only, one_index=True)
        on = _listed((labels.cluster, GPU_LABEL, ONE_LABEL))
        return f"({series} + on ({on}) group_left ({labels.node}, gpu) (0 * {either}))"
    on = _listed((labels.cluster, GPU_LABEL, "gpu"))
    either = gpus_named(metrics, matchers, span, resolution, labels, node, whole, only, indexless=indexless)
    return f"({series} + on ({on}) group_left ({labels.node}) (0 * {either}))"


# A GPU's UUID as NVIDIA writes it (nvidia-smi -L, the exporter's UUID label: `GPU-` and 32 hexadecimal digits in
# groups of 8, 4, 4, 4 and 12), in any case (a pipeline lowercasing label values writes `gpu-...`): no node's name
UUID_FORM = "(?i)GPU-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}"
SLOT_MARK = "gpudash_s"  # newest_nodes: the most indexes a GPU has copies at on a node
BEHIND_MARK = "gpudash_b"  # newest_nodes: 0 on a GPU's copy on the target its node's other GPUs are read from
ONE_LABEL = "gpudash_u"  # one_per_uuid, _one_index_per_uuid: a GPU among its UUID's (its index, none for a UUID)


def unindexed(named: str, template: bool = False) -> str:
    """`named` (GPU_LABEL set: identified) with the index (`gpu`) left out of the series of a GPU named by a UUID of
    NVIDIA's form (UUID_FORM), kept where GPU_LABEL is a node's spelling (no UUID: its GPUs are told apart by index
    alone). `template`: `named` is a format string (_Merge.physical's `{0}`), the form's braces doubled."""
    form = UUID_FORM.replace("{", "{{").replace("}", "}}") if template else UUID_FORM
    return f'label_replace({named}, "gpu", "", {quoted(GPU_LABEL)}, "{form}")'


def newest_nodes(metrics: tuple[str, ...], branches: list[list[str]], labels: Labels, span: str, step: str,
                 shift: str | None = None, window: str | None = None) -> str:
    """One series per GPU (`cluster`, GPU_LABEL, ONE_LABEL: _uuid_one) of `metrics` with a sample within `span` before
    the evaluation (less `shift`: a period's offset), its value 0, labelled with the node and the slot (`gpu`) its
    chosen copy names: the copy whose newest sample read at the steps of `step` (the scrape interval) is the newest, a
    copy read at none of them (its one sample in the span's last interval) after every copy read at one; of copies
    read alike (two exporters scraped at one millisecond), that of the target holding the fewest samples within
    INCUMBENT_SINCE, the one that began last (a count over 1e6: under a millisecond for scrapes of a second or more).
    All of it at `@ end()`: Prometheus reads it once an evaluation, one name in every step and period of a rule
    (_Merge._slotted); timestamp() at the evaluation (a function Prometheus reads at every step whatever its @) took
    the fleet's 5-minute total 3.3 times its CPU. The slot is the chosen copy's index, but on a node where a GPU of a
    UUID of NVIDIA's form has copies at two indexes within the span (exporters numbering apart: SLOT_MARK, the most
    indexes a GPU has there) a GPU of that form is a slot of its own, its chosen copy's index and target, and any
    other GPU of the node (ONE_LABEL its index) is read from its copy on one target alone: the one holding the most
    such GPUs of the node within `window` (the period's: the span less a reading's look-back), of those the newest (its best score), of those one (a topk, read once;
    BEHIND_MARK 0 on its copy there, by count_values; a GPU it does not hold -1, no entry, its readings none). Read from
    the node's newest target alone, such a GPU only the old exporter served (the new one serving A and C) or only the
    new one (the old one, serving A and C, scraped later in each interval) was not read (2 GPUs, 1,000 W for 3 and
    1,800 through the overlap), nor for an interval after the new exporter's failed scrape, and two targets scraped at
    one millisecond were both the newest and read it twice (4 GPUs, 2,600 W;
    tests/integration/test_fleet_rule_apart_gpu_without_nvidia_uuid.py).
    At the newest copy's index alone a GPU met another one there: the new exporter serving A and C at 0 and 1, the old
    one A, B, C, C was put at B's index (2 GPUs, 1,000 W for 3 and 1,500 while the old exporter read B); a GPU whose
    UUID is not of that form, numbered apart, left its old copy at the index A took (up to 1,605 W for 1,500); and
    two exporters scraped at one millisecond beyond INCUMBENT_SINCE, their copies tied and taken per GPU as Prometheus
    met them, put two GPUs at an index (2 GPUs, 1,200 W;
    tests/integration/test_fleet_rule_slot_shared_by_two_gpus.py). Each fact is read once in the expression: a topk
    named twice can take a tie two ways in one evaluation. Where no GPU has copies at two indexes of a node (one
    numbering, a GPU swapped at an index, a rollout dropping the UUID) the index is the slot, so a GPU's copies with
    and without a UUID, or two GPUs one after the other at an index, are one slot
    (tests/integration/test_fleet_rule_uuid_dropped.py). A GPU without a UUID (GPU_LABEL its node spelling) names its
    own node and keeps each index. A node is told numbering apart under one node spelling: an old exporter writing its
    own pod's name into Hostname and a new one the node into hostname, numbering apart, put each GPU of NVIDIA's form
    at one index under each, and the slot, the chosen copy's spelling and index, is still one GPU's (one exporter's
    copies never share an index: tests/integration/test_fleet_rule_apart_pod_named_exporter.py), but a GPU whose
    UUID is not of that form is then two GPUs (4 GPUs, 2,000 W for 3 and 1,500: pinned there)."""
    one = _listed((labels.cluster, GPU_LABEL, ONE_LABEL))
    selectors = [selector(metric, branch) for metric in metrics for branch in branches]
    at = f"@ end(){_offset(shift)}"
    read = " or ".join([*(f"max_over_time(timestamp({each})[{span}:{step}] {at})" for each in selectors),
                        *(f"present_over_time({each}[{span}] {at})" for each in selectors)])
    target = _listed((labels.cluster, *COPY_LABELS))
    began = " or ".join(f"count_over_time({each}[{INCUMBENT_SINCE}] {at})" for each in selectors)
    read = f"({read}) - on ({target}) group_left () max by ({target}) ({began}) / 1e6"
    scored = _uuid_one(coalesced_gpu(f"({read})", labels))

    def present(within: str) -> str:  # each copy with a sample within `within`
        return _uuid_one(coalesced_gpu(
            f"({' or '.join(f'present_over_time({each}[{within}] {at})' for each in selectors)})", labels))
    held = present(span)
    node = _listed((labels.cluster, labels.node))
    # each node marked with the most indexes a GPU of a UUID of NVIDIA's form has copies at there (2 or more: exporters
    # numbering apart)
    most = f"max by ({node}) (count by ({one}, {labels.node}) (count by ({one}, {labels.node}, gpu) ({held})))"
    # each node's target for its GPUs of no such UUID: the one holding the most of them within the period's window
    # (`window`: the span less a reading's look-back; over the span, a target whose copies had left the window was
    # kept for its last 5 s there, its GPUs read nowhere: 2 GPUs, 1,000 W for 3 and 1,200; and GPUs, not series: a
    # GPU given a pod within the window is two series on a target, and a target holding fewer GPUs won so on a tie
    # with its newer scrapes, another GPU then not read: 3 GPUs, 1,800 W for 4 and 2,000), then the
    # newest (its best score, under 1e10 until the year 2286: the count weighs more), then one (topk, read once; all
    # of it at `@ end()`: less the evaluation's time(), read at every step of a period, the 5-minute total took 2.6
    # times its CPU); such a GPU's copy there is its entry (0), another GPU's its chosen copy (-1: one of NVIDIA's
    # form, whose mark is not read, or one that target does not hold)
    copy = _listed((labels.cluster, labels.node, *COPY_LABELS))
    gpu_on = _listed((labels.cluster, labels.node, *COPY_LABELS, GPU_LABEL, ONE_LABEL))
    held_by = f"count by ({copy}) (count by ({gpu_on}) ({_nvidia_off(present(window or span), labels, '')}))"
    newest = f"max by ({copy}) ({coalesce_node(f'({read})', labels)})"
    kept = f"topk by ({node}) (1, 1e10 * {held_by} + {newest})"
    on_kept = f"topk by ({one}) (1, {_nvidia_off(held, labels, ';')} and on ({copy}) {kept})"
    behind = f"0 * {on_kept} or on ({one}) (-1 + 0 * topk by ({one}) (1, {scored}))"
    chosen = f'count_values without () ("{BEHIND_MARK}", {behind}) + on ({node}) group_left ({SLOT_MARK}) ' \
             f'(0 * count_values by ({node}) ("{SLOT_MARK}", {most}))'
    joined = f'label_join({chosen}, "{SLOT_MARK}", ";", "{SLOT_MARK}", "{ONE_LABEL}", "{BEHIND_MARK}", "gpu", ' \
             f'{_listed(map(quoted, COPY_LABELS))})'
    # on a node numbering apart a GPU of a UUID of NVIDIA's form is a slot of its own, its index and target's
    apart = "(?:[2-9]|[0-9]{2,})"
    slot = f'label_replace({joined}, "gpu", "$1", "{SLOT_MARK}", "{apart};;[^;]*;(.*)")'
    # and another GPU is read from its copy on the node's kept target alone (ONE_LABEL, no entry: not read)
    return f'(0 * label_replace({slot}, "{ONE_LABEL}", "$1;", "{SLOT_MARK}", "{apart};([^;]+);-.*"))'


def _nvidia_off(series: str, labels: Labels, node: str) -> str:
    """`series` (ONE_LABEL set) with the node label `node` (a value no node is named: "" or ";") where its GPU is
    named by a UUID of NVIDIA's form (ONE_LABEL empty): left out of a join or a count per node (newest_nodes)."""
    return f'label_replace({series}, {quoted(labels.node)}, "{node}", "{ONE_LABEL}", "")'


def one_per_uuid(named: str, labels: Labels, metrics: tuple[str, ...], matchers: list[str], lookback: str) -> str:
    """`named` (named_gpus': a value per GPU, `cluster`, GPU_LABEL and `gpu`) with the copies of one UUID at two
    indexes made one: a value over the GPUs (a fleet's count, total, mean or maximum). A GPU is told apart
    by its UUID and index so that one without a UUID (named by its node) is one per index; two exporters of a rollout
    numbering a node's GPUs apart are told to be one node by the name they share (gpus_named's slot), but an old
    exporter given no NODE_NAME writes its own pod's name for the node where the new one writes the node's: no slot
    is shared, and each GPU counted twice until the old copies leave the look-back ('GPUs reporting' 12 for 9, 'Total
    power draw' 5,790 W for 4,590, tests/integration/test_exporter_overlap_long_and_unnamed.py). A UUID of NVIDIA's
    form (UUID_FORM) names one GPU whatever its index; any other value of GPU_LABEL (a node's name, where the series
    carry no UUID) keeps its index. A MIG GPU's instances carry its UUID: counted once, as before.
    The copy kept is the highest of those with a series of `metrics` (under `matchers`) read at the instant, else
    (every copy held from an earlier scrape within `lookback`) the highest: the copies held are dropped where their UUID
    has one read. Keeping the highest alone, the old exporter's last readings, held through the look-back after it
    left, read 1,200 W where the new one's live copies read 120 W, a job on the GPUs having ended
    (tests/integration/test_fleet_stats_stale_copy.py)."""
    gpu = _listed((labels.cluster, GPU_LABEL, "gpu"))
    one = _listed((labels.cluster, GPU_LABEL, ONE_LABEL))

    read = _uuid_one(identified(f"({' or '.join(f'{selector(m, matchers)} < 1e14' for m in metrics)})", labels))
    within = identified(f"({' or '.join(f'present_over_time({selector(m, matchers)}[{lookback}])' for m in metrics)})",
                        labels)
    held = f"({_uuid_one(f'({within} unless on ({gpu}) {read})')} and on ({one}) {read})"  # where a copy is read
    return f'max by ({gpu}) (label_replace({named} unless on ({gpu}) {held}, "gpu", "", {quoted(GPU_LABEL)}, ' \
           f'"{UUID_FORM}"))'


def gpus_named(metrics: tuple[str, ...], matchers: list[str], span: str | None, resolution: str, labels: Labels,
               node: str | None = None, whole: bool = False, only: tuple[str, ...] = (),
               one_index: bool = False, indexless: bool = False) -> str:
    """One series per GPU (cluster, GPU_LABEL, index) of any of `metrics`, labelled with its name (from the copies of
    the first of `metrics` that has the GPU): the names of per-GPU lines and alerts (named_gpus) and the Node
    variable's values.
    The name is the node the GPU is shown under: the first non-empty node spelling of one of its copies, the copy
    whose spelling comes first in labels.node_sources (node, then hostname, Hostname, instance), of those equal the
    copy with a sample within the last scrape interval (`resolution`). Mid-upgrade the old exporter may write its
    own pod's name into Hostname while the new one writes the node into hostname (or gpudash's scrape job the node
    into node): the node wins, and after a rollout the new exporter's spelling wins once the old one has no sample
    left in the interval. Of two copies of one spelling naming the GPU apart (an old exporter writing its own pod's
    name into Hostname, the new one, given NODE_NAME, the node), one named like a pod of an exporter DaemonSet the
    settings name (labels.exporter_pods: the evidence) ranks below one named otherwise, and where neither is, one
    spelled like any DaemonSet pod's name (POD_LIKE: the shape alone, for a DaemonSet the settings do not name)
    below one that is not, whichever is fresher; a node whose own name has the shape (a Cluster API machine's) is
    named by it before its exporter's pod. Two copies ranking alike otherwise (two exporters' own pod names mid-
    rollout; a node's short and full names) are told apart by their names' last character (_name_order), so that the
    same one is shown at every step and call: Prometheus meets tied series in no fixed order, and the legend of a
    GPU two exporters named by their pods was one pod's at 6 of 8 calls and the other's at 2. gpudash's scrape job
    and ServiceMonitor write the node the exporter's pod runs on into `node`, the first spelling: there the GPU is
    named by it whatever Hostname holds. `node` (a regex): only the copies whose node spelling matches it
    (node_matchers). `whole` (panels, `span` unread): at each step the name of the step's copies unless the
    dashboard's range names the GPU at a better tier (_whole_range_names), `node` matched against the name chosen
    (_picked); alerts name it from the copies within `span` of each evaluation.
    `whole` (panels; `span` unread): a GPU is named at each step by its copies of the step unless the dashboard's range
    names it at a better tier (_whole_range_names), and the node variable (`node`) picks the GPUs whose name so chosen
    it matches (_picked). Named by the copies of each step alone (`span`, as alerts are), an exporter upgrade renaming
    a node inside the range (no `node` target label: the old exporter writing its own pod's name into Hostname, the
    new one the node into hostname) drew the GPU's line under the old pod's name before the upgrade and under the node
    after, two lines for one GPU with All, and with the node picked (the one name the variable lists) left out the
    half hour before the upgrade (tests/integration/test_node_renamed_in_range.py); named by the range's one name
    (f57720e2), a GPU that stood under node-a then node-b drew node-a's readings under node-b
    (tests/integration/test_gpu_moved_in_range.py). A step whose look-back reaches a sample before the range (a GPU
    gone up to 4 scrape intervals before the range's start) names no GPU the range does not hold. `only` (a panel's
    own matchers beyond `matchers`, a gauge's: its MIG instances'): the GPUs with a copy they match (_filtered_gpus).
    `span` None (a gauge's, in a panel: named_gpus' slot): of the candidate names at one index (cluster, node, index),
    the highest ranked, before each GPU's name is chosen among those left: chosen after, a GPU moved from a plainly
    named node to one named like a pod (a Karpenter node claim), the range naming it by its old node at every step, met
    there the GPU that took its index, fresher, and was left out ('GPUs reporting' 1 for 2, 'Total power draw' 500 W
    for 800); among its candidates it loses the old node's name alone and is named by the node it moved to. Then one
    index is kept of a UUID named at several (_one_index_per_uuid)."""
    on = _listed((labels.cluster, GPU_LABEL, "gpu"))
    # each metric's candidates where no metric before it has the GPU, then one name chosen among them: the name
    # gpus_named gives from the first metric that has the GPU, ordered and chosen once, not once per metric
    stepped = whole or span is None
    kept = _filtered_gpus(metrics, matchers, only, resolution) if only and stepped else None
    names = [_ranked_names(metric, matchers, span, resolution, labels, node, whole, kept, indexless)
             for metric in metrics]
    candidates = names[0] if len(names) == 1 else "(" + f" or on ({on}) ".join(names) + ")"
    if span is None:
        candidates = f"topk by ({_listed((labels.cluster, labels.node, 'gpu'))}) (1, {candidates})"
    named = _first_name(candidates, labels, stepped)
    if span is None or one_index and stepped:
        named = _one_index_per_uuid(named, labels)
    elif one_index:  # a rule's: the index of the UUID's copy still scraped that began last (_newest_index)
        named = _newest_index(named, metrics, matchers, span, labels)
    return _picked(named, node, labels) if stepped and node is not None else named


POD_GPU_LABEL = "gpudash_p"  # _pod_gpu: a pod's GPU, its UUID of NVIDIA's form or its index


def _pod_gpu(series: str, labels: Labels | None = None, marks: str | None = None) -> str:
    """`series` (a per-pod reading, GPU_LABEL set) with POD_GPU_LABEL its GPU's UUID where that is of NVIDIA's form
    (UUID_FORM), else its index (`gpu`: a GPU without a UUID is named by its node, which an exporter upgrade can respell,
    and a pod runs on one node). A sum, count or mean over a pod's GPUs needs no index: two exporters of a rollout
    numbering a node's GPUs apart (C, A, B for A, B, C) named the pod's GPU at the old index and at the new one, two
    GPUs of the pod through the overlap ('Power draw of each pod's GPUs' 600 W for 300, 'Pods on GPUs' 2 for 1; a pod on
    two GPUs weighed one of them twice in its mean: tests/integration/test_exporter_overlap_pod_rates_and_bars.py).
    With `marks` (pod_gpu_marks: per pod, the indexes at which a copy within the look-back carries no UUID of NVIDIA's
    form), a GPU at such an index is its index whatever UUID its other copies carry: a rollout to an exporter writing
    no UUID label (or from one) put one GPU under its UUID (the copies writing it) and under its index (those not), two
    GPUs of the pod through the overlap (train-ab 1,600 W for 800, 4 GPUs for 2, from the new exporter's first scrape
    to the look-back after the old one's last: tests/integration/test_pod_uuid_dropped_in_rollout.py). A rollout both
    dropping the UUID and numbering the GPUs apart is not told apart (nothing names a copy's GPU but its index)."""
    key = quoted(POD_GPU_LABEL)
    if marks is None:
        gpu = quoted(GPU_LABEL)
        return f'label_replace(label_join({series}, {key}, "", "gpu"), {key}, "$0", {gpu}, "{UUID_FORM}")'
    # marked: "index;name;index", else ";name;index": the UUID where unmarked and of NVIDIA's form, else the index
    pod = _listed((labels.cluster, labels.namespace, labels.pod, "gpu"))
    marked = f"({series}) * on ({pod}) group_left ({POD_GPU_LABEL}) {marks}"
    joined = f'label_join({marked}, {key}, ";", {key}, {quoted(GPU_LABEL)}, "gpu")'
    named = f'label_replace({joined}, {key}, "$1", {key}, ";({UUID_FORM});.*")'
    return f'label_replace({named}, {key}, "$1", {key}, ".*;(.*)")'


def pod_gpu_marks(metrics: tuple[str, ...], labels: Labels, lookback: str) -> str:
    """Per pod (cluster, namespace, pod) and index, a series of value 1 for every index a series of one of `metrics`
    (every field the query reads a pod's GPUs from: _pod_fields) named the pod at within `lookback`, POD_GPU_LABEL the
    index where one of them carries no UUID of NVIDIA's form (identified's first UUID spelling it has: none, or another
    form), none where all do (_pod_gpu's `marks`). A pod's GPU read from a field not among `metrics` has no series here
    and is dropped by the join (read from the field alone, a pod on MIG instances, whose utilisation is read from their
    engine activity, left the utilisation panel)."""
    pod = _listed((labels.cluster, labels.namespace, labels.pod, "gpu"))
    first, other = uuid_spellings(labels)[:2]
    named = pod_named(labels)
    form = quoted(UUID_FORM)
    unnamed = " or ".join(f"present_over_time({selector(metric, [named, *matchers])}[{lookback}])"
                          for metric in metrics
                          for matchers in ([f"{first}!~{form}", f'{first}!=""'], [f'{first}=""', f"{other}!~{form}"]))
    every = " or ".join(f"present_over_time({selector(metric, [named])}[{lookback}])" for metric in metrics)
    every = f"group by ({pod}) ({every})"
    key = quoted(POD_GPU_LABEL)
    return f'(label_join(group by ({pod}) ({unnamed}), {key}, "", "gpu") or on ({pod}) {every})'


def _pod_fields(query: Query, catalog: Catalog) -> tuple[str, ...]:
    """The fields a per-pod query reads a pod's GPUs from (pod_gpu_marks): its field and what a MIG GPU's value is read
    from in its place (_named_fields), the fields of a share (its MIG memory's, those it is `over`)."""
    shares = (*MIG_MEMORY_SHARES.get(query.metric, ()), *query.over)
    return tuple(dict.fromkeys((*_named_fields(query.metric, catalog), *(name for name in shares if name in catalog))))


def _uuid_one(series: str) -> str:
    """`series` with ONE_LABEL its index (`gpu`), none where GPU_LABEL is a UUID of NVIDIA's form (UUID_FORM)."""
    one = quoted(ONE_LABEL)
    return f'label_replace(label_join({series}, {one}, "", "gpu"), {one}, "", {quoted(GPU_LABEL)}, "{UUID_FORM}")'


def pod_indexes(metrics: tuple[str, ...], branches: list[list[str]], extra: list[str], labels: Labels,
                span: str, marks: str | None = None) -> str:
    """Per pod (cluster, namespace, pod) and GPU (POD_GPU_LABEL: its UUID of NVIDIA's form, else its index; _pod_gpu),
    a series of value 0 labelled with the index (`gpu`) an alert per pod and GPU names it by: that of the GPU's copy
    naming the pod (`metrics` under `branches` and `extra`) ranked first as _newest_index ranks a UUID's copies (a
    sample within Prometheus' look-back, then the fewest samples within `span`, the exporter that began last, then the
    targets' scrape phase), read at the evaluation, outside a period's subquery, so that every step of the period
    reads the GPU by its UUID and the alert names it by one index. Keyed by its index at each step, a pod's GPU
    through a rollout numbering a node's GPUs apart (C, A, B for A, B, C) was judged at the old exporter's index and
    at the new one's, and an index both numberings give the pod's two GPUs mixed their readings (G's 2 % beside H's
    80 % read 72.9 %; a pod's two idle GPUs three idle series: tests/integration/test_pod_rules_numbered_apart.py).
    Two GPUs of a pod named at one index (a GPU only an exporter other than the newest serves, at an index the newest
    gives another) are one series, their readings pooled (`indexes_named` adds up sums and counts), not an error: a
    wrong mean there, pinned strict (test_pod_rules_numbered_apart.py: 39.1 % for G's 2 % and H's 80 %).
    `marks` (a panel's, pod_gpu_marks): the pod's GPU keyed as the panel's readings key it (_pod_gpu)."""
    pod = (labels.cluster, labels.namespace, labels.pod, POD_GPU_LABEL)
    lookback = _duration_text(LOOKBACK_SECONDS)
    selectors = [selector(metric, [*branch, *extra]) for metric in metrics for branch in branches]
    read = " or ".join(f"(present_over_time({each}[{lookback}]) * 1e6 or present_over_time({each}[{span}]) * 0) "
                       f"- count_over_time({each}[{span}]) + (max_over_time((timestamp({each}) - time())"
                       f"[{span}:{span}]) / 1e3 or 0 * count_over_time({each}[{span}]))" for each in selectors)
    ranked = f"max by ({_listed((*pod, 'gpu'))}) ({_pod_gpu(identified(f'({read})', labels), labels, marks)})"
    return f"(0 * topk by ({_listed(pod)}) (1, {ranked}))"


def _newest_index(named: str, metrics: tuple[str, ...], matchers: list[str], span: str, labels: Labels) -> str:
    """`named` (gpus_named's in a rule: a name per GPU, cluster, GPU_LABEL and index) with one index kept of a UUID of
    NVIDIA's form named at several: that of the copy with a sample within Prometheus' look-back (LOOKBACK_SECONDS)
    holding the fewest samples within `span`, the exporter that began last, at every evaluation alike (the names' rank
    by a sample within the last scrape interval, which two exporters scraped at other seconds take in turn, would move
    the alert's `gpu` between evaluations); a copy without a sample within the look-back ranks below every one with
    one, by its samples alike (a GPU whose exporter is down is still named: its periods are judged). Copies holding as
    many samples (two DaemonSets both up longer than `span`) rank by their newest sample at the step of `span` aligned
    within it, less that step (under a second a thousand: their targets' scrape phase, the same at every evaluation
    and for every GPU of the target): tied, each GPU's index fell as Prometheus met its copies, two GPUs of a node
    numbered apart at one index at 18 of 27 evaluations, the numbering moving between them at the rest
    (tests/integration/test_alert_index_two_daemonsets_tied.py). A GPU without a UUID (GPU_LABEL its node) keeps every
    index (ONE_LABEL its index)."""
    gpu = _listed((labels.cluster, GPU_LABEL, "gpu"))
    lookback = _duration_text(LOOKBACK_SECONDS)
    read = " or ".join(f"(present_over_time({selector(m, matchers)}[{lookback}]) * 1e6 or present_over_time("
                       f"{selector(m, matchers)}[{span}]) * 0) - count_over_time({selector(m, matchers)}[{span}]) + "
                       f"(max_over_time((timestamp({selector(m, matchers)}) - time())[{span}:{span}]) / "
                       f"1e3 or 0 * count_over_time({selector(m, matchers)}[{span}]))"
                       for m in metrics)
    age = f"max by ({gpu}) ({identified(f'({read})', labels)})"
    one = _listed((labels.cluster, GPU_LABEL, ONE_LABEL))
    return f"topk by ({one}) (1, {_uuid_one(f'(0 * {named} + on ({gpu}) group_left () {age})')})"


def _one_index_per_uuid(named: str, labels: Labels) -> str:
    """`named` (gpus_named's: a name per GPU, cluster, GPU_LABEL and index) with one index kept of a UUID of NVIDIA's
    form (UUID_FORM) named at several, as one_per_uuid keeps one copy of a fleet's: an old exporter given no NODE_NAME
    writes its own pod's name for the node where the new one writes the node's, and numbering the GPUs apart the two
    share no slot (gpus_named's), each GPU drawn twice through the overlap ('nvidia-dcgm-exporter-x7k2p GPU 0..2'
    beside 'n2 GPU 0..2': 12 lines for 9 GPUs, tests/integration/test_exporter_overlap_long_and_unnamed.py). Kept by
    the name's rank less its whole part (`% 1`, the kind of name: _range_weight): a copy's presence at the step first
    (within the last interval, then within the look-back alone: _present), then the spelling's place, the name order,
    the target that began last. By the whole rank, a name the range alone gives (the node's, which the new exporter
    writes at the other index from its first scrape) outranked the GPU's own copies before the rollout and its line
    was left out. Two exporters both scraped, the old one writing its pod's name, are told apart by the kind the
    fraction holds again (_range_weight), before the spelling's place: the node's name before the old exporter's pod's,
    both in Hostname (by the name order alone the pod's won for names such as node-b) or the pod's in hostname (by
    place first it won): the GPUs were drawn under the pod through the overlap. A GPU without a UUID
    (GPU_LABEL its node) keeps every index (ONE_LABEL its index). ~150 bytes a naming (all-metrics: 21)."""
    return f"topk without (gpu, {labels.node}) (1, {_uuid_one(named)} % 1)"  # by cluster, GPU_LABEL and ONE_LABEL


def listed_names(metrics: tuple[str, ...], matchers: list[str], resolution: str, labels: Labels,
                 seen: list[list[str]] | None = None) -> str:
    """The Node variable's names of each GPU (cluster, GPU_LABEL, index, node) of any of `metrics` (the first that has
    the GPU): those at its best tier over the dashboard's range (_whole_range_names' `listing`), the names its lines
    carry in the range's panels; `seen` (the matchers of a picked pod or namespace), of those the names a copy naming
    the picked pod carries where any does, told by the first metric (catalog.PRESENCE: one every GPU reports; a GPU
    without it lists every name at its best kind, as before): told by each, the bundled dashboards' Node variable grew
    1,678 bytes (every dashboard), by the first 336."""
    on = _listed((labels.cluster, GPU_LABEL, "gpu"))
    names = [_whole_range_names(metric, matchers, resolution, labels, listing=True, seen=None if k else seen)
             for k, metric in enumerate(metrics)]
    return names[0] if len(names) == 1 else "(" + f" or on ({on}) ".join(names) + ")"


def on_node(metric: str, placing: list[list[str]], labels: Labels) -> str:
    """Each GPU (cluster, GPU_LABEL, index) with a copy of `metric` in the dashboard's range (at its end) that
    `placing` (the node variable's matchers) matches, whichever copy named a pod on it. Matched on the copy that named
    the pod, a node renamed inside the range by an exporter upgrade (the old exporter's own pod name in Hostname, then
    the node in hostname) left its pods out of the per-pod panels, with the node picked, until the upgrade. Looser
    than the per-GPU panels' pick (gpus_named, a step's name): a GPU that stood under node-a, then node-b (a node
    replaced on the same hardware) shows its pods with either picked over the whole range."""
    return identified(_raw(metric, placing, [], f"present_over_time({{}}[{DASHBOARD_RANGE}] @ end())"), labels)


POD_KEYS = frozenset(("cluster", "namespace", "pod", "node", "gpu"))  # a per-pod query, per its GPUs too


def naming_targets(metric: str, branches: list[list[str]], labels: Labels, lookback: str, resolution: str,
                   left: bool = False, counter: bool = False) -> str:
    """_Device._naming_targets: per pod (cluster, namespace, pod), the scrape targets whose latest naming of it within
    `lookback` (sample_time) is within 1.5 scrape intervals (`resolution`) of its newest naming on any target, over the
    pods' series of `metric` in `branches`; `left`: the others, the targets of a node the pod left (a target naming it
    within a longer window but not within `lookback` is in neither). A `counter`'s sample times (_named_rates) read
    its series through present_over_time (sample_time's `present`: the same step times; no counter is read through
    last_over_time). Any pod label is read, an exporter pod's too (not pod_named: each judgement is of one pod, so an
    exporter pod's judgement meets no workload pod's, and the regex in four more selectors of every per-pod query grew
    the bundled by-pod dashboard 4 KB)."""
    keys = _listed((labels.cluster, labels.namespace, labels.pod))
    named = _raw(metric, branches, [pod_named(labels, False)], sample_time(lookback, resolution, present=counter))
    times = f"max by ({_listed((labels.cluster, labels.namespace, labels.pod, *COPY_LABELS))}) ({named})"
    margin = 1.5 * _seconds(resolution)
    return f"({times} {'<' if left else '>='} on ({keys}) group_left () (max by ({keys}) ({named}) - {margin:g}))"


def left_targets(metric: str, branches: list[list[str]], labels: Labels, lookback: str, left: str | None = None) -> str:
    """At a rule's step (a subquery's, _Device._stepped): per pod (cluster, namespace, pod), the scrape targets that
    named it within `lookback` (label_lookback) but not within the last 1.5 scrape intervals, where another target did:
    the targets of a node the pod left for another (a pod runs on one node). Two exporters of one node naming it (an
    upgrade's overlap) scrape it within an interval of each other, and a GPU pods share, named under one of them per
    scrape, is one target's: neither is left out. naming_targets' judgement at each step (a target's latest naming
    against the pod's newest, from each series' sample time) made the per-pod idle alert 2.8 times as dear (64 GPUs,
    Prometheus CPU an evaluation: 3.4 s where it was 1.2 s without a judgement; 1.5 s this way). This one is judged
    from the step, not from the pod's newest naming: at a step where that is more than 1.5 intervals old (a failed
    scrape of the new node), the node left is read again while its naming there is within the look-back. Any pod
    label is read, as naming_targets does.
    `left` (the rule's own pods named within `lookback`, each of whose series names a pod and is one of `branches`):
    the targets judged are those alone, not every pod's series within `lookback`. The rows matched against the
    targets (`unless on` the pod and target) are `left`'s own: each has its own series among the targets' that named
    the pod within `lookback`, and whether a target named it within the last 1.5 intervals, or another did, is still
    read from every series; so the same rows go, and a MIG instances' rule no longer reads every whole GPU's pods
    (nor a whole GPUs' rule the MIG instances') over the look-back at each step."""
    seconds = _seconds(lookback) // LABEL_LOOKBACK_SCRAPES

    def named(within: str) -> str:
        return _raw(metric, branches, [pod_named(labels, False)], f"present_over_time({{}}[{within}])")
    now = named(_milliseconds_text(1500 * seconds))
    keys = (labels.cluster, labels.namespace, labels.pod)
    judged = named(lookback) if left is None else left
    return f"(({judged} unless on ({_listed((*keys, *COPY_LABELS))}) {now}) and on ({_listed(keys)}) {now})"


def _named_rates(query: Query, labels: Labels, catalog: Catalog, scope: Scope, window: str, resolution: str,
                 keys: tuple[str, ...]) -> str:
    """A per-pod panel's counter rate: each GPU a scrape within the rate window named the pod on (any of its copies,
    `present_over_time(X{pod!=""}[window])`), with that GPU's rate as the per-GPU panels read it, from all its copies
    whatever pod they name (`expression` grouped by the GPU, the pod and namespace variables left out), each GPU named
    by its UUID (GPU_LABEL: the node spellings of the copies of one GPU, an exporter upgrade renaming the node, made
    one) under the node the rates name it by (gpus_named, the same names) and joined on it (`* 0 + on (<cluster>, node,
    gpu) group_left ()`), once per pod, then the query's aggregation per pod. A time-sliced GPU an
    exporter without KUBERNETES_VIRTUAL_GPUS names under one pod per scrape shows its whole rate under each pod a
    scrape of the window named, not only where the pod's own copies hold two readings in it; a pod holding several
    MIG instances of a GPU counts the GPU once. A GPU whose latest scrape named no pod holds none (idle_gpus), as in
    the gauge panels beside it: a pod recreated on another GPU of its node read the idle GPU it left too (212.5 W for
    107.5: test_pod_moved_gpu); nor does a scrape target whose latest naming of the pod is more than 1.5 intervals
    older than its newest (naming_targets, `left`: the pod moved to another node), as in the gauge panels: a pod
    moved to another node whose GPU another pod took at once read that GPU beside its new one for the window (the
    handed-over story of test_pod_moved_gpu). Within the window but before the look-back (a rate window longer than
    four intervals) a target is kept: its naming time is not read there."""
    slot = (*(("cluster",) if "cluster" in keys else ()), "node", "gpu")
    # every GPU's rate and name whatever node is picked: the node variable picks the GPUs after (on_node), as the
    # per-pod gauges beside it do
    everywhere = Scope(tuple((k, r) for k, r in scope.regexes if k not in ("pod", "namespace", "node")))
    rates = expression(replace(query, by=slot, aggregation="max"), labels, catalog, everywhere, rate_window=window,
                       resolution=resolution)
    on = _listed(label_name(k, labels) for k in slot)
    # named by any copy, whatever its node spelling
    anywhere = Scope(tuple((k, r) for k, r in scope.regexes if k != "node")).matchers(labels)
    scoped = _raw(query.metric, anywhere, [pod_named(labels)], f"present_over_time({{}}[{window}])")
    # not on the targets of a node the pod left (naming_targets), as the gauge panels beside it (_Device._named_on)
    moved = naming_targets(query.metric, everywhere.matchers(labels), labels, label_lookback(_seconds(resolution)),
                           resolution, left=True, counter=True)
    scoped = f"({scoped} unless on ({_listed((labels.cluster, labels.namespace, labels.pod, *COPY_LABELS))}) {moved})"
    # a GPU whose latest scrape named no pod holds none (idle_gpus), as in the gauge panels beside it
    named = identified(off_idle(scoped, query.metric, everywhere.matchers(labels), labels, resolution), labels)
    gpu = (labels.cluster, GPU_LABEL, "gpu")
    node = next((regex for key, regex in scope.regexes if key == "node"), None)
    if node is not None:  # on a GPU the range places on the node picked (on_node)
        placing = Scope(tuple((k, r) for k, r in scope.regexes if k not in ("pod", "namespace"))).matchers(labels)
        named = f"({named} and on ({_listed(gpu)}) {on_node(query.metric, placing, labels)})"
    # each GPU a pod was named on (by its UUID, whichever node spelling the copy naming it carries; a UUID of NVIDIA's
    # form whatever index its copies give it, _uuid_one) under the node and at the index the rates draw it at
    # (named_gpus' `by_uuid`: the same names, read from the same copies, one index kept of the UUID)
    one = (labels.cluster, GPU_LABEL, ONE_LABEL)
    pods = f"max by ({_listed((*one, *(label_name(k, labels) for k in keys if k != 'node')))}) ({_uuid_one(named)})"
    # the GPU named as its rate is (the same names, every node's): a node picked that the variable does not offer (an
    # old exporter's own pod name in Hostname, kept in a link) left the pod out where the other per-pod panels showed
    # it, its rate named by the step's name (the node). Keyed by UUID and index, two exporters numbering a node's GPUs
    # apart named a pod's GPU at both indexes, each joined to the rate drawn there: the pod read its GPU's rate and that
    # of the GPU the new exporter put at its old index (1,000,000 mW for 300,000 through the overlap:
    # test_exporter_overlap_pod_rates_and_bars.py)
    pods = named_gpus(pods, (query.metric,), list(everywhere.naming(labels)), window, resolution, labels, None,
                      True, by_uuid=True)
    once = _listed((*(label_name(k, labels) for k in (*keys, *slot) if k != "node" or k in keys), GPU_LABEL))
    return (f"{query.aggregation} by ({_listed(label_name(k, labels) for k in keys)}) "
            f"(max by ({once}) ({pods} * 0 + on ({on}) group_left () {rates}))")


# Scrapes a per-pod panel looks back over for the pods a GPU is named under (label_lookback).
LABEL_LOOKBACK_SCRAPES = 4


def label_lookback(scrape_seconds: int) -> str:
    """The window within which a scrape naming a pod on a GPU shows the pod on it in per-pod panels: four scrape
    intervals, the least window Grafana's $__rate_interval gives the per-pod counter panels beside them (with the
    scrape interval as their min step), which show each pod a scrape within that window named (_named_rates): so a
    pod a gauge panel shows, the counter panels beside it show too. An exporter without KUBERNETES_VIRTUAL_GPUS names
    a GPU pods share under one of them per scrape, the one kubelet lists last, in no fixed order (dcgm-exporter #340,
    PR #432): every pod so named within the window shows."""
    return f"{LABEL_LOOKBACK_SCRAPES * scrape_seconds}s"


def generated_windows(scrape_seconds: int) -> frozenset[str]:
    """The fixed windows gpudash gives `present_over_time`, `last_over_time` and `count_over_time` in panels at the
    scrape interval `scrape_seconds`: each follows the scrape interval (the reason lint GF007 names a fixed window), or
    is the reach a counter's reading looks back for the reading before it. A step's own sample (taken_within: the
    interval less a millisecond, the interval, a millisecond at its start; fresh_copies and chosen_copy: the interval
    in ms), the per-pod panels' look-back (label_lookback; _present: a target's copies' samples within it), a
    counter's held reading (held_for) and the reading before a gap
    (PREVIOUS_WITHIN, WINDOW_PREVIOUS_WITHIN), a series' latest sample's time (sample_time: half the interval), a GPU's
    unnamed series within two intervals (idle_gpus)."""
    ms = scrape_seconds * 1000
    return frozenset((f"{ms - 1}ms", f"{ms}ms", f"{scrape_seconds}s", "1ms", label_lookback(scrape_seconds),
                      half_interval(scrape_seconds),
                      f"{held_for(f'{scrape_seconds}s')}ms", _duration_text(PREVIOUS_WITHIN),
                      _duration_text(WINDOW_PREVIOUS_WITHIN), f"{2 * scrape_seconds}s"))


def named_within_note(scrape_seconds: int, own_share: bool = False, count: bool = False) -> str:
    """What a per-pod gauge panel (label_lookback) says of the pods it shows; `own_share`: a field the exporter splits
    per process, read as each pod's own share (exporter.virtual_gpus); `count`: a count of the pod's GPUs, which
    counts each with a reading within the window (counted_within_note), not the GPU's latest reading."""
    window = LABEL_LOOKBACK_SCRAPES * scrape_seconds
    reading = "the latest reading of the pod's own share in them" if own_share else "the GPU's latest reading"
    each = "" if count else f", each with {reading}"
    return (f"Per pod, the GPUs a scrape within the last {LABEL_LOOKBACK_SCRAPES} scrape intervals ({window} s) named "
            f"the pod on{each}: a GPU pods share by time-slicing or MPS, which an exporter without "
            f"KUBERNETES_VIRTUAL_GPUS names under one of them per scrape (not always the same one), shows under each "
            f"pod so named, and a pod that left a GPU shows on it for up to {window} s after the last scrape that "
            f"named it while the GPU's scrapes name another pod (none: the GPU is idle, and no pod shows on it).")


def counted_within_note(scrape_seconds: int) -> str:
    """What a panel's count of GPUs (`count`: counted over label_lookback) says of the GPUs it counts."""
    window = LABEL_LOOKBACK_SCRAPES * scrape_seconds
    return (f"A GPU counts while it has a reading within the last {LABEL_LOOKBACK_SCRAPES} scrape intervals "
            f"({window} s): one whose field reads DCGM's blank at some scrapes still counts, one that writes only the "
            f"blank does not, and one that stopped reporting counts for up to {window} s after its last reading.")


def named_pods_looked_back(query: Query, catalog: Catalog) -> bool:
    """A query of gauges (or a count) grouped by a workload's label (its pod, namespace or container), which panels
    and rules read over label_lookback for the pods named (`expression`'s `named_within`)."""
    return (bool(set(WORKLOAD_KEYS) & set(group_keys(query.by))) and not query.raw_promql and not query.as_increase
            and reads_gauges(query, catalog))


def reads_gauges(query: Query, catalog: Catalog) -> bool:
    """A query of gauges only (no counter among its field and what it divides by)."""
    return not any(m in catalog and catalog.get(m).is_counter for m in (query.metric, *query.over))


# How a statistic per GPU over a window is aggregated per outer group (gauge_readings' `named`): a count of readings
# is added up.
OUTER_OF_STATISTIC = {"count": "sum"}


PERIOD_LABEL = "gpudash_period"  # which of an alarm's periods a statistic or condition is of (counted, then dropped)
# An alert's statistics of several periods in one expression: `offset` given as the periods' shifts (None: the
# latest), the statistic of the k-th marked with PERIOD_LABEL k. A per-GPU gauge alert's GPUs are then named once for
# all its periods (named_gpus, the costliest part of its evaluation), not once per period; the values are those of
# each period's own expression.
Periods = tuple[str | None, ...]


class NotCombined(ValueError):
    """A query whose periods are read one expression each (only a per-GPU gauge alert's are combined: Periods)."""


def gauge_readings(aggregated, aggregation: str, window: str, resolution: str, shift: str | Periods | None = None,
                   named=None) -> str:
    """A gauge's statistic over `window` from one reading per step of the scrape interval (alerts, as CloudWatch
    takes a statistic over the period's observations). At each step every series' latest sample of the step
    before (step_reading: a sample counts once) is read, a blank one left out, and a GPU's (a pod's GPU's)
    series are merged into its one reading, a ratio taken of one reading's values, the outer grouping aggregated
    (`aggregated(how)`: that expression at a step); then the window's statistic is taken over those readings. So
    the min, max or mean is of the GPU's readings whatever series carried them: an exporter restarted, a pod moved
    to another GPU or a GPU handed to another pod starts new series, which no longer split the window; a blank
    reading drops that reading, not the window; a used share's peak is that of one reading, not the largest used
    over the largest free of different readings. The mean is of every reading in the window (the sum of the
    readings over their count), as CloudWatch's average over the observations of each series it merges. `shift`:
    the window ends that long before the instant (an earlier period). `named(statistic, how)` (a per-GPU alert):
    `aggregated` gives each GPU's reading by its UUID (GPU_LABEL), and `named` names each GPU's statistic over the
    window and aggregates it per outer group, at the evaluation's instant, outside the window's subquery: so every
    period of an evaluation names a GPU alike (named at each step, a GPU named by an old exporter's pod name in the
    steps before the node's copies were first scraped was a second alert beside the node's at every evaluation whose
    periods held those steps)."""
    def over(function: str, how: str) -> str:
        if isinstance(shift, tuple):  # several periods (Periods), each statistic marked, named once
            statistic = "(" + " or ".join(
                f'label_replace({function}_over_time(({aggregated(how)})[{window}:{resolution}]{_offset(one)}), '
                f'"{PERIOD_LABEL}", "{k}", "", "")' for k, one in enumerate(shift)) + ")"
            return named(statistic, how)
        statistic = f"{function}_over_time(({aggregated(how)})[{window}:{resolution}]{_offset(shift)})"
        return statistic if named is None else named(statistic, how)
    if aggregation in GAUGE_OVER_TIME:
        return over(GAUGE_OVER_TIME[aggregation], aggregation)
    if aggregation == "avg":
        return f"({over('sum', 'sum')} / {over('sum', 'count')})"
    return over("avg", aggregation)


def presence(metrics: tuple[str, ...], labels: Labels, scope: Scope = Scope(), extra: tuple[str, ...] = (),
             within: str | None = None) -> str:
    """Series of any of `metrics` in scope (with `within`, a range: those with a sample in it, one series per metric
    name's labels, the name dropped): the source of variable values and GPU counts."""
    if within is not None:  # one selector per metric: a range function drops the name, so two names would collide
        parts = [f"present_over_time({selector(metric, [*branch, *extra])}[{within}])"
                 for metric in metrics for branch in scope.matchers(labels)]
        return parts[0] if len(parts) == 1 else "(" + " or ".join(parts) + ")"
    name = f'__name__=~{quoted("|".join(metrics))}'
    parts = ["{" + ", ".join([name, *branch, *extra]) + "}" for branch in scope.matchers(labels)]
    return parts[0] if len(parts) == 1 else "(" + " or ".join(parts) + ")"
