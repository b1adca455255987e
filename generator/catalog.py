"""The metric catalog: the DCGM exporter's counters CSV, parsed by the exporter's own rules.

Rules (dcgm-exporter internal/pkg/counters): a line is a comment only when `#`
is its first character; empty lines are skipped; every record has exactly
three comma-separated fields (field name, Prometheus type, help), each trimmed
of spaces; the type is one of gauge, counter, histogram, summary, label.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import InputError
from .reading import decode_utf8, read_bytes
from .resources import closest_field, default_counters, field_catalog, known_fields
from .units import FAMILY_ORDER, UNITS, Unit, infer_family, infer_unit

KINDS = ("gauge", "counter", "histogram", "summary", "label")
# Device fields every GPU reports, MIG or not, held by a pod or idle, the likeliest first: Grafana's
# variables and GPU counts and the data-missing alarm read the first one collected, never GPU
# utilization while another is (MIG instances do not report it).
PRESENCE = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_SM_CLOCK",
            "DCGM_FI_DEV_GPU_UTIL")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# The type NVIDIA's counters CSVs (the exporter image's default set, dcp-metrics-included.csv, and default-counters.csv)
# give a field the bundled CSV types as DCGM means it: an exporter serves it so unless it reads a CSV of the user's
# (settings `counters`, which names the file the exporter is given); gpudash does not ship the bundled CSV to the
# exporter. NVLink's total is a throughput in MB/s (units.py), typed counter in every NVIDIA CSV.
IMAGE_DEFAULT_KINDS = {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": "counter"}
# Help text that says a field the catalog of DCGM's fields does not say is a running total (NVIDIA's CSVs: "since boot",
# "since the driver loaded", "since exporter start", "Cumulative ..."; every such field of theirs is typed counter, and
# no gauge's help says so).
_RUNNING_TOTAL = re.compile(r"\bsince (?:boot|the driver (?:was )?loaded|(?:the )?exporter (?:start|started))\b"
                            r"|\bcumulative\b", re.I)

# MIG: on a GPU split into instances the exporter writes one series per instance, told
# apart by these labels. Fields of the whole device (power, energy, temperature, clocks,
# errors, PCIe and NVLink traffic) repeat on every instance; framebuffer and profiling
# fields belong to the instance.
MIG_INSTANCE_LABEL = "GPU_I_ID"
MIG_PROFILE_LABEL = "GPU_I_PROFILE"
# The GPU instance the CloudWatch agent's scrape job gives a series of a GPU not split into MIG
# instances (the exporter writes no GPU_I_ID there): the whole GPU is its one instance.
WHOLE_GPU_INSTANCE = "none"
_INSTANCE_PREFIXES = ("DCGM_FI_DEV_FB_", "DCGM_FI_PROF_")
_DEVICE_FRAGMENTS = ("PCIE", "NVLINK", "C2C")
# Fields MIG does not support, and the per-instance field that stands in for each (with the
# factor that puts it in the same unit): GPU utilization is not reported for MIG instances,
# graphics engine activity is.
MIG_SUBSTITUTES = {
    "DCGM_FI_DEV_GPU_UTIL": ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 100.0),
    "DCGM_FI_DEV_MEM_COPY_UTIL": ("DCGM_FI_PROF_DRAM_ACTIVE", 100.0),
}
# A share of an instance's memory (DCGM: Used / (Total - Reserved), i.e. used / (used + free)), and the fields whose
# sums over a GPU's MIG instances make the GPU's share of the memory its instances hold: a plain mean of the
# instances' shares weighs a 1g.10gb as a 3g.40gb (a full 3g.40gb beside an empty 1g.10gb is 80 % of that memory,
# not 50 %).
MIG_MEMORY_SHARES = {"DCGM_FI_DEV_FB_USED_PERCENT": ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE")}
# A pod's least free memory, or its largest share of memory used, over its GPUs (an alarm before an allocation fails:
# alarms/gpu_alarms.py framebuffer-full) is judged per device its processes allocate on, each MIG instance on its own
# (an allocation lives in one instance: a full 1g.10gb beside an empty one of the same GPU is full), not per GPU, the
# instances the pod holds there added, as every other reading of a field MIG reports per instance is
# (tests/support/two_instances.py).
HEADROOM = "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED"


def per_instance_field(name: str) -> bool:
    """True for a field (by name) MIG reports per GPU instance; False for a field of the whole device."""
    return name.startswith(_INSTANCE_PREFIXES) and not any(f in name for f in _DEVICE_FRAGMENTS)


def per_device_headroom(query) -> bool:
    """Whether a pod's reading of `query` (a model.Query) is judged per MIG instance it holds (HEADROOM): the least
    free memory, or the largest share of memory used (`over` the GPU's memory)."""
    return query.metric == HEADROOM[0] and query.aggregation == "min" \
        or query.metric == HEADROOM[1] and query.aggregation == "max" and bool(query.over)
# Fields DCGM does not report for MIG instances: what an instance's series carries for them
# (0, or nothing, or the blank sentinel, by exporter version) is no reading.
MIG_UNSUPPORTED = (*MIG_SUBSTITUTES, "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL")
# Gauges a MIG instance reports besides PRESENCE's (its own free framebuffer; the device's memory clock and memory
# temperature, repeated on each instance): where the presence field is one MIG does not report and its stand-in is
# not collected, the first of these collected tells a GPU split into instances from a GPU gone (mig_presence).
MIG_PRESENT = ("DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_MEMORY_TEMP")

# dcgm-exporter 4.5.3 and later with KUBERNETES_VIRTUAL_GPUS=true (transformation/process_metrics.go
# isPerProcessMetric, kubernetes.go Process): for a GPU (or MIG instance) pods hold, these fields come as the
# device's own series without pod labels plus one copy per holding pod whose value is the sum over that pod's
# processes (NVML per-process SM utilization, per-process memory in MiB; 0 for a pod with no process on it).
# Every other field of such a GPU comes once per pod, each copy the device's value. Before 4.5.3, and with the
# setting off, every copy of every field is the device's value.
PER_PROCESS_FIELDS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED")
# A group of several pods' sum or mean of those fields (a line per namespace or container) reads the pods' copies of
# each GPU they share, and which merge of them is the group's use depends on the exporter's version, which nothing in
# a scrape of the group tells (4.5.3 adds the device's own series, but per GPU, without the group) and no setting
# names: on 4.5.3 and later each copy is the pod's own share (their sum is the group's use); before 4.5.3 with the
# setting each is the device's whole value (one of them is). The CloudWatch forms add the copies (the per-pod set),
# and their widgets and alarms say so (per_process_copies_added); `gpudash verify` names the GPUs an exporter before
# 4.5.3 writes so (checks/exporter.py, "shared GPUs read whole"). The Prometheus forms tell the versions apart per GPU
# instance by the device's own series (promql._Device._shares_added): where it has one, the group's pods' copies
# added up, else the group's largest copy; exact on both.
PER_PROCESS_COPIES_ADDED = ("with exporter.virtual_gpus, the pods' copies of a GPU they share are added: on "
                            "dcgm-exporter 4.5.3 and later each is the pod's own share (the group's use), but before "
                            "4.5.3 each is the GPU's whole value, so a GPU k pods of the group share adds (and weighs) "
                            "k times (two pods on 39,200 MiB read 78,400, and gpudash verify warns of such GPUs: "
                            "shared GPUs read whole)")
# PER_PROCESS_COPIES_ADDED within the 1,024 characters of an alarm's description, beside its other notes
PER_PROCESS_COPIES_ADDED_ALARM = ("before dcgm-exporter 4.5.3 each sharing pod's copy is the GPU's whole value: a GPU k "
                                  "pods of the group share adds k times (4.5.3 on: each pod's share)")


def per_process_copies_added(query, virtual_gpus: bool) -> bool:
    """A query (model.Query) adding or averaging a field split per process over the copies of several pods (a line per
    namespace or container, not per pod) with exporter.virtual_gpus: PER_PROCESS_COPIES_ADDED says what it reads."""
    keys = set(query.by)
    return virtual_gpus and query.metric in PER_PROCESS_FIELDS and query.aggregation in ("sum", "avg") \
        and not query.whole_gpu and not query.over and "pod" not in keys and bool(keys & {"namespace", "container"})


# The labels that mode adds to a pod's copy besides pod, namespace and container: the pod's UID (always on a
# per-process copy, on the others with KUBERNETES_ENABLE_POD_UID) and the shared replica (`vgpu`, the `::N`
# of a time-sliced or MPS device id).
VIRTUAL_GPU_COPY_LABELS = ("pod_uid", "vgpu")
# Fields the exporter writes as several series per GPU, told apart by labels of their own, and how
# those series make the GPU's value: counts per XID code or per clock-event reason add up, over the exporter's
# window (_COUNT) or since it started (_TOTAL: counters, labelled `xid` and `clock_event` alike, dcgm-exporter's
# render tests); the
# health status per watched system, and the P2P status per peer GPU (p2p_status_collector.go: `peer_gpu`, and
# `link_status`, the status's name), take the worst; the last XID code ("latest": `err_code` and
# `err_msg` on exporters from 3.3.6, dcgm-exporter #309) is the series with the GPU's newest reading. The exporter
# writes one such series at a time, each new code a new series, so the code before stays within a look-back beside
# it: the largest of them read 119 for 90 s after the code fell to 79 (tests/integration/test_xid_code_falls.py).
FIELD_LABELS = {
    "DCGM_EXP_XID_ERRORS_COUNT": (("xid",), "sum"),
    "DCGM_EXP_CLOCK_EVENTS_COUNT": (("clock_event",), "sum"),
    "DCGM_EXP_XID_ERRORS_TOTAL": (("xid",), "sum"),
    "DCGM_EXP_CLOCK_EVENTS_TOTAL": (("clock_event",), "sum"),
    "DCGM_EXP_GPU_HEALTH_STATUS": (("health_watch", "health_error_code"), "max"),
    "DCGM_EXP_P2P_STATUS": (("peer_gpu", "link_status"), "max"),
    "DCGM_FI_DEV_XID_ERRORS": (("err_code", "err_msg"), "latest"),
}


# The exporter's cumulative counters whose series for a code appears at the code's first event, reading 1 (the XID
# errors and clock events since it started), each with its windowed count: no increase counts a series' first sample
# (Prometheus's, and the CloudWatch agent's delta, whose first reading is its baseline), so each code's first event on
# a GPU is in no panel, rule or alarm (a GPU's only XID 79 reads 0: tests/integration/test_xid_errors_total.py); the
# windowed count, a gauge, counts it (lint DF003).
FIRST_EVENT_UNCOUNTED = {"DCGM_EXP_XID_ERRORS_TOTAL": "DCGM_EXP_XID_ERRORS_COUNT",
                         "DCGM_EXP_CLOCK_EVENTS_TOTAL": "DCGM_EXP_CLOCK_EVENTS_COUNT"}


def own_labels_of(name: str) -> tuple[str, ...]:
    """The labels of a field's own (FIELD_LABELS) that split it into several series of one GPU; none for the others."""
    return FIELD_LABELS.get(name, ((), ""))[0]


# Of the fields that take the worst of their series, the own labels naming the state a series reads: the health
# check's error code ("DCGM_FR_OK" while the watch passes; gpu_health_collector.go) and the link status's name
# (p2p_status_collector.go). A watch or link that changes state is a new series, the one before ending: the worst is
# taken over the watches or links, each read from its newest series (successive_labels), or a failed watch's 20 stood
# beside its recovery for the look-back (tests/integration/test_state_label_changes.py).
STATE_NAMED_BY = {"DCGM_EXP_GPU_HEALTH_STATUS": ("health_error_code",), "DCGM_EXP_P2P_STATUS": ("link_status",)}


def successive_labels(name: str) -> tuple[str, ...]:
    """A field's own labels whose series follow one another (every own label of FIELD_LABELS' "latest", the XID
    code; STATE_NAMED_BY's of a worst-of field): the series with the newest reading among those that differ only in
    them is the GPU's (or its watch's, its link's) value."""
    own, how = FIELD_LABELS.get(name, ((), ""))
    return own if how == "latest" else STATE_NAMED_BY.get(name, ())


def dcgm_meaning(name: str) -> tuple[str | None, str | None]:
    """What DCGM says a field's readings are (the catalog of DCGM's fields, defaults/dcgm-fields.txt): (kind, unit),
    the Prometheus type of the meaning (a running total is a counter; a level, a state, a count over a window a gauge)
    and a key of units.UNITS, each None where the catalog does not say (a field it does not list, a string, a field
    DCGM's sources leave open): the counters CSV's type and help text decide those."""
    kind, unit = field_catalog().get(name, ("-", "-"))
    return (None if kind == "-" else kind), (None if unit == "-" else unit)


@dataclass(frozen=True)
class Metric:
    """One field of the counters CSV: name, Prometheus type (of the field's meaning: dcgm_meaning, else the CSV's),
    help text and unit; `csv_kind` is the type the CSV gives, which the exporter writes in `# TYPE`."""
    name: str
    kind: str
    help: str
    unit_key: str
    family: str
    line: int
    csv_kind: str = ""

    @property
    def exported_kind(self) -> str:
        """The type the exporter serves the field as (`# TYPE`) when it reads this CSV: the CSV's (gpudash does not
        ship the bundled CSV to the exporter, whose image's default CSV types some of its fields otherwise:
        image_served_kind)."""
        return self.csv_kind or self.kind

    @property
    def retyped(self) -> bool:
        """True when the exporter serves the field as the other of gauge and counter than its meaning: a level served
        as a counter, which the CloudWatch agent must not turn into deltas, or a running total served as a gauge, which
        it must (render/agent_otel.retyped; the agent's JSON path can do neither: lint CW018, AL016)."""
        return {self.kind, self.exported_kind} == {"gauge", "counter"}

    @property
    def unit(self) -> Unit:
        return UNITS[self.unit_key]

    @property
    def is_series(self) -> bool:
        """Label fields become labels on other series, not series of their own."""
        return self.kind != "label"

    @property
    def is_counter(self) -> bool:
        return self.kind == "counter"

    @property
    def per_instance(self) -> bool:
        """True for fields MIG reports per GPU instance; False for fields of the whole device."""
        return per_instance_field(self.name)

    @property
    def own_labels(self) -> tuple[str, ...]:
        """Labels that split this field into several series of one GPU (an XID code, ...)."""
        return own_labels_of(self.name)

    @property
    def across_own_labels(self) -> str:
        """How the series a field's own labels split one GPU into make the GPU's value ("" without)."""
        return FIELD_LABELS.get(self.name, ((), ""))[1]

    @property
    def per_gpu_aggregation(self) -> str:
        """How the series of one GPU combine into its value: a device field repeats on every MIG
        instance (counted once: max); instance memory adds up; instance activity averages."""
        if not self.per_instance:
            return "max"
        return "sum" if self.unit_key in ("mebibyte", "byte") else "avg"

    @property
    def charted_unit(self) -> Unit:
        """The unit of what a chart shows: counters are charted as per-second rates."""
        return UNITS[self.unit.rate_key] if self.is_counter else self.unit


@dataclass(frozen=True)
class Catalog:
    """The fields of a counters CSV, in file order."""
    source: str
    metrics: tuple[Metric, ...]
    repeats: tuple[str, ...] = ()  # "file:line: NAME repeats line N" for each repeated field
    # "file:line: NAME is typed gauge, but DCGM's NAME is a running total ...", for each field the CSV types the other
    # of gauge and counter than the catalog of DCGM's fields says (read as the catalog says: Metric.retyped)
    retypings: tuple[str, ...] = ()
    # "file:line: NAME is not a field the DCGM exporter knows ...", for each field the catalog of DCGM's fields lacks
    unknown: tuple[str, ...] = ()
    sha256: str = ""  # of the CSV's text: a build records the one it was made from

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {m.name: m for m in self.metrics})

    def __contains__(self, name: object) -> bool:
        return name in self._by_name  # type: ignore[attr-defined]

    def __iter__(self):
        return iter(self.metrics)

    def __len__(self) -> int:
        return len(self.metrics)

    def get(self, name: str) -> Metric:
        try:
            return self._by_name[name]  # type: ignore[attr-defined]
        except KeyError:
            raise KeyError(name) from None

    def mig_substitute(self, name: str) -> tuple[str, float] | None:
        """(field, factor) that stands in for `name` on MIG instances, when the CSV collects it."""
        substitute = MIG_SUBSTITUTES.get(name)
        return substitute if substitute and substitute[0] in self else None

    def mig_presence(self, name: str) -> str | None:
        """The field read beside presence field `name` on GPUs that may be split into MIG instances, where MIG does
        not report `name`: its stand-in (mig_substitute) where the CSV collects it, else the first MIG_PRESENT it
        collects as a gauge; None where MIG reports `name` or the CSV collects neither."""
        if name not in MIG_UNSUPPORTED:
            return None
        substitute = self.mig_substitute(name)
        return substitute[0] if substitute else next(
            (field for field in MIG_PRESENT if field in self and self.get(field).kind == "gauge"), None)

    def series(self) -> tuple[Metric, ...]:
        return tuple(m for m in self.metrics if m.is_series)

    def labels(self) -> tuple[Metric, ...]:
        return tuple(m for m in self.metrics if not m.is_series)

    def by_family(self) -> dict[str, list[Metric]]:
        grouped: dict[str, list[Metric]] = {}
        for metric in self.series():
            grouped.setdefault(metric.family, []).append(metric)
        return {f: grouped[f] for f in FAMILY_ORDER if f in grouped}


def _split_record(line: str) -> list[str]:
    """Split one CSV line as Go's encoding/csv does (the exporter's reader).

    A field is quoted only when `"` is its very first character; `""` inside it
    is a quote. A quote anywhere else is an error, as it is for the exporter.
    """
    fields: list[str] = []
    i, end = 0, len(line)
    while True:
        if i < end and line[i] == '"':
            i += 1
            parts = []
            while True:
                close = line.find('"', i)
                if close < 0:
                    raise ValueError("a quoted field is not closed")
                parts.append(line[i:close])
                i = close + 1
                if i < end and line[i] == '"':
                    parts.append('"')
                    i += 1
                    continue
                break
            fields.append("".join(parts))
            if i == end:
                return fields
            if line[i] != ",":
                raise ValueError(f'unexpected text after a quoted field at column {i + 1}')
            i += 1
        else:
            comma = line.find(",", i)
            field = line[i:] if comma < 0 else line[i:comma]
            if '"' in field:
                raise ValueError(f'a quote inside an unquoted field at column {i + field.index(chr(34)) + 1}')
            fields.append(field)
            if comma < 0:
                return fields
            i = comma + 1


def _retyping(name: str, typed: str, meant: str, unit_key: str) -> str:
    """What a CSV typing `name` `typed` where DCGM says `meant` makes gpudash do, in words."""
    what = f"a running total ({UNITS[unit_key].label})" if meant == "counter" else \
        f"a reading of its own, not a running total ({UNITS[unit_key].label})"
    agent = "makes it a counter, whose growth it publishes" if meant == "counter" else \
        "makes it a gauge, whose readings it publishes"
    return (f"{name} is typed {typed}, but DCGM's {name} is {what}: gpudash reads it as a {meant}; the exporter serves "
            f"it as a {typed}, the CloudWatch agent's OpenTelemetry pipeline gpudash writes {agent}, and "
            f"agent.pipeline: classic cannot (lint CW018, AL016); type it {meant} in this file and in the exporter's "
            f"(the ConfigMap its DCGM_EXPORTER_COLLECTORS names)")


def _unknown(name: str) -> str:
    """What a CSV naming a field the catalog of DCGM's fields lacks makes the exporter do, in words."""
    close = closest_field(name)
    return (f"{name} is not a field the DCGM exporter knows (go-dcgm's field names and its own DCGM_EXP_* fields, "
            "generator/defaults/dcgm-fields.txt): the exporter stops at start on a name it does not know ('could not "
            "find DCGM field'), so it serves no GPU metric at all; "
            + (f"did you mean {close}? " if close else "") + "fix the name here and in the exporter's counters "
            "file (the ConfigMap its DCGM_EXPORTER_COLLECTORS names); if your exporter is newer than that list and "
            "knows the field, `gpudash lint --disable CSV004`")


def _kind_from_help(name: str, kind: str, help_text: str, unit_key: str, where: str) -> str:
    """The Prometheus type of a field's meaning, for a field the catalog of DCGM's fields does not say: the CSV's,
    but a level typed counter (its help text gives a level's unit: a CSV's slip, the agent would publish its
    differences) is a gauge served so; a running total typed gauge (its help text says so) is refused."""
    total = _RUNNING_TOTAL.search(help_text)
    if kind == "gauge" and total and not UNITS[unit_key].level:
        raise InputError(f"{name} is typed gauge, but its help text says it is a running total ({total[0]!r}): "
                         "the exporter would serve it as a gauge, and the CloudWatch agent publish the total itself "
                         "where widgets and alarms read its growth: they would read all it counted since it began "
                         "(an alarm on its growth in 5 minutes fires for good once the total passes the "
                         "threshold)", where=where,
                         hint="type it counter, as NVIDIA's counters CSVs do, in this file and in the exporter's "
                              "(the ConfigMap its DCGM_EXPORTER_COLLECTORS names)")
    return "gauge" if kind == "counter" and UNITS[unit_key].level else kind


def image_served_kind(catalog: Catalog, name: str) -> str | None:
    """The type an exporter on its image's default counters CSV serves `name` as, where the catalog is the bundled CSV
    and types it otherwise (IMAGE_DEFAULT_KINDS); None where the catalog's CSV is the user's, or they agree."""
    served = IMAGE_DEFAULT_KINDS.get(name)
    if served is None or name not in catalog or catalog.get(name).kind == served:
        return None
    return served if _is_bundled(catalog.source) else None


def _is_bundled(source: str) -> bool:
    """Whether the CSV read from `source` is the bundled file itself, however its path is spelled (a symbolic link, a
    path through `..`); a copy of it is the user's."""
    try:
        return os.path.samefile(source, default_counters())
    except (OSError, ValueError):  # no such file (a catalog parsed from text): not the bundled one
        return False


def parse_counters(text: str, source: str = "<counters>") -> Catalog:
    """Parse counters CSV text. Raises InputError naming source:line on the first bad record."""
    if text.startswith("\ufeff"):
        # Go's encoding/csv, which the exporter reads its counters with, keeps the mark: "\ufeff# ..." is no comment
        # and "\ufeffDCGM_FI_..." no field it knows, and the exporter exits on either (it collects nothing).
        raise InputError("the file starts with a UTF-8 byte order mark (BOM): the DCGM exporter reads it as part of "
                         "the first line (Go's encoding/csv keeps it), which is then neither a comment nor a field "
                         "it knows, and it refuses the whole file and exits", where=f"{source}:1",
                         hint="save the file as UTF-8 without a BOM (e.g. sed -i '1s/^\\xEF\\xBB\\xBF//' FILE), in "
                              "this file and in the exporter's (the ConfigMap its DCGM_EXPORTER_COLLECTORS names)")
    metrics: list[Metric] = []
    seen: dict[str, Metric] = {}
    repeats: list[str] = []
    retypings: list[str] = []
    unknown: list[str] = []
    for number, raw in enumerate(text.split("\n"), start=1):
        raw = raw.removesuffix("\r")
        if "\r" in raw:
            raise InputError("a line ends with a carriage return alone (old Mac line endings): the exporter "
                             "would read the whole file as one line", where=f"{source}:{number}",
                             hint="convert the line endings to \\n, e.g. tr '\\r' '\\n' < in.csv > out.csv")
        if raw == "" or raw.startswith("#"):
            continue
        where = f"{source}:{number}"
        if "\ufeff" in raw.split(",", 2)[0] or "\ufeff" in (raw.split(",", 2) + [""])[1]:
            # a second file pasted in (cat a.csv b.csv) brings its mark along: invisible, read as part of a name
            raise InputError(f"the line holds a UTF-8 byte order mark (BOM, U+FEFF, invisible) at column "
                             f"{raw.index(chr(0xFEFF)) + 1}: the DCGM exporter reads it as part of the field's name "
                             f"or type, which it then does not know, and it refuses the whole file and exits",
                             where=where, hint="delete the mark (e.g. sed -i 's/\\xEF\\xBB\\xBF//g' FILE), in this file and "
                                               "in the exporter's (the ConfigMap its DCGM_EXPORTER_COLLECTORS names)")
        try:
            fields = [field.strip(" ") for field in _split_record(raw)]
        except ValueError as exc:
            raise InputError(f"not a CSV record: {exc}", where=where,
                             hint='a quoted field must start right after the comma: DCGM_FI_X, gauge,"a, b"') from None
        if len(fields) != 3:
            raise InputError(
                f"expected 3 fields (DCGM field, type, help), found {len(fields)}",
                where=where,
                hint='quote help text that contains a comma: DCGM_FI_X, gauge, "a, b"'
                if len(fields) > 3 else "write: DCGM_FIELD_NAME, gauge, help text",
            )
        name, kind, help_text = fields
        if not _NAME.match(name):
            raise InputError(f"field name {name!r} is not a DCGM field name", where=where,
                             hint="use the DCGM field's name, e.g. DCGM_FI_DEV_GPU_UTIL (numeric ids are not accepted)")
        if kind not in KINDS:
            raise InputError(f"type {kind!r} of {name} is not one of {', '.join(KINDS)}", where=where,
                             hint="use a lower-case Prometheus type from that list")
        if name in seen:
            first = seen[name]
            if first.csv_kind != kind:
                raise InputError(f"{name} is listed twice with different types ({first.csv_kind} at line "
                                 f"{first.line}, {kind} here)", where=where,
                                 hint="keep one of the two lines")
            # NVIDIA's own 1.x compatibility file repeats a field with the same type: the first line
            # wins, and `gpudash lint` reports the repeat (rule CSV001) so it gets cleaned up.
            repeats.append(f"{where}: {name} repeats line {first.line}; the first line wins")
            continue
        if name not in known_fields():
            unknown.append(f"{where}: {_unknown(name)}")
        kind_said, unit_said = dcgm_meaning(name)
        unit_key = unit_said or infer_unit(name, help_text)
        if kind_said and kind in ("gauge", "counter"):
            kind_meant = kind_said
            if kind != kind_said:
                retypings.append(f"{where}: {_retyping(name, kind, kind_said, unit_key)}")
        else:  # a field the catalog of DCGM's fields does not say: its type and help text decide
            kind_meant = _kind_from_help(name, kind, help_text, unit_key, where)
        metric = Metric(name=name, kind=kind_meant, help=help_text, unit_key=unit_key, family=infer_family(name),
                        line=number, csv_kind=kind)
        seen[name] = metric
        metrics.append(metric)
    if not metrics:
        raise InputError("no metrics: every line is blank or a comment", where=source,
                         hint="list at least one field, e.g. DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).")
    return Catalog(source=source, metrics=tuple(metrics), repeats=tuple(repeats), retypings=tuple(retypings),
                   unknown=tuple(unknown), sha256=hashlib.sha256(text.encode()).hexdigest())


def load_counters(path: Path) -> Catalog:
    hint = "pass --csv with the exporter's counters file, or omit it to use the settings' counters (else the bundled one)"
    data = read_bytes(path, "counters CSV", hint)
    return parse_counters(decode_utf8(data, path, "counters file", keep_bom=True), source=str(path))
