"""The build directory: the one place where the artifact set becomes files, and files become it again.

`encode` turns an `artifacts.Artifacts` into the files of a build, each artifact encoded once
(a CloudWatch body's text, stamped with its ownership hash, serves both its dashboard file and
the CloudFormation template). `write` puts them on disk whole or not at all, with a manifest of
sha256 sums: a run writes into a fresh sibling directory and swaps it into place, so a failed run
leaves the previous build untouched. A directory that holds files but no gpudash manifest is not
gpudash's, and is never replaced.
"""

from __future__ import annotations

import contextlib
import errno
from collections import Counter
import hashlib
import json
import os
import posixpath
import re
import stat
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from . import __version__, printed
from .alarm_texts import ALARM_STAND_INS, LABEL_STAND_INS, AlarmTexts, ClusterKinds, joined_by
from .build_folder import BUILD
from .errors import InputError, OutputError
from .folder_path import as_named, check_folder_path, named
from .reading import MAX_INPUT_BYTES, read_bytes, yaml_loader
from .staging import (claim, file_system_kinds, let_go, lock_of, remove_dead, remove_folder, remove_tree,
                      taking_turns)
from .serialize import (ascii_json, json_string, string_slot, to_json, to_json_and_line, to_json_filled,
                        to_json_strings, to_yaml, to_yaml_alike, to_yaml_many, writes_as_itself)

if TYPE_CHECKING:
    from .artifacts import Artifacts

MANIFEST = "manifest.json"
DASHBOARD_TYPE = "AWS::CloudWatch::Dashboard"


def cloudwatch_dashboard_file(name: str) -> str:
    return f"cloudwatch/dashboards/{name}.json"


def grafana_dashboard_file(uid: str) -> str:
    return f"grafana/{uid}.json"


def template_file(stack: str) -> str:
    """A CloudFormation template's file: its stack's name (names.cluster_stack, region_stack) with `.json`."""
    return f"cloudformation/{stack}.json"


# Files of the previous build found holding the new bytes of their path, by path: the sha256 of those bytes, and the
# file's status as it was read (None for a file changed just before: read again before it is shared, see `_held`)
Known = dict[str, tuple[str, "os.stat_result | None"]]
# How long before it is read a file's last change must be for its status to stand for its bytes (`_held`): on a file
# system that stamps change times in whole seconds or hundredths (no digits below the millisecond), SETTLED_NS; on one
# that stamps them from the kernel's clock (ext4, XFS, Btrfs, tmpfs: digits below the millisecond), whose tick is 1 to
# 10 ms, FINE_SETTLED_NS. A rebuild within 2 s of the build before (a benchmark's runs, a loop) found every file
# changed just before (linking it into the new build and removing the old one's name change its ctime) and read the
# whole build twice (1,000 clusters: 190 MB).
SETTLED_NS = 2_000_000_000
FINE_SETTLED_NS = 100_000_000
# How far a new file's change time may be from this machine's clock where change times tell (`_change_times_tell`):
# half the settle window, for a clock stamping below the millisecond and for a coarser one
CLOCK_SLACK_NS, COARSE_CLOCK_SLACK_NS = FINE_SETTLED_NS // 2, SETTLED_NS // 2


def _held(info: os.stat_result, now: int) -> os.stat_result | None:
    """`info` (a file's status as it was read, at `now` nanoseconds) where its last change (ctime) came at least a few
    ticks of the clock that stamps change times before: every change of the file's bytes after the read would then
    give it another ctime (see `_unchanged`). None for a file changed just before, which is read again before it is
    shared."""
    return info if _settled(info.st_ctime_ns, now) else None


def _settled(ctime_ns: int, now: int) -> bool:
    """A change time (`ctime_ns`) a few ticks of the clock that stamps it before `now` (see `_held`): a change of the
    file since `now` gives it another one."""
    return ctime_ns < now - (FINE_SETTLED_NS if ctime_ns % 1_000_000 else SETTLED_NS)


AGENT_FILE_PREFIX = "k8s/cwagent-prometheus-config-"


def built(path: str) -> str:
    """A build file as a hint names it: in the default output folder."""
    return f"{BUILD}/{path}"


def agent_file(cluster: str) -> str:
    """Where a cluster's agent ConfigMaps are written in a build (by cluster name)."""
    return f"{AGENT_FILE_PREFIX}{cluster}.yaml"


ALARMS_FILE = "cloudwatch/alarms.json"
ADDON_FILE = "cloudwatch/container-insights-addon.json"  # with cloudwatch.source: container-insights
PROVISIONING_FILE = "grafana/provisioning/gpudash-dashboards.yaml"
SIDECAR_FILE = "k8s/grafana-dashboards.yaml"
ADDITIONAL_SCRAPE_FILE = "prometheus/additional-scrape-configs.yaml"
SERVICE_MONITOR_FILE = "k8s/servicemonitor.yaml"
RULES_FILE = "prometheus/rules.yaml"
PROMETHEUS_RULE_FILE = "k8s/prometheusrule.yaml"
# How the build's k8s/ files are applied, wherever gpudash or its README names the command. None of their objects
# needs it (no CRD among them; the dashboards' ConfigMaps are cut and the PrometheusRules' groups bounded to fit
# client-side apply, lint GF011 and PR007 say where one does not; a cluster's agent ConfigMaps take 25 KB of annotations
# in the bundled build, 17 KB with 400 counters): server-side apply takes every one at any size, and refuses, naming
# it, to change a field another manager set otherwise (a person's kubectl edit, Helm), which client-side apply writes
# over without a word.
KUBECTL_APPLY = "kubectl apply --server-side"


def grafana_dashboard_texts(model: dict[str, Any]) -> tuple[bytes, bytes]:
    """A Grafana dashboard's file (indented: the copy people read and diff), and the text its sidecar ConfigMap
    carries: the file's JSON without indentation (keys sorted as in the file, characters as the file has them).
    Client-side `kubectl apply` copies the whole ConfigMap into an annotation the API server caps at 262,144 bytes,
    escaping each line break and quote again (GF011): the indentation was a tenth of the bundled all-metrics
    dashboard's annotation. Grafana reads either alike. One line and its line break: the YAML file writes it as a
    literal block, as it is (no quotes to escape, no folding). Both are written from one check of the model
    (serialize.to_json_and_line)."""
    return to_json_and_line(model)


def encode(artifacts: Artifacts) -> dict[str, bytes]:
    """Every file of the build, by path relative to it (the manifest aside)."""
    from .render.agent import configmaps
    from .render.agent_otel import OTEL_KEY
    from .dashboard_parts import part_said
    from .render.grafana_files import configmap

    files: dict[str, bytes] = {}
    sidecars = []
    for dashboard in artifacts.grafana:
        # (the texts the cut measured, where it did: dashboard_parts.cut)
        texts = dashboard.written_texts() or grafana_dashboard_texts(dashboard.model)
        files[grafana_dashboard_file(dashboard.uid)], sidecar = texts
        sidecars.append(configmap(dashboard.uid, sidecar, artifacts.grafana_folder["title"], artifacts.publisher,
                                  part_said(dashboard.model.get("title"))))
    files[PROVISIONING_FILE] = to_yaml(artifacts.grafana_provisioning)
    files[SIDECAR_FILE] = to_yaml(*sidecars)

    # each cluster's ConfigMaps written from one text per kind of cluster (AgentTexts), the others below. A fleet of
    # fewer clusters than AGENT_TEXTS_FROM writes each in full: a kind's text is made by making its ConfigMaps twice
    # more (with two stand-in names), which costs more than it saves for one or two clusters (a third of a one-cluster
    # build's encoding)
    agent_texts = AgentTexts() if len(artifacts.agents) >= AGENT_TEXTS_FROM else None
    agents = []
    for agent in artifacts.agents:
        text = agent_texts(agent) if agent_texts is not None else None
        if text is None:
            agents.append(agent)
        else:
            files[agent_file(agent.cluster)] = text
    for agent, text in zip(agents, agent_maps_files(agents)):
        files[agent_file(agent.cluster)] = text
    if artifacts.addon is not None:
        files[ADDON_FILE] = to_json(artifacts.addon)
    files[ADDITIONAL_SCRAPE_FILE] = to_yaml(artifacts.additional_scrape_configs)
    files[SERVICE_MONITOR_FILE] = to_yaml(artifacts.service_monitor, *artifacts.more_service_monitors)

    # each body's string is kept as its pieces, copied once into its file and once into its template
    body_string = BodyStrings(artifacts).pieces
    for item in artifacts.cloudwatch_dashboards:
        files[cloudwatch_dashboard_file(item.name)] = to_json_strings(
            {"DashboardName": json_string(item.name), "DashboardBody": body_string(item.name, item.held)})
    alarm_texts = AlarmTexts(artifacts.alarms, artifacts.alarm_resources, artifacts.alarm_references)
    files[ALARMS_FILE] = alarm_texts.alarms_file()
    for stack, template in artifacts.cloudformation.items():
        files[template_file(stack)] = template_bytes(template, body_string, alarm_texts.resource)

    # the rules and the PrometheusRules hold the same long expressions: each is read once for both. A large build's
    # child writes them meanwhile (artifacts.build): taken last, while the set holds the rules and objects they are of
    ahead = artifacts.rule_files
    if ahead is not None and ahead[0] is artifacts.prometheus_rules and ahead[1] is artifacts.prometheus_rule_objects:
        files[RULES_FILE], files[PROMETHEUS_RULE_FILE] = ahead[2]()
    else:
        files[RULES_FILE], files[PROMETHEUS_RULE_FILE] = to_yaml_many([(artifacts.prometheus_rules,),
                                                                       artifacts.prometheus_rule_objects])
    return files


AGENT_TEXTS_FROM = 3  # clusters a fleet has at least for its agents' ConfigMaps to be written from one text per kind


def agent_maps_files(agents: list[Any]) -> list[bytes]:
    """The file of each agent's ConfigMaps."""
    from .markers import kubernetes_publisher
    from .render.agent import configmaps
    from .render.agent_otel import OTEL_KEY

    scrape_texts: dict[int, bytes] = {}  # clusters share one scrape config: encoded once
    # The clusters' agent pipelines differ in a few values (name, Region, log group): written alike.
    pipelines = iter(to_yaml_alike([agent.otel for agent in agents if agent.otel is not None]))
    agent_maps = []
    for agent in agents:
        if id(agent.scrape) not in scrape_texts:
            scrape_texts[id(agent.scrape)] = to_yaml(agent.scrape)
        otel = None if agent.otel is None else (OTEL_KEY, next(pipelines))
        agent_maps.append(configmaps(agent.namespace, to_json(agent.config, ascii=True), scrape_texts[id(agent.scrape)],
                                     otel, kubernetes_publisher(agent.project, [agent.cluster])))
    # the clusters' ConfigMaps differ in the texts they carry: the rest is written once
    return to_yaml_many(agent_maps)


class AgentTexts:
    """Each cluster's agent ConfigMaps file written from one text per maker and kind of cluster (as AlarmTexts: the
    clusters alike but in their names and Prometheus labels, names of one length), where the two stand-in names'
    files split alike and the name is written as itself: a plain token YAML reads as text (never a number, a
    boolean...), found in the text only where it is the whole of a plain value (`key: name`, `- name`), after a
    `/` (a path, which YAML reads as text whatever follows), or right after a quote (in a quoted value, or the JSON
    text a ConfigMap holds), where a plain token is written as itself. Any other cluster's is written in full."""

    def __init__(self) -> None:
        self.kinds = ClusterKinds()
        self.references: dict[tuple[Any, ...], list[bytes] | None] = {}

    def __call__(self, agent: Any) -> bytes | None:
        if agent.made is None or agent.made[1].name != agent.cluster:
            return None
        maker, cluster = agent.made
        kind = self.kinds(cluster)
        if kind is None or not writes_as_itself(cluster.name):
            return None
        key = (maker, kind)
        pieces = self.references.get(key, False)
        if pieces is False:
            pieces = self.references[key] = _agent_pieces(maker, cluster)
        return None if pieces is None else cluster.name.encode().join(pieces)


# Where a name may be set in for a stand-in in a YAML text: the whole of a plain value, or after '/' or a quote
_WHOLE_VALUE = (b": ", b"- ")
_AFTER = (b"/", b'"', b"'")


def _agent_pieces(maker: Any, cluster: Any) -> list[bytes] | None:
    """The ConfigMaps file `maker` makes for the clusters alike `cluster`, split at their name (AgentTexts)."""
    splits = []
    for stand_in, label in zip(ALARM_STAND_INS, LABEL_STAND_INS):
        name = stand_in[:len(cluster.name)]
        try:
            made = maker(replace(cluster, name=name, prometheus_label=None if cluster.prometheus_label is None
                                 else label))
        except Exception:  # noqa: BLE001 - refused with a name it never has: each cluster's is written in full
            return None
        splits.append(agent_maps_files([made])[0].split(name.encode()))
    pieces = splits[0]
    if splits[1] != pieces:
        return None
    for before, after in zip(pieces, pieces[1:]):
        whole = before.endswith(_WHOLE_VALUE) and after.startswith(b"\n")
        if not whole and not before.endswith(_AFTER):
            return None
    return pieces


class BodyStrings:
    """Each CloudWatch dashboard's DashboardBody as the JSON string its file and template hold (`json_string` of
    `stamped_cloudwatch_text`), by name and body: the same body in its file and the template is escaped once, and
    only the string is kept (the texts of 1,000 clusters' bodies are tens of MB).

    The clusters' bodies of one dashboard differ in their cluster's name and their stamp (render.cloudwatch renders
    each from one ClusterBodies; `made`). For the clusters of one Region, the body is rendered once more with a
    stand-in name, then again with another, and its text split at the stand-in
    and the stamp: where both texts split into the same pieces, the name is written in no other way, and a cluster's
    text is those pieces joined with its name (a plain token: its escapes are itself). Its stamp hashes those
    pieces, and its string joins their escapes (both escapes, ensure_ascii's and a JSON string's, go character by
    character, so the escape of a text is its pieces' escapes, joined). Any other body is escaped whole; a body that
    is text already (a build read back) is its stamped text. `pieces` gives a string as the pieces it joins (the
    clusters' strings of one dashboard share them: only the joined files hold a copy)."""

    def __init__(self, artifacts: Artifacts):
        self.project = artifacts.project
        self.strings: dict[tuple[str, int], list[bytes]] = {}
        # name -> (the body as the set holds it, what renders it) of each body the renderer made
        self.made = {item.name: (item.held, item.made) for item in artifacts.cloudwatch_dashboards
                     if item.made is not None}
        # (ClusterBodies, Region) -> the split text (`_split_at_name`), or None where it is not one
        self.references: dict[tuple[Any, str], _SplitText | None] = {}
        # (ClusterBodies, Region) -> how many bodies were rendered from it: the text of one alone is not split (two
        # renders more, to save nothing: each dashboard of a one-cluster fleet)
        self.rendered = Counter((item.made[0], item.made[1].region) for item in artifacts.cloudwatch_dashboards
                                if item.made is not None)

    def __call__(self, name: str, body: Any) -> bytes:
        return b"".join(self.pieces(name, body))

    def pieces(self, name: str, body: Any) -> list[bytes]:
        """The string of the body, as the pieces it joins."""
        key = (name, id(body))
        if key not in self.strings:
            self.strings[key] = self._string(name, body)
        return self.strings[key]

    def _string(self, name: str, body: Any) -> list[bytes]:
        from .ownership import cloudwatch_stamp_of, stamped_cloudwatch_text
        from .render.cloudwatch import PLAIN_NAME, rendered

        if isinstance(body, str):  # a build read back holds each body as its stamped text
            return [json_string(body)]
        held, made = self.made.get(name, (None, None))
        reference = None
        # a body shows its cluster's name and Region, nothing else of it. The renderer's: the object the set holds (a
        # PendingBody, which its file and template are written from)
        key = (made[0], made[1].region) if held is body else None
        if key is not None and self.rendered[key] > 1 and PLAIN_NAME.fullmatch(made[1].name):
            bodies, cluster = made
            if key not in self.references:
                self.references[key] = _split_at_name(bodies, cluster)
            reference = self.references[key]
        if reference is None:
            return [json_string(stamped_cloudwatch_text(rendered(body), name, self.project))]
        pieces, stamp_at, escaped = reference
        value = made[1].name.encode()  # a plain token: its escapes are itself
        # the pieces before the stamp joined by the name, then those after it (the name is between all others)
        around = (value.join(pieces[:stamp_at]), value.join(pieces[stamp_at:]))
        stamp = json_string(ascii_json(cloudwatch_stamp_of(around, name, self.project).decode()))[1:-1]
        return [b'"', *joined_by(escaped[:stamp_at], value), stamp, *joined_by(escaped[stamp_at:], value), b'"']


# Two names that no definition holds, of other lengths and between them every kind of character a plain name holds
# (lower and upper case, digits, '-', '_', '.'), a body is rendered with in place of its cluster's
_STAND_INS = ("gpudash-stand-in-for-a-cluster-name", "Gpudash_Other.9")
# A body's canonical text split at its cluster's name and its stamp: the pieces between, the index of the piece after
# the stamp (the pieces before and after it are joined by the name everywhere else), each piece's escape (as
# `json_string(ascii_json(...))` writes it, without quotes)
_SplitText = tuple[list[bytes], int, list[bytes]]


def _split_at_name(bodies: Any, cluster: Any) -> _SplitText | None:
    """The text of the body `bodies` renders for the clusters of `cluster`'s Region, split at their name
    and its stamp; None when the texts of the two stand-in names do not split alike (a name is not written as
    itself), or one of them is found in the stamp or the stamp is not found once."""
    from .ownership import pending_cloudwatch_text

    splits = []
    for stand_in in _STAND_INS:
        pending = pending_cloudwatch_text(bodies.body(replace(cluster, name=stand_in)))
        if pending is None:
            return None
        text, at, end = pending
        value = stand_in.encode()
        if value in text[at:end]:
            return None
        before, after = text[:at].split(value), text[end:].split(value)
        splits.append((before, after))
    if splits[0] != splits[1]:
        return None
    before, after = splits[0]
    pieces = before + after
    return pieces, len(before), [json_string(ascii_json(piece.decode()))[1:-1] for piece in pieces]


def template_bytes(template: dict[str, Any], body_string: Callable[[str, Any], bytes | list[bytes]],
                   resource_text: Callable[[dict[str, Any]], list[bytes] | None] | None = None) -> bytes:
    """A CloudFormation template's file: each dashboard's DashboardBody written as the JSON string
    `body_string(name, body)` gives (a stamped body's text, escaped once for its file and the template; or the
    pieces it joins), and each other resource for which `resource_text` gives a text (AlarmTexts.resource, as the
    pieces it joins) written as that text."""
    strings: list[bytes] = []

    def slot(name: str, body: Any) -> str:
        strings.append(body_string(name, body))
        return string_slot(len(strings) - 1)

    def resource_slot(resource: dict[str, Any]) -> Any:
        text = resource_text(resource) if resource_text is not None else None
        if text is None:
            return resource
        strings.append(text)
        return string_slot(len(strings) - 1)

    return to_json_filled(_with_body_texts(template, slot, resource_slot), strings,
                          lambda: _with_body_texts(template, lambda name, body: json.loads(_whole(body_string(name, body)))))


def _whole(text: bytes | list[bytes]) -> bytes:
    return text if isinstance(text, bytes) else b"".join(text)


def _with_body_texts(template: dict[str, Any], body_text, other=None) -> dict[str, Any]:
    """The template as CloudFormation takes it: each dashboard's DashboardBody as its text (`body_text(name, body)`,
    or what stands for it), each other resource as `other(resource)` gives it (itself, or what stands for its text)."""
    resources = {}
    for logical_id, resource in template.get("Resources", {}).items():
        if resource.get("Type") == DASHBOARD_TYPE:
            properties = resource["Properties"]
            text = body_text(properties["DashboardName"], properties["DashboardBody"])
            resource = {**resource, "Properties": {**properties, "DashboardBody": text}}
        elif other is not None:
            resource = other(resource)
        resources[logical_id] = resource
    return {**template, "Resources": resources}


def artifacts_record(artifacts: Artifacts) -> dict[str, Any]:
    """What the files alone do not say, kept in the manifest so that `read` gives back exactly the set
    that was written: each CloudWatch dashboard's Region (a dashboard of text widgets names none), the
    primary Region, the Grafana folder, the name prefixes that bound what publishing may prune, and what
    the build was made from (what it left out and why, the counters CSV's sha256), which lint judges."""
    return {"primary_region": artifacts.primary_region,
            "cloudwatch_dashboards": {d.name: d.region for d in artifacts.cloudwatch_dashboards},
            "cloudformation": list(artifacts.cloudformation),
            # (kubectl apply leaves an object the file no longer holds: the next build names those it drops)
            "prometheus_rules": [f"{o['metadata']['namespace']}/{o['metadata']['name']}"
                                 for o in artifacts.prometheus_rule_objects],
            "grafana": [d.uid for d in artifacts.grafana],
            "agents": [a.cluster for a in artifacts.agents],
            # the settings it was made for: what the next build over it may call dropped (made_for_the_same)
            "publisher": {"project": artifacts.project, "clusters": list(artifacts.clusters)},
            "grafana_folder": artifacts.grafana_folder,
            "grafana_uid_prefix": artifacts.grafana_uid_prefix,
            "alarm_prefix": artifacts.alarm_prefix,
            "dashboard_prefix": artifacts.dashboard_prefix,
            "notes": [{"rule": n.rule, "where": n.where, "message": n.message} for n in artifacts.notes],
            "counters_sha256": artifacts.counters_sha256,
            # what the Grafana dashboards were made from: verify reads the uids above where it is what it would make
            "grafana_made_from": artifacts.grafana_made_from}


def with_manifest(files: dict[str, bytes], made_with: dict[str, str] | None = None,
                  record: dict[str, Any] | None = None) -> dict[str, bytes]:
    """The files plus manifest.json: their sha256 sums, the settings the build was made with
    (`made_with`, from `settings_record`), which `lint --from` needs to judge the build, and the
    artifacts' `record` (`artifacts_record`), which `read` needs to give the set back whole."""
    digests = {path: hashlib.sha256(data).hexdigest() for path, data in files.items()}
    return {**files, MANIFEST: manifest_bytes(digests, made_with, record)}


def manifest_bytes(digests: dict[str, str], made_with: dict[str, str] | None = None,
                   record: dict[str, Any] | None = None) -> bytes:
    """manifest.json of the files whose sha256 sums are `digests` (see `with_manifest`)."""
    manifest: dict[str, object] = {"generator": f"gpudash {__version__}"}
    if made_with:
        manifest["settings"] = made_with
    if record is not None:
        manifest["artifacts"] = record
    manifest["files"] = dict(sorted(digests.items()))
    return to_json(manifest)


def settings_record(settings) -> dict[str, object]:
    """A sha256 of the build's settings (defaults filled in), and whether they were the bundled defaults.

    The path the settings were read from is left out on purpose: the same file named another way
    (`--config ./gpudash.yaml`, an absolute path, another working directory) must give the same build."""
    from .settings import BUNDLED_SOURCE

    content = json.dumps(settings.raw, sort_keys=True, default=str).encode()
    return {"bundled": settings.source == BUNDLED_SOURCE, "sha256": hashlib.sha256(content).hexdigest()}


def _owned(out: Path) -> bool:
    """`out` may be replaced: it does not exist, is an empty folder, or holds gpudash's manifest."""
    return not out.exists() or (out.is_dir() and (not any(out.iterdir()) or gpudash_manifest(out / MANIFEST)))


def previous_record(out: Path) -> dict[str, Any]:
    """The artifacts' record (artifacts_record) of the build in `out`, read before it is replaced: empty when `out`
    holds no gpudash build or its manifest records none."""
    manifest = gpudash_manifest(out / MANIFEST) if out.is_dir() else None
    record = manifest.get("artifacts") if manifest else None
    return record if isinstance(record, dict) else {}


def previous_stacks(record: dict[str, Any]) -> list[str]:
    """The CloudFormation stacks the previous build wrote (its `record`, previous_record)."""
    stacks = record.get("cloudformation")
    return [stack for stack in stacks if isinstance(stack, str)] if isinstance(stacks, list) else []


def made_for_the_same(record: dict[str, Any], project: str, clusters: tuple[str, ...] | list[str]) -> bool:
    """Whether the previous build (its `record`, previous_record) was made for the settings of `project` and
    `clusters` this build is made for: the record names that project and a cluster of these (its "publisher"). The
    build of another project, or of another settings file of the project for other clusters, is another
    deployment's: what it wrote and this build does not is not what this one drops. A build made before the record
    named them tells it by its CloudFormation stacks (each part's name holds the project and the cluster alone,
    names.cluster_stack), else by the clusters its agents' configurations were written for."""
    from .names import cluster_stack
    from .render.cloudformation import MAX_PARTS

    recorded = record.get("publisher")
    if isinstance(recorded, dict) and isinstance(recorded.get("clusters"), list):
        return recorded.get("project") == (project or "") and not set(recorded["clusters"]).isdisjoint(clusters)
    previous = previous_stacks(record)
    if previous:
        return not set(previous).isdisjoint(cluster_stack(cluster, project or None, part) for cluster in clusters
                                            for part in range(1, MAX_PARTS + 1))
    agents = record.get("agents")
    return isinstance(agents, list) and not set(agents).isdisjoint(clusters)


def previous_prometheus_rules(out: Path, record: dict[str, Any]) -> list[tuple[str, str]]:
    """(namespace, name) of each PrometheusRule the previous build in `out` wrote: its `record` (previous_record), or,
    for a build made before the record held them, its PROMETHEUS_RULE_FILE as gpudash wrote it (the sha256 its
    manifest records; each object's metadata keys at two spaces, as gpudash writes them). kubectl apply leaves an
    object the file no longer holds, so generate names those the new build drops."""
    from .names import is_prometheus_rule_name

    if not record:
        return []
    named = record.get("prometheus_rules")
    if isinstance(named, list):
        pairs = [tuple(item.split("/", 1)) for item in named if isinstance(item, str) and "/" in item]
        return [(namespace, name) for namespace, name in pairs if is_prometheus_rule_name(name)]
    try:  # (a folder, a FIFO or a socket in its place is not read: InputError)
        data = read_bytes(out / PROMETHEUS_RULE_FILE, "the previous build's PrometheusRules", "")
    except InputError:
        return []
    written = (gpudash_manifest(out / MANIFEST) or {}).get("files")
    if not isinstance(written, dict) or written.get(PROMETHEUS_RULE_FILE) != hashlib.sha256(data).hexdigest():
        return []  # changed since gpudash wrote it (a person's object added, a namespace edited): no evidence
    text = data.decode("utf-8", errors="replace")
    found = ((_plain_scalar(re.search(r"^  namespace: (\S+)$", part, re.M)),
              _plain_scalar(re.search(r"^  name: (\S+)$", part, re.M)))
             for part in re.split(r"^---$", text, flags=re.M))
    # only names gpudash gives its objects: a name a person wrote into the file is never offered for deletion
    return [(namespace, name) for namespace, name in found if namespace and name and is_prometheus_rule_name(name)]


def previous_dashboard_configmaps(record: dict[str, Any], uids: set[str] | frozenset[str],
                                  parts: tuple[dict[str, int], str] = ({}, "")) -> list[str]:
    """The names of the dashboard ConfigMaps (SIDECAR_FILE) the previous build (its `record`, previous_record) wrote for
    a dashboard this build, of dashboard uids `uids`, does not write (a definition removed or renamed, a new
    grafana.uid_prefix, a dashboard cut into fewer parts): kubectl apply leaves each, and Grafana's sidecar goes on
    loading its dashboard. Only uids of the form gpudash gives under the prefix that build recorded are named, and a
    part beyond those a dashboard of this build is cut into (`parts`: dashboard_parts.part_counts of this build and its
    uid prefix), a grafanalib dashboard's too."""
    from .dashboard_parts import part_no_longer_made
    from .names import dashboard_configmap_name, is_grafana_uid

    written, prefix = record.get("grafana"), record.get("grafana_uid_prefix")
    if not isinstance(written, list) or not isinstance(prefix, str):
        return []
    counts, uid_prefix = parts
    return [dashboard_configmap_name(uid) for uid in written
            if isinstance(uid, str) and uid not in uids
            and (is_grafana_uid(uid, prefix) or part_no_longer_made(uid, counts, uid_prefix) is not None)]


def _plain_scalar(match: re.Match[str] | None) -> str | None:
    """The string a YAML scalar written on one line holds (quoted as the dumper quotes a namespace such as '123', which
    YAML would read as a number, or plain), or None for no match or anything else."""
    import yaml

    if match is None:
        return None
    try:
        node = yaml.compose(match[1], Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    return node.value if isinstance(node, yaml.ScalarNode) and node.value else None


# A template resource's type: the kind names.logical_id takes, and the property holding its name
_NAMED = {"AWS::CloudWatch::Alarm": ("Alarm", "AlarmName"), DASHBOARD_TYPE: ("Dashboard", "DashboardName"),
          "AWS::Logs::LogGroup": ("LogGroup", "LogGroupName")}


def renamed_resources(out: Path, templates: dict[str, dict[str, Any]], files: dict[str, bytes],
                      previous: list[str], known: Known | None = None) -> list[tuple[str, str, str, str]]:
    """(stack, resource name, its logical id in the build in `out`, its id now) of each resource of the stacks
    `previous` (that build's, previous_stacks) that the build declared under another id in the same stack: deployed,
    CloudFormation creates it anew under its name and then deletes the old id's resource, which deletes it (a log
    group's creation fails). Ids depend on names alone (names.logical_id) but older builds gave a name its plain words
    (names.plain_logical_id), so a template is read only when its bytes changed and it holds a resource of another
    id. Each template found holding its new bytes has their sha256 put into `known`, as `not_as_written` puts it (the
    check of the previous build for edits then reads it only if it changed since: the 71 MB of 1,000 clusters'
    templates are read once)."""
    from .names import plain_logical_id

    read_at = time.time_ns()
    stacks = sorted(set(previous) & set(templates))
    found: dict[str, list[tuple[str, str, str, str]]] = {}

    def compare(stack: str) -> None:  # read in two lanes, as `not_as_written` reads
        relative = template_file(stack)
        try:
            data, info = _read_regular(out / relative)
        except (OSError, InputError):
            return  # no template to compare: nothing said of it (the look for edits says what it is)
        if data == files.get(relative):
            if known is not None and info is not None:
                known[relative] = hashlib.sha256(data).hexdigest(), _held(info, read_at)
            return
        now = {(kind, name): id_ for id_, kind, name in _named(templates[stack]["Resources"])}
        if all(id_ == plain_logical_id(kind, name) for (kind, name), id_ in now.items()):
            return
        try:
            resources = json.loads(data)["Resources"]
        except (ValueError, KeyError, TypeError, RecursionError):
            return
        found[stack] = [(stack, name, was, now[(kind, name)]) for was, kind, name in
                        _named(resources if isinstance(resources, dict) else {}) if now.get((kind, name), was) != was]

    _in_two_lanes(stacks, compare, "gpudash-read")
    return [item for stack in stacks for item in found.get(stack, ())]


def _read_regular(path: Path) -> tuple[bytes, os.stat_result | None]:
    """The bytes of the file at `path`, and its status as it was read when it is a regular file reached through no
    link at its end (None for any other: a link's target is read as an input file is, reading.read_bytes, which
    refuses a named pipe and reads a device only so far: InputError; and it is never shared as the file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return _read_other(path), None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return _read_other(path), None
        return _read_fd(fd, info.st_size), info
    finally:
        os.close(fd)


def _read_other(path: Path) -> bytes:
    """A file of the previous build that is not a regular file of its own (a link, a named pipe, a device), as an input
    file is read (InputError for a named pipe, a device past reading.MAX_INPUT_BYTES; OSError as it comes)."""
    return read_bytes(path, "a file of the previous build", "")


def _read_fd(fd: int, size: int, at_most: int | None = None) -> bytes:
    """The bytes of the open regular file `fd` from where it stands to its end (`size`: its size when last seen, read
    in one call if it still holds that many), or its first `at_most` bytes: read with os.read alone, where a buffered
    stream around the descriptor would first ask it for its status, whether it is a terminal, and its position."""
    want = size + 1 if at_most is None else at_most
    chunks = []
    while want > 0:
        chunk = os.read(fd, want)
        if not chunk:
            break
        chunks.append(chunk)
        if at_most is None:
            want = 1 << 20  # the file grew since it was seen: on to its end
        else:
            want -= len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


class PreviousParts:
    """Where the build in `out` (its stacks `previous`, previous_stacks) put each resource: render/cloudformation's
    Placed, asked with a cluster's stack names by part for a cluster whose resources do not fit one template. Each
    template is read once, when asked; one not there or not a template places nothing."""

    def __init__(self, out: Path, previous: list[str]) -> None:
        self.out, self.previous = out, set(previous)
        self._read: dict[str, list[tuple[str, str]]] = {}

    def __call__(self, stacks: list[str]) -> dict[tuple[str, str], int]:
        placed: dict[tuple[str, str], int] = {}
        for part, stack in enumerate(stacks, 1):
            for key in self.declared(stack):
                placed.setdefault(key, part)
        return placed

    def declared(self, stack: str) -> list[tuple[str, str]]:
        """The (kind, name) of each dashboard, alarm and log group the build's template of `stack` declares."""
        if stack not in self._read:
            resources = _template_resources(self.out / template_file(stack)) if stack in self.previous else {}
            self._read[stack] = [(kind, name) for _, kind, name in _named(resources)]
        return self._read[stack]


def moved_resources(templates: dict[str, dict[str, Any]], parts: PreviousParts) -> list[tuple[str, str, str]]:
    """(resource name, its stack in the build before, its stack now) of each resource that moves between stacks:
    deployed, one stack's update deletes it and another's creates it. Only the stacks that can lose one are read:
    those of the build before no longer written and those of clusters split now (cloudformation.split_cluster)."""
    split = {stack for stack, template in templates.items()
             if "Part" in template.get("Metadata", {}).get("gpudash", {})}
    read = sorted((parts.previous - set(templates)) | (parts.previous & split))
    if not read:
        return []
    now = {(kind, name): stack for stack, template in templates.items()
           for _, kind, name in _named(template["Resources"])}
    return sorted(((name, stack, now[(kind, name)]) for stack in read for kind, name in parts.declared(stack)
                   if now.get((kind, name), stack) != stack), key=lambda moved: (moved[1], moved[0]))


def _template_resources(path: Path) -> dict[str, Any]:
    """The Resources of the template at `path`, or none when it is not there or not a template."""
    try:
        resources = json.loads(_read_regular(path)[0])["Resources"]
    except (OSError, InputError, ValueError, KeyError, TypeError, RecursionError):
        return {}
    return resources if isinstance(resources, dict) else {}


def _named(resources: dict[str, Any]):
    """(logical id, kind as names.logical_id takes it, name) of each dashboard, alarm and log group of `resources`."""
    for id_, resource in resources.items():
        kind = resource.get("Type") if isinstance(resource, dict) else None
        properties = resource.get("Properties") if kind in _NAMED else None
        name = properties.get(_NAMED[kind][1]) if isinstance(properties, dict) else None
        if isinstance(name, str):
            yield id_, _NAMED[kind][0], name


def gpudash_manifest(path: Path) -> dict | None:
    """The manifest.json that gpudash wrote (its `generator` names gpudash): another tool's manifest.json
    (a web app's, a package's) is no evidence that the folder is gpudash's to replace."""
    try:  # (a named pipe or a device in its place is no manifest: read as an input file is, never without end)
        manifest = json.loads(_read_regular(path)[0])
    except (OSError, InputError, ValueError, RecursionError):
        return None
    if isinstance(manifest, dict) and str(manifest.get("generator", "")).startswith("gpudash "):
        return manifest
    return None


def not_as_written(out: Path, files: dict[str, bytes] | None = None,
                   known: Known | None = None) -> tuple[list[str], list[str]]:
    """What replacing the build in `out` would lose: (files its manifest does not list: a user's
    kustomization.yaml, a .git folder; files whose content is not what gpudash wrote: edited by hand).
    A file the manifest lists that is gone, or turned into a symlink, loses nothing (the link's target is
    never written), nor does a folder of the build turned into a link; any other link to a folder, which the build
    would drop, is a file it does not list. Only a folder holding gpudash's manifest is asked (`_owned` refuses the
    others). With the new build's `files`, each file that holds exactly the new bytes of its path has their sha256
    put into `known` (the new manifest lists it: each file's bytes are hashed once), with its status as it was read
    unless it changed just before (see `_held`)."""
    manifest = gpudash_manifest(out / MANIFEST) if out.is_dir() else None
    listed = manifest.get("files") if manifest else None
    if not isinstance(listed, dict):
        return [], []
    extra: list[str] = []
    to_read: list[tuple[str, str]] = []  # (path, path inside the build) of each listed file: read once listed
    built = _folders_of(listed)  # the build's folders ("" for the build folder itself)
    read_at = time.time_ns()  # a file changed a few ticks before this is read once (see `_held`)
    # each folder listed once (a folder that cannot be listed raises, never reads as empty), each entry's kind told by
    # the listing itself: no call per file but the reading of a listed one
    folders = [(str(out), "")]
    while folders:
        folder, inside = folders.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                relative = inside + entry.name
                link = entry.is_symlink()
                if _is_folder(entry):
                    if not link:
                        folders.append((entry.path, relative + "/"))
                        continue
                    # a link to a folder is not followed: the replaced build would drop the link (one standing for a
                    # folder of the build loses nothing, as a link standing for a listed file)
                    if relative in built:
                        continue
                if relative == MANIFEST:
                    continue
                if relative not in listed:
                    extra.append(relative)
                elif not link:
                    to_read.append((entry.path, relative))
    found: dict[str, str | None] = {}

    def read(item: tuple[str, str]) -> None:
        found[item[1]] = _digest(item[0], item[1], files, known, read_at, unreadable_raises=True)

    _in_two_lanes(to_read, read, "gpudash-read")
    # a file gone between the listing and its reading (removed, or moved away by a writer gpudash does not take turns
    # with) loses nothing, as one gone before it: not an edit
    edited = [relative for path, relative in to_read if found[relative] != listed[relative]
              and (found[relative] is not None or os.path.lexists(path))]
    return sorted(extra), sorted(edited)


def _is_folder(entry: os.DirEntry) -> bool:
    """A folder, or a link to one, as os.walk tells them: a link whose target cannot be read (a loop of links) is not."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def walk(top: Path):
    """os.walk that stops at a folder it cannot list (permissions, a path too long to name, an I/O error):
    os.walk's default skips such a folder without a word, and what it holds would be read as not there."""
    def fail(exc: OSError) -> None:
        raise exc
    return os.walk(top, onerror=fail)


def unreadable(exc: OSError, top: Path) -> str:
    """`exc` (from `walk(top)`) said of the folder that could not be read, named inside `top`."""
    name = os.path.relpath(exc.filename, top) if isinstance(exc.filename, str) else str(top)
    return f"{exc.strerror or exc}: {printed.path(name if len(name) <= 120 else '...' + name[-117:])}"


def _digest(path: str, relative: str = "", files: dict[str, bytes] | None = None,
            known: Known | None = None, now: int = 0, unreadable_raises: bool = False) -> str | None:
    """sha256 of a regular file (None for anything else: a FIFO is never opened, it would wait). A file of the size
    of files[relative] is read whole and compared: when it holds those bytes, their sha256 goes into `known`, with
    the file's status as it was read (at `now`, nanoseconds) where `_held` keeps it. A file `known`
    holds with a status it still has (read before and found holding those bytes: `renamed_resources`) is not read
    again (see `_unchanged`). With `unreadable_raises`, a file there that cannot be opened (its permissions) raises
    the OSError: nothing shows whether it changed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if unreadable_raises and exc.errno in (errno.EACCES, errno.EPERM, errno.EIO):
            raise
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        digest, held = known.get(relative, (None, None)) if known is not None else (None, None)
        if held is not None and _same_status(info, held):
            return digest
        data = files.get(relative) if files is not None and known is not None else None
        if data is not None and info.st_size == len(data):
            held = _read_fd(fd, info.st_size)
            if held == data:
                digest = hashlib.sha256(data).hexdigest()
                known[relative] = digest, _held(info, now)
                return digest
            return hashlib.sha256(held).hexdigest()
        with open(fd, "rb", closefd=False) as stream:
            return hashlib.file_digest(stream, "sha256").hexdigest()
    finally:
        os.close(fd)


def _digests(paths: list[str]) -> dict[str, str | None]:
    """`_digest` of each path (`_in_two_lanes`)."""
    found: dict[str, str | None] = {}

    def read(path: str) -> None:
        found[path] = _digest(path)

    _in_two_lanes(paths, read, "gpudash-reread")
    return found


# Fewer files than this are read by one thread: a second lane's start costs more than it could take over
LANES_FROM = 16


def _in_two_lanes(items: list, work: Callable[[Any], None], name: str) -> None:
    """`work(item)` for each item, in two lanes, this thread and one other (thread `name`), each taking every other
    item: reading a file and hashing it run without the interpreter's lock, so the lanes share the machine's CPUs.
    Fewer than LANES_FROM items are worked in this thread. A failure in either lane (an interruption in this one
    included) stops the other at its next item, and is raised here once both have stopped."""
    if len(items) < LANES_FROM:
        for item in items:
            work(item)
        return
    failures: list[BaseException] = []

    def lane(part: list) -> None:
        try:
            for item in part:
                if failures:
                    return
                work(item)
        except BaseException as exc:  # noqa: BLE001 - raised by the thread that waits for both lanes
            failures.append(exc)

    other = threading.Thread(target=lane, args=(items[1::2],), name=name)
    other.start()
    try:
        lane(items[::2])
    finally:
        other.join()
    if failures:
        raise failures[0]


def _fill(folder: Path, files: dict[str, bytes], manifest: Callable[[dict[str, str]], bytes],
          previous: Path | None = None, stop: list[int] | None = None, known: Known | None = None) -> set[str]:
    """Write `files` into `folder`, then the manifest made from their sha256 sums. A file the previous
    build holds with exactly these bytes (and nothing else holds) is hard-linked from it instead: the
    previous build is left as it was, and linking a file costs a fraction of creating one. Returns the paths
    linked (the new build holds those files themselves: linking changed their change time, and a change since is in
    the new build, not lost with the previous one).

    The files are written in two lanes, this thread and one other, each holding whole folders (the
    kernel creates one file at a time in a folder): creating a file is almost all kernel time, which
    runs without the interpreter's lock, and so is hashing it; fewer than LANES_FROM files, in this thread alone. A failure in either lane stops both
    and is raised here once both have stopped; so is a signal held meanwhile (`stop`), as _Stopped. `known`: the
    sha256 of some files' bytes, already worked out while the previous build was read (`not_as_written`)."""
    stop = [] if stop is None else stop
    known = {} if known is None else known
    by_folder: dict[str, list[str]] = {}
    for relative in files:
        by_folder.setdefault(os.path.dirname(relative), []).append(relative)
    for parent in by_folder:  # each folder once, before either lane writes into it
        os.makedirs(os.path.join(folder, parent), exist_ok=True)
    lanes: tuple[list[str], list[str]] = ([], [])
    for paths in sorted(by_folder.values(), key=len, reverse=True):  # the largest folders first
        min(lanes, key=len).extend(paths)
    own_folders: dict[str, bool] = {}
    mode = _new_file_mode()
    digests: dict[str, str] = {}
    linked: set[str] = set()
    failures: list[BaseException] = []

    def write(paths: list[str]) -> None:
        try:
            for relative in paths:
                if failures or stop:  # the other lane failed, or a signal came: the build is abandoned
                    return
                data = files[relative]
                digest, held = known.get(relative, (None, None))
                if _put(folder, relative, data, previous, own_folders, mode, held):
                    linked.add(relative)
                digests[relative] = digest or hashlib.sha256(data).hexdigest()
        except BaseException as exc:  # noqa: BLE001 - handed to the thread that waits for this lane
            failures.append(exc)

    if len(files) < LANES_FROM:  # a small build: starting the other lane costs more than it would take over
        write(lanes[0] + lanes[1])
    else:
        other = threading.Thread(target=write, args=(lanes[1],), name="gpudash-write")
        other.start()
        try:
            write(lanes[0])
        finally:
            other.join()
    if failures:
        raise failures[0]
    if stop:
        raise _Stopped
    if _put(folder, MANIFEST, manifest(digests), previous, own_folders, mode):
        linked.add(MANIFEST)
    return linked


def _put(folder: Path, relative: str, data: bytes, previous: Path | None, own_folders: dict[str, bool],
         mode: int, held: os.stat_result | None = None) -> bool:
    """One file of the build: linked from the previous build when it holds it unchanged (True), else created. `held`:
    the status the previous build's file had when it was read and found holding `data` (`not_as_written`)."""
    target = os.path.join(folder, relative)
    if previous is not None and _own_folder(previous, os.path.dirname(relative), own_folders) \
            and _unchanged(os.path.join(previous, relative), data, mode, held):
        try:
            os.link(os.path.join(previous, relative), target, follow_symlinks=False)
            return True
        except OSError:
            pass  # links not allowed here: write it
    _create(target, data)
    return False


def _own_folder(previous: Path, parent: str, known: dict[str, bool]) -> bool:
    """`parent` is a folder of the previous build reached through no symlink: a file in it is the build's
    own, not one elsewhere that a symlinked folder leads to (linking that would share it with the new
    build). Each folder is looked at once (`known`)."""
    if parent not in known:
        try:
            known[parent] = not parent or (_own_folder(previous, os.path.dirname(parent), known)
                                           and stat.S_ISDIR(os.lstat(os.path.join(previous, parent)).st_mode))
        except OSError:
            known[parent] = False
    return known[parent]


_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC


def _create(path: str, data: bytes) -> None:
    """A new file holding `data`, made with the fewest system calls: open, write, close (no buffered
    stream, whose isatty, lseek and fstat calls cost as much again). The mode is the one `open` gives
    (0o666 less the umask); O_EXCL because the staging folder is new and holds nothing yet."""
    fd = os.open(path, _CREATE_FLAGS, 0o666)
    try:
        written = os.write(fd, data)
        while written < len(data):  # a short write (rare on a regular file): write the rest
            written += os.write(fd, memoryview(data)[written:])
    finally:
        os.close(fd)


def _new_file_mode() -> int:
    return 0o666 & ~_umask()


def _umask() -> int:
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def _unchanged(path: str, data: bytes, mode: int, held: os.stat_result | None = None) -> bool:
    """A regular file (not a link) of the current user, with the mode a new file gets, that only this
    path names, holding exactly `data`: what the new build may share with the previous one.

    With `held` (its status when it was read and found holding `data`), a file whose status is still that one is
    not read again: every change of its bytes since would have given it another change time (ctime, which no
    call can set back), and a file changed just before it was read is given no `held` (`_held`: a change
    within one tick of the clock that stamps ctimes could leave it equal)."""
    if held is not None:
        try:
            info = os.lstat(path)
        except OSError:
            return False
        if _same_status(info, held):
            return _shareable(info, data, mode)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if not _shareable(info, data, mode):
            return False
        return _read_fd(fd, info.st_size, len(data) + 1) == data
    except OSError:
        return False
    finally:
        os.close(fd)


def _same_status(info: os.stat_result, held: os.stat_result) -> bool:
    """One file with the status it had when it was read (`held`): every change of its bytes since would have given it
    another change time (see `_unchanged`)."""
    return (info.st_ino, info.st_dev, info.st_ctime_ns, info.st_mtime_ns, info.st_size, info.st_mode) == \
        (held.st_ino, held.st_dev, held.st_ctime_ns, held.st_mtime_ns, held.st_size, held.st_mode)


def _shareable(info: os.stat_result, data: bytes, mode: int) -> bool:
    """A regular file of the current user that only one path names, with the mode a new file gets and the size of
    `data`."""
    return (stat.S_ISREG(info.st_mode) and info.st_nlink == 1 and info.st_uid == os.geteuid()
            and stat.S_IMODE(info.st_mode) == mode and info.st_size == len(data))


def write(out: Path, artifacts: Artifacts, made_with: dict[str, str] | None = None) -> dict[str, bytes]:
    """Replace `out` with the build of `artifacts` (plus the manifest), atomically; returns its files."""
    files = encode(artifacts)
    write_files(out, files, made_with, artifacts_record(artifacts))
    return files


def write_files(out: Path, files: dict[str, bytes], made_with: dict[str, str] | None = None,
                record: dict[str, Any] | None = None, force: bool = False, known: Known | None = None) -> None:
    """Replace `out` with exactly `files` (plus the manifest), atomically.

    A symlink stays a symlink: its target is written. A mount point cannot be renamed, so the new
    build is staged inside it and moved into place entry by entry. No failure leaves a half-written
    build or a stray staging folder behind, an interruption (SIGINT, SIGTERM) included: it is held
    while the build is written and delivered once the previous build or the new one is in place; a
    staging folder that a writer killed while writing (SIGKILL, a crash) left is removed by the next
    write (staging.py).
    Writers into one folder take turns (staging.taking_turns). A previous build holding files gpudash did not write,
    or files edited since, is replaced only with `force`. `known`: files of the previous build already read and found
    holding their new bytes (`renamed_resources`), with the sha256 of those bytes and the file's status then."""
    out = written_folder(out)
    with taking_turns(out.parent):  # (held already where generate read the previous build under it: `turn`)
        _write_files(out, files, made_with, record, force, known)


def written_folder(out: Path) -> Path:
    """The folder a build for `out` is written into: where a link points (the link itself is left alone). A path that
    cannot name a folder (under a file, a link in a loop, too long) is an input error (folder_path)."""
    check_folder_path(out)
    out = named(out)
    return out.resolve() if out.is_symlink() else out


def turn(out: Path, waiting: Callable[[str, str], None] | None = None, shared: bool = False):
    """This process's turn to read and replace the build in `out` (staging.taking_turns): held by `generate` from its
    first read of the previous build to its write, so that two writers into one folder take turns; `shared`, by a
    reader of a build (--from), which reads no build a writer is swapping."""
    return taking_turns(written_folder(out).parent, waiting, shared)


def check_out(out: Path) -> None:
    """Refuse `out` as `write_files` would whatever it is to hold (a path that is not a folder, a folder of files
    gpudash did not write), before anything is made for it: preview draws every dashboard first, for minutes. Staging
    folders a killed writer left in it are what `write_files` removes first: they do not make it another's."""
    out = written_folder(out)
    _refuse_unowned(out, lambda folder: all(entry.name.startswith((INSIDE_NEW, INSIDE_OLD))
                                            for entry in folder.iterdir()))


def _refuse_unowned(out: Path, left_by_gpudash: Callable[[Path], bool] = lambda folder: False) -> None:
    """An OutputError when `out` is not a folder gpudash may replace (`_owned`, or `left_by_gpudash`)."""
    if out.exists() and not out.is_dir():
        raise OutputError("the output path is a file, not a directory", where=str(out),
                          hint="pass --out with a directory")
    try:
        owned = _owned(out) or left_by_gpudash(out)
    except OSError as exc:
        raise OutputError(f"cannot read the output directory ({exc.strerror})", where=str(out),
                          hint="check its permissions") from None
    if not owned and (unread := _unreadable(out / MANIFEST)):
        raise OutputError(f"its {MANIFEST} cannot be read ({unread}): whether gpudash wrote what the folder holds "
                          "cannot be told", where=str(out),
                          hint=f"let this user read {MANIFEST} (chmod u+r, as its owner), or choose another --out")
    if not owned and (broken := _not_json(out / MANIFEST)):
        raise OutputError(f"its {MANIFEST} is not JSON ({broken}; a merge's conflict markers?): whether gpudash wrote "
                          "what the folder holds cannot be told", where=str(out),
                          hint=f"if it is a gpudash build (build/ committed, and a merge left {MANIFEST} conflicted), "
                               "delete the folder and run generate again: the build is made whole from the definitions "
                               "and settings; else choose another --out")
    if not owned:
        raise OutputError("the output directory holds files gpudash did not write (no manifest.json of gpudash's)",
                          where=str(out), hint="choose another --out, or empty the directory")


def _not_json(path: Path) -> str | None:
    """Where the file at `path`, which is there and may be read, stops being JSON (`line 74`); None where it is JSON
    or is no file to read."""
    try:
        json.loads(_read_regular(path)[0])
    except ValueError as exc:
        return f"line {exc.lineno}" if isinstance(exc, json.JSONDecodeError) else "not UTF-8 text"
    except (OSError, InputError, RecursionError):
        return None
    return None


def _unreadable(path: Path) -> str | None:
    """Why the file at `path`, which is there, cannot be opened to read (its strerror); None where it can be, or is not
    there."""
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc.strerror
    return None


def _write_files(out: Path, files: dict[str, bytes], made_with: dict[str, str] | None, record: dict[str, Any] | None,
                 force: bool, known: Known | None) -> None:
    if out.exists() and not out.is_dir():
        _refuse_unowned(out)
    # what a writer killed while writing left (staging.py)
    remove_dead(out.parent, f".{out.name}.new-", f".{out.name}.old-", swapped=(out / MANIFEST).is_file())
    if out.is_dir():
        remove_dead(out, INSIDE_NEW, INSIDE_OLD, swapped=(out / MANIFEST).is_file())
    _refuse_unowned(out)
    if MANIFEST in files:
        raise ValueError(f"{MANIFEST} is made from the files, not given with them")
    known = {} if known is None else known  # sha256 of the new files' bytes, worked out reading the previous build
    taken = None
    if not force:
        taken = _refuse_losing(out, files, known)

    def manifest(digests: dict[str, str]) -> bytes:
        return manifest_bytes(digests, made_with, record)

    if taken is not None and _holds_the_build(out, files, manifest, known, taken):
        return  # the folder holds this very build: nothing to write (see _holds_the_build)
    with _held_signals() as stop:
        if out.is_dir() and os.path.ismount(out):
            _write_inside(out, files, manifest, stop, known, taken)
        else:
            _swap_in(out, files, manifest, stop, known, taken)


def _folders_of(paths: Iterable[str]) -> set[str]:
    """The folders holding `paths` (relative, '/'-separated) and those holding them, "" for the top one."""
    folders: set[str] = set()
    for path in paths:
        folder = posixpath.dirname(path)
        while folder not in folders:
            folders.add(folder)
            if not folder:
                break
            folder = posixpath.dirname(folder)
    return folders


# File systems whose change times the kernel stamps from its own clock as a file changes, which no call sets back: a
# file's status read again unchanged there shows bytes unchanged (see `_unchanged`). Not FAT, exFAT or NTFS (their
# drivers read the change time from times a call sets), nor a file system another machine writes (nfs, cifs, fuse).
KERNEL_STAMPED = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "ramfs", "overlay", "zfs", "f2fs",
                            "bcachefs", "jfs", "reiserfs"})


def _holds_the_build(out: Path, files: dict[str, bytes], manifest: Callable[[dict[str, str]], bytes], known: Known,
                     taken: _Taken) -> bool:
    """Whether the build folder `out` (not a mount point) holds this very build, as the swap would leave it: the
    folder itself (mode 755) and its folders (the mode a new folder gets) this user's, every file of `files` and the
    manifest made from them holding exactly their bytes and sharable as `_put` links a file (`_unchanged`), and
    nothing else, all as listed before the previous build was read (`taken`). Then nothing is written: the swap would
    make the same folders again, link every file into them and remove the previous ones (9 folders for one dashboard;
    on an ext4 mounted with `discard`, as this project's machine is, removing a folder waits for the disk to discard
    its block: 0.15 ms on an idle disk, about 2 ms while other work writes to it).

    Each file's bytes were compared with the new ones as the previous build was read (`not_as_written`, into
    `known`); a file is read again unless its status still is the one it had then and the change times of its file
    system are the kernel's (KERNEL_STAMPED), as `_fill` reads again a file it links. The folder is listed again
    last: an entry added, removed or changed since the first listing (a person saving a file meanwhile) is no
    longer this build, and it is written as before."""
    try:
        top = os.lstat(out)
        if not stat.S_ISDIR(top.st_mode) or stat.S_IMODE(top.st_mode) != 0o755 or top.st_uid != os.geteuid() \
                or os.path.ismount(out):
            return False
        folders = _folders_of(files) - {""}
        if set(taken) != set(files) | folders | {MANIFEST}:
            return False
        umask = _umask()
        mode, folder_mode = 0o666 & ~umask, 0o777 & ~umask  # what `_create` and os.makedirs give
        for folder in folders:
            info = os.lstat(out / folder)
            if not stat.S_ISDIR(info.st_mode) or stat.S_IMODE(info.st_mode) != folder_mode \
                    or info.st_uid != os.geteuid():
                return False
        try:
            kinds = file_system_kinds(top.st_dev)
        except (OSError, ValueError, IndexError):
            kinds = set()
        statuses = bool(kinds) and kinds <= KERNEL_STAMPED  # else every file is read again
        digests = {}
        for relative, data in files.items():
            digest, held = known.get(relative, (None, None))
            if digest is None or not _unchanged(os.path.join(out, relative), data, mode, held if statuses else None):
                return False
            digests[relative] = digest
        return _unchanged(os.path.join(out, MANIFEST), manifest(digests), mode) and _entries(out) == taken
    except OSError:
        return False


def _refuse_losing(out: Path, files: dict[str, bytes] | None = None,
                   known: Known | None = None) -> dict[str, tuple[int, ...]] | None:
    """Raises when replacing the build in `out` would lose files (`not_as_written`); else its entries (`_entries`),
    taken before it is read (a change since shows in one or the other), or None when there is no build folder."""
    try:
        taken = _entries(out) if out.is_dir() else None
        extra, edited = not_as_written(out, files, known)
    except OSError as exc:  # a folder that cannot be read may hold what would be lost: never read as empty
        raise OutputError(f"cannot read the previous build, so nothing shows what replacing it would lose "
                          f"({unreadable(exc, out)})", where=str(out),
                          hint="check its permissions, or move that folder out of the build folder") from None
    if extra or edited:
        from .names import shown

        said = "; ".join(part for part in (
            extra and f"{len(extra)} file(s) gpudash did not write ({shown(extra)})",
            edited and f"{len(edited)} file(s) changed since gpudash wrote them ({shown(edited)})") if part)
        raise OutputError(f"the build folder holds {said}: writing the build would lose them", where=str(out),
                          hint="move them out of the folder (gpudash replaces it whole), or pass --force to "
                               "discard them")
    return taken


class _Stopped(Exception):
    """A signal came while the new build was staged: it is abandoned, the previous build stays."""


class _Changed(Exception):
    """The previous build, moved aside to be replaced, holds files added or changed since it was read: it goes
    back, and `error` says what would have been lost."""

    def __init__(self, error: OutputError):
        super().__init__(str(error))
        self.error = error


class _Taken(dict):
    """`_entries`' answer: each entry by its path, and `at`, the time (nanoseconds) before the folder was listed."""
    at = 0


def _made_new(parent: Path | str, prefix: str, make: Callable[[str], Any]) -> tuple[Any, str]:
    """`make(path)` of a path in `parent` named `prefix` and twelve random hex digits, `make` creating it exclusively
    (a name taken is passed over), as tempfile names them: tempfile and the random module it imports were about 3 ms
    of every build's start. What `make` returned, and the path."""
    for _ in range(100):
        path = os.path.abspath(os.path.join(parent, prefix + os.urandom(6).hex()))
        try:
            return make(path), path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused name found", os.path.join(parent, prefix))


def _new_folder(parent: Path | str, prefix: str) -> Path:
    """A new folder in `parent`, for its owner only (as tempfile.mkdtemp makes one)."""
    return Path(_made_new(parent, prefix, lambda path: os.mkdir(path, 0o700))[1])


def _new_file(parent: Path | str, prefix: str) -> tuple[int, str]:
    """A new empty file in `parent`, open for writing, for its owner only (as tempfile.mkstemp makes one): its
    descriptor and path."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    return _made_new(parent, prefix, lambda path: os.open(path, flags, 0o600))


def _lstat(path: str) -> os.stat_result:
    """A path's own status (a link's, not its target's): what build files are judged by."""
    return os.lstat(path)


def _change_times_tell(folder: Path) -> bool:
    """Whether, on the file system of `folder`, a file's status shows every change of its bytes made more than a settle
    window after its last change (see `_settled`): its change time is stamped by a clock that keeps time with this
    machine's, and no call that sets a file's times sets it back. A probe file made there (and removed) shows it. Not
    so on FAT (Linux's driver reports the modification time as the change time, so `touch -r` sets both back), nor on
    NFS or SMB whose server's clock lags this one's by more than the window (a change made since the listing can carry
    a change time that reads as settled long before)."""
    before = time.time_ns()
    fd, probe = _new_file(folder, ".gpudash-probe-")
    try:
        try:
            os.write(fd, b"probe")
        finally:
            os.close(fd)
        made = _lstat(probe)
        after = time.time_ns()
        os.utime(probe, ns=(made.st_atime_ns, made.st_mtime_ns - 3600 * 10**9), follow_symlinks=False)
        set_back = _lstat(probe)
    except OSError:  # times that cannot be set here: nothing shows how change times are kept
        return False
    finally:
        os.unlink(probe)
    slack = CLOCK_SLACK_NS if made.st_ctime_ns % 1_000_000 else COARSE_CLOCK_SLACK_NS
    return before - slack <= made.st_ctime_ns <= after + slack and set_back.st_ctime_ns >= made.st_ctime_ns


def _entries(top: Path) -> _Taken:
    """Every entry below `top` by its path inside it: inode, type and mode, and for all but folders size,
    modification time and change time (lstat). Moving `top` changes none of them; hard-linking a file changes its
    change time (see `_refuse_changed`); writing or replacing a file changes its own (its change time even where a
    tool sets its modification time back: `cp -p`, `touch -r`), but not on every file system nor in the tick of its
    last change before the listing (`at`: see `_refuse_changed`), and adding one adds an entry. A folder that cannot
    be listed raises (OSError), never reads as empty."""
    found = _Taken()
    found.at = time.time_ns()

    def visit(folder: str, inside: str) -> None:
        with os.scandir(folder) as listed:
            for entry in listed:
                info = _lstat(entry.path)
                if stat.S_ISDIR(info.st_mode):
                    found[inside + entry.name] = (info.st_ino, info.st_mode, 0, 0)
                    visit(entry.path, f"{inside}{entry.name}/")
                else:
                    found[inside + entry.name] = (info.st_ino, info.st_mode, info.st_size, info.st_mtime_ns,
                                                  info.st_ctime_ns)

    visit(str(top), "")
    return found


def _trusted(known: Known | None, tells: bool) -> Known | None:
    """`known` where change times tell (`_change_times_tell`); elsewhere without the statuses, so that each file is read
    again before it is linked into the new build (see `_unchanged`)."""
    return known if tells or not known else {path: (digest, None) for path, (digest, _) in known.items()}


def _refuse_changed(taken: _Taken | None, aside: Path, out: Path,
                    linked: frozenset[str] | set[str] = frozenset(), renamed: bool = False,
                    tells: bool = False) -> None:
    """The previous build, moved aside to `aside` (nothing writes into it there), compared with its entries as they
    were before it was read (`taken`): a file added or changed since (a person saving a kustomization.yaml while the
    new build was written) raises _Changed, which would be lost with the previous build. Removed ones lose nothing.
    A file's change time is not compared where this build changed it: a file `linked` into the new build (which
    holds any change made to it), and with `renamed`, a file moved aside by its own name (directly in `aside`). Every
    other file, which goes with the previous build, is read again and compared with what gpudash wrote where its
    status may not show an edit: where the change times tell (`tells`, see `_change_times_tell`), a file changed
    within a settle window of the listing (an edit in the same tick of a coarse clock leaves its status as it was);
    elsewhere every one (a same-size edit with its times set back where the change time follows them, FAT, or is
    stamped by a server's lagging clock, NFS and SMB)."""
    if taken is None:
        return
    try:
        now = _entries(aside)
    except OSError as exc:
        raise _Changed(OutputError(f"cannot read the previous build again, so nothing shows what replacing it would "
                                   f"lose ({unreadable(exc, aside)}); it is left as it is", where=str(out),
                                   hint="check its permissions, and run again")) from None

    def same(path: str, entry: tuple[int, ...]) -> bool:
        before = taken.get(path)
        if path in linked or (renamed and "/" not in path):
            return before is not None and before[:4] == entry[:4]
        return before == entry

    differing = {path for path, entry in now.items() if not same(path, entry)}
    # a file the new build does not hold (not linked into it) is deleted with the previous build: where its status may
    # not show an edit, its bytes are read again and compared with those gpudash wrote (its manifest's sha256). Only
    # files whose bytes this build changes are read (a rebuild that changes nothing links every file)
    replaced = [path for path, entry in now.items() if path not in differing and path not in linked
                and path != MANIFEST and stat.S_ISREG(entry[1])
                and not (tells and _settled(taken[path][4], taken.at))]
    if replaced:
        manifest = gpudash_manifest(aside / MANIFEST) or {}
        listed = manifest.get("files") if isinstance(manifest.get("files"), dict) else {}
        read_again = _digests([os.path.join(aside, path) for path in replaced])
        differing.update(path for path in replaced if listed.get(path) is None
                         or read_again[os.path.join(aside, path)] != listed[path])
    changed = sorted(differing)
    if changed:
        from .names import shown

        raise _Changed(OutputError(
            f"while the build was written, {len(changed)} file(s) in the build folder were added or changed "
            f"({shown(changed)}): writing the build would lose them; the previous build is left as it is",
            where=str(out), hint="move them out of the folder (gpudash replaces it whole) and run again, or pass "
                                 "--force to discard them"))


@contextlib.contextmanager
def _held_signals():
    """SIGINT and SIGTERM held while a build is written (a list of those that came): the writers stop at
    the next file and the staging folder is removed, or, once the swap has begun, the swap finishes;
    then the signal is delivered with the handler the command had (KeyboardInterrupt, or the end of
    the process). Only the main thread can take signals: elsewhere nothing is held."""
    import signal

    caught: list[int] = []
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for number in (signal.SIGINT, signal.SIGTERM):
            handler = signal.getsignal(number)
            if handler not in (signal.SIG_IGN, None):
                previous[number] = signal.signal(number, lambda number, frame: caught.append(number))
    abandoned = False
    try:
        yield caught
    except _Stopped:
        abandoned = True
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    if caught:
        signal.raise_signal(caught[0])
    if abandoned:  # the command's handler let the signal pass: the build was still not written
        raise KeyboardInterrupt


def _failed(exc: OSError, out: Path) -> OutputError:
    return OutputError(f"cannot write the build ({exc.strerror or exc})", where=str(exc.filename or out),
                       hint="check free space and permissions; the previous build is unchanged")


# What to do when the folder beside the build cannot be made, by why (a permission hint on a full disk misleads)
_BESIDE_HINTS = {
    errno.EACCES: "let gpudash write into that folder (its permissions), or pass --out a folder inside one you can write",
    errno.ENOSPC: "free space on that disk, or pass --out a folder on another one",
    errno.EDQUOT: "free space within your disk quota there, or pass --out a folder on another disk",
    errno.EROFS: "that file system is mounted read-only: pass --out a folder on a writable one",
}


def _swap_in(out: Path, files: dict[str, bytes], manifest: Callable[[dict[str, str]], bytes],
             stop: list[int] | None = None, known: Known | None = None,
             taken: _Taken | None = None) -> None:
    """Write a sibling folder, then swap it for `out` with two renames (rolled back on failure, and when the
    previous build moved aside shows files added or changed since `taken`, see `_refuse_changed`)."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = _new_folder(out.parent, f".{out.name}.new-")
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG and len(out.name.encode()) < 255:  # a name the system takes; ours beside not
            raise OutputError(f"the build folder's name is too long for the folder gpudash writes beside it "
                              f"(.{out.name[:12]}....new-...: {exc.strerror})", where=str(out),
                              hint="pass --out a folder with a shorter name (under 230 characters)") from None
        if out.is_dir():  # the build folder is there: what failed is the new build's folder beside it
            raise OutputError(f"cannot make a folder beside the build for the new one ({exc.strerror}): gpudash "
                              f"writes the new build next to the previous one and swaps them", where=str(out.parent),
                              hint=_BESIDE_HINTS.get(exc.errno, _BESIDE_HINTS[errno.EACCES])
                              + "; the previous build is unchanged") from None
        raise OutputError(f"cannot create the output directory ({exc.strerror})", where=str(out.parent),
                          hint="check the path and its permissions") from None
    writer = claim(staging)  # (staging.py)
    try:
        retired = None
        try:
            tells = taken is not None and _change_times_tell(staging)
            linked = _fill(staging, files, manifest, out if out.is_dir() else None, stop, _trusted(known, tells))
            os.chmod(staging, 0o755)
            if not out.exists():
                os.replace(staging, out)
                return
            retired = _retired_folder(out, staging)
            try:
                os.replace(out, retired / "build")
            except OSError as exc:
                if exc.errno in (errno.EBUSY, errno.EXDEV):  # a bind mount that ismount() did not see
                    remove_tree(staging)
                    os.rmdir(retired)
                    retired = None
                    _write_inside(out, files, manifest, stop, known, taken)
                    return
                raise
            try:
                _refuse_changed(taken, retired / "build", out, linked, tells=tells)
                os.replace(staging, out)
            except (OSError, _Changed):
                os.replace(retired / "build", out)  # put the previous build back
                raise
        except (OSError, _Stopped, _Changed) as exc:
            remove_tree(staging)
            if retired is not None and not (retired / "build").exists():
                remove_folder(retired)
            if isinstance(exc, _Stopped):
                raise
            if isinstance(exc, _Changed):
                raise exc.error from None
            raise _failed(exc, out) from None
        if retired is not None:
            remove_folder(retired)  # (a folder a person made read-only in it made writable: nothing left beside)
    finally:
        let_go(staging, writer)


def _retired_folder(out: Path, staging: Path) -> Path:
    """The folder the previous build is moved into during the swap: `.<out>.old-` and the digits of the staging
    folder's name, which tell a later write whose it is (staging.remove_dead); a random name if that one is taken."""
    return _named_like(out.parent, staging, f".{out.name}.new-", f".{out.name}.old-")


def _named_like(parent: Path, staging: Path, new: str, old: str) -> Path:
    """A new folder in `parent` named `old` and the digits of the staging folder `new` + digits, or `old` and random
    digits if that one is taken."""
    named = parent / (old + staging.name[len(new):])
    try:
        os.mkdir(named, 0o700)
        return named
    except FileExistsError:
        return _new_folder(parent, old)


INSIDE_NEW, INSIDE_OLD = ".gpudash.new-", ".gpudash.old-"  # staging and retired folders inside a mount point


def _write_inside(out: Path, files: dict[str, bytes], manifest: Callable[[dict[str, str]], bytes],
                  stop: list[int] | None = None, known: Known | None = None,
                  taken: _Taken | None = None) -> None:
    """For a folder that cannot be renamed (a mount point): stage inside it, then move entries (the previous ones
    moved back when they show files added or changed since `taken`, see `_refuse_changed`)."""
    staging = retired = None
    moved_out: list[str] = []
    moved_in: list[str] = []
    writer = None
    try:
        staging = _new_folder(out, INSIDE_NEW)
        writer = claim(staging)
        tells = taken is not None and _change_times_tell(staging)
        linked = _fill(staging, files, manifest, out, stop, _trusted(known, tells))
        retired = _named_like(out, staging, INSIDE_NEW, INSIDE_OLD)  # (its digits tell whose it is: remove_dead)
        keep = {staging.name, retired.name, lock_of(staging).name}
        for name in sorted(os.listdir(out)):
            if name not in keep:
                os.replace(out / name, retired / name)
                moved_out.append(name)
        _refuse_changed(taken, retired, out, linked, renamed=True, tells=tells)
        for name in sorted(os.listdir(staging)):
            os.replace(staging / name, out / name)
            moved_in.append(name)
    except (OSError, _Stopped, _Changed) as exc:
        for name in moved_in:  # undo: the previous build goes back as it was
            if (out / name).is_dir() and not (out / name).is_symlink():
                remove_tree(out / name)
            else:  # manifest.json: rmtree leaves a file where it is
                (out / name).unlink(missing_ok=True)
        for name in moved_out:
            os.replace(retired / name, out / name)
        for folder in (staging, retired):
            if folder is not None:
                remove_folder(folder)
        if staging is not None:
            let_go(staging, writer)
        if isinstance(exc, _Stopped):
            raise
        if isinstance(exc, _Changed):
            raise exc.error from None
        raise _failed(exc, out) from None
    # the previous build removed before the lock is let go: a writer killed while removing it leaves its lock file
    # with its staging folder gone, by which the next write removes the rest (staging.remove_dead)
    remove_tree(staging)
    remove_folder(retired)
    let_go(staging, writer)




@dataclass(frozen=True)
class Difference:
    """A file that differs between a folder and a build: missing, changed or extra."""
    path: str
    change: str  # "missing", "changed", "extra"


def differences(out: Path, files: dict[str, bytes], made_with: dict[str, str] | None = None,
                record: dict[str, Any] | None = None) -> list[Difference]:
    """What differs between `out` on disk and the files of a build (`encode`). A folder or file of it that cannot be
    read is an input error, never a file "missing" (a folder skipped) or an internal error."""
    expected = with_manifest(files, made_with, record)
    try:
        present = {os.path.relpath(os.path.join(folder, name), out): Path(folder) / name
                   for folder, _, names in walk(out) for name in names
                   if (Path(folder) / name).is_file()} if out.is_dir() else {}
        differences = []
        for path in sorted(set(expected) | set(present)):
            if path not in present:
                differences.append(Difference(path, "missing"))
            elif path not in expected:
                differences.append(Difference(path, "extra"))
            elif present[path].read_bytes() != expected[path]:
                differences.append(Difference(path, "changed"))
    except OSError as exc:
        raise InputError(f"the build cannot be read to compare it ({unreadable(exc, out)})", where=str(out),
                         hint="check its permissions (the user running generate --check must read the whole build)"
                         ) from None
    return differences


# --- reading a build back -----------------------------------------------------------------

def parse_json(data: bytes, where: str, what: str) -> Any:
    """A build file's JSON (standard JSON: no NaN or Infinity); anything else is an input error naming
    the file and line."""
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_not_a_number)
    except UnicodeDecodeError:
        raise InputError(f"{what} is not UTF-8 text", where=where, hint=REGENERATE) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{what} is not JSON: {exc.msg}", where=f"{where}:{exc.lineno}", hint=REGENERATE) from None
    except _NotJson as exc:
        raise InputError(f"{what} is not JSON: {exc}", where=where, hint=REGENERATE) from None
    except RecursionError:
        raise InputError(f"{what} is nested too deeply to be read", where=where, hint=REGENERATE) from None


class _NotJson(Exception):
    """Python's reader accepts NaN and Infinity; JSON (and the APIs gpudash publishes to) does not."""


def _not_a_number(constant: str) -> Any:
    raise _NotJson(f"{constant} is not a JSON number")


REGENERATE = "run `gpudash generate --out DIR` again and review the result"


def _safe_relative(relative: Any) -> bool:
    if not isinstance(relative, str) or not relative or relative.startswith("/") or "\\" in relative:
        return False
    return all(part not in ("", ".", "..") for part in relative.split("/"))


LINTED = "it would be judged by the wrong label mapping and clusters"
PUBLISHED = ("publishing would mix the build's artifacts with checks, Grafana folders and prune scopes "
             "of other settings")


def _check_made_with(manifest: dict[str, Any], directory: Path, settings, consequence: str) -> None:
    """A build is judged and published with the settings it was made with: other settings (another label
    mapping, other clusters, another folder) would report its queries as wrong, or verify and prune
    by other rules than the build's. Say which settings to pass instead. `manifest` is the one `read`
    checked the files against (read once: the settings judged are those of the files read)."""
    made_with = manifest.get("settings")
    if not isinstance(made_with, dict) or not isinstance(made_with.get("sha256"), str):
        raise InputError("the manifest does not record the settings the build was made with (`settings`): it was "
                         "made by an older gpudash, or edited", where=str(directory / MANIFEST), hint=REGENERATE)
    if made_with["sha256"] == settings_record(settings)["sha256"]:
        _check_scope(manifest.get("artifacts"), directory, settings)
        return
    bundled = made_with.get("bundled") is True
    given = "the bundled defaults" if bundled else f"settings with sha256 {str(made_with.get('sha256'))[:12]}…"
    hint = ("run it without --config and without GPUDASH_CONFIG, away from any gpudash.yaml" if bundled
            else "pass --config with the settings file the build was made with")
    raise InputError(f"this build was made with other settings ({given}) than the ones read now "
                     f"({settings.source}): {consequence}",
                     where=str(directory), hint=f"{hint}, or generate the build again with these settings")


def _check_scope(record: Any, directory: Path, settings) -> None:
    """The prune scope the manifest records is the one its settings give: the record is not covered by
    the files' sums, so an edit of it alone (another prefix) would move what publishing may prune."""
    if not isinstance(record, dict):
        return  # `read` refuses a manifest without its record
    folder = settings.grafana.folder
    scope = {"alarm_prefix": settings.alarms.name_prefix, "dashboard_prefix": settings.cloudwatch.dashboard_prefix,
             "grafana_uid_prefix": settings.grafana.uid_prefix,
             # the folder bounds what push writes and prunes as much as the uid prefix does
             "grafana_folder": {"uid": folder.uid, "title": folder.title}}
    for key, value in scope.items():
        if key in record and record[key] != value:
            raise InputError(f"the manifest records {key} {record[key]!r}, but the settings it was made with "
                             f"({settings.source}) give {value!r}: the manifest was edited, and would move what "
                             "publishing may prune", where=str(directory / MANIFEST), hint=REGENERATE)


def _read_build(directory: Path, option: str = "--from") -> tuple[dict[str, Any], dict[str, bytes]]:
    """The build's manifest and the files it lists, each checked against its sha256; `option`: the one that named it,
    as a message says it."""
    manifest_path = directory / MANIFEST
    if directory.exists() and not directory.is_dir():
        inside = next((p for p in directory.parents if (p / MANIFEST).is_file()), None)
        raise InputError(f"not a folder: {option} takes a whole build", where=str(directory),
                         hint=f"pass {option} {printed.argument(inside)}" if inside else
                         "pass the folder `gpudash generate --out` wrote")
    if not directory.is_dir():
        raise InputError("the build folder does not exist", where=str(directory),
                         hint=f"run `gpudash generate --out {printed.argument(directory)}` first")
    if not manifest_path.is_file():
        raise InputError("no manifest.json: not a gpudash build", where=str(directory),
                         hint=f"run `gpudash generate --out {printed.argument(directory)}` first, or pass the folder it wrote")
    manifest = parse_json(read_bytes(manifest_path, "manifest", REGENERATE), str(manifest_path), "the manifest")
    listed = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(listed, dict) or not all(isinstance(v, str) for v in listed.values()):
        raise InputError("the manifest has no `files` mapping of path to sha256", where=str(manifest_path),
                         hint=REGENERATE)
    # what ships is the whole folder (`kubectl apply -f build/k8s`): a file generate did not write would
    # ship unchecked (generate replaces the folder, so only a hand or another tool puts one there); a folder
    # that cannot be read may hold one. Read before the files the manifest lists: one in a folder that cannot be
    # entered is not there to read, and that folder is what to say
    try:
        for _ in walk(directory):
            pass
    except OSError as exc:
        raise _unreadable_build(exc, directory) from None
    files = {}
    for relative, digest in listed.items():
        if not _safe_relative(relative) or relative == MANIFEST:
            raise InputError(f"the manifest lists {relative!r}, which is not a path inside the build",
                             where=str(manifest_path), hint=REGENERATE)
        path = directory / relative
        try:
            present = path.exists()
        except OSError as exc:  # (a folder on its way that lists but may not be entered)
            raise _unreadable_build(exc, directory) from None
        data = read_bytes(path, "build file", REGENERATE, _build_file_limit(path)) if present else None
        if data is None or hashlib.sha256(data).hexdigest() != digest:
            change = "is missing" if data is None else "differs from the manifest"
            raise InputError(f"{printed.path(relative)} {change}: the build was changed after generate",
                             where=str(directory), hint="run `gpudash generate` again and review the result")
        files[relative] = data
    extra = next((str(p.relative_to(directory)) for p in sorted(directory.rglob("*"))
                  if p.is_file() and p != manifest_path and str(p.relative_to(directory)) not in listed), None)
    if extra is not None:
        raise InputError(f"{printed.path(extra)} is in the build but not in its manifest: generate did not write it, "
                         "and it would ship unchecked", where=str(directory),
                         hint="remove it, or run `gpudash generate` again (it replaces the whole folder)")
    return manifest, files


def _unreadable_build(exc: OSError, directory: Path) -> InputError:
    """The error for a build read with --from that holds a folder (or a file in one) this user cannot read."""
    return InputError(f"a folder of the build cannot be read ({unreadable(exc, directory)}): what it holds would ship "
                      "unchecked", where=str(directory), hint="check its permissions, or run `gpudash generate` again")


def _build_file_limit(path: Path) -> int:
    """How much of a file the manifest lists is read. generate writes files as large as the fleet makes them (1,000
    clusters' CloudFormation template passes 64 MiB with two exporter DaemonSets each): a regular file is read
    whole, its sha256 then checked; anything else (a device such as /dev/zero is endless) keeps the input limit."""
    try:
        info = path.stat()
    except OSError:
        return MAX_INPUT_BYTES  # read_bytes says why it cannot be read
    return max(MAX_INPUT_BYTES, info.st_size) if stat.S_ISREG(info.st_mode) else MAX_INPUT_BYTES


def _record(manifest: dict[str, Any], where: str) -> dict[str, Any]:
    """The manifest's record of the artifacts (`artifacts_record`), checked for the form it is written in."""
    from .names import is_stack_name

    record = manifest.get("artifacts")
    texts = ("grafana_uid_prefix", "alarm_prefix", "dashboard_prefix", "counters_sha256")
    folder = record.get("grafana_folder") if isinstance(record, dict) else None
    regions = record.get("cloudwatch_dashboards") if isinstance(record, dict) else None
    lists = [record.get(key) for key in ("agents", "cloudformation", "grafana")] if isinstance(record, dict) else [None]
    if not isinstance(record, dict) or not isinstance(record.get("primary_region"), str) \
            or not record["primary_region"] or not all(isinstance(record.get(key), str) for key in texts) \
            or not isinstance(folder, dict) or not all(isinstance(folder.get(k), str) for k in ("uid", "title")) \
            or not isinstance(regions, dict) or not all(isinstance(r, str) and r for r in regions.values()) \
            or not all(isinstance(items, list) and all(isinstance(i, str) and i for i in items) for items in lists) \
            or not _notes_recorded(record.get("notes")) \
            or not all(is_stack_name(stack) for stack in record["cloudformation"]):
        raise InputError("the manifest does not record the build's Regions, CloudFormation stacks, Grafana folder, "
                         "name prefixes and notes (`artifacts`): it was made by an older gpudash, or edited",
                         where=where, hint=REGENERATE)
    return record


def _notes_recorded(notes: Any) -> bool:
    return isinstance(notes, list) and all(
        isinstance(n, dict) and all(isinstance(n.get(key), str) for key in ("rule", "where", "message")) for n in notes)


def _object(data: bytes, where: str, what: str, keys: tuple[str, ...]) -> dict[str, Any]:
    value = parse_json(data, where, what)
    if not isinstance(value, dict) or not all(key in value for key in keys):
        raise InputError(f"{what} is not a JSON object with {', '.join(keys)}", where=where, hint=REGENERATE)
    _texts(value, where, what, *(key for key in keys if key in _TEXT_KEYS))
    return value


_TEXT_KEYS = ("uid", "title", "DashboardName", "DashboardBody", "Region", "AlarmName")


def _texts(value: dict[str, Any], where: str, what: str, *keys: str) -> None:
    """Each of `keys` is non-empty text: what gpudash publishes by (a uid, a name, a Region) must be one."""
    for key in keys:
        if not isinstance(value.get(key), str) or not value[key]:
            raise InputError(f"{what} has no `{key}` (text); it holds {json.dumps(value.get(key))[:60]}",
                             where=where, hint=REGENERATE)


def grafana_models(files: dict[str, bytes], origin: str = "<generated>") -> dict[str, tuple[str, dict[str, Any]]]:
    """uid -> (file, dashboard JSON) of every Grafana dashboard in a build."""
    models = {}
    for path, data in sorted(files.items()):
        if path.startswith("grafana/") and path.count("/") == 1 and path.endswith(".json"):
            where = f"{origin}/{path}"
            model = _object(data, where, "the dashboard", ("uid",))
            _texts(model, where, "the dashboard", "uid", "title")
            if model["uid"] in models:
                raise InputError(f"uid {model['uid']!r} is also the uid of {models[model['uid']][0]}", where=where,
                                 hint=REGENERATE)
            models[model["uid"]] = (path, model)
    return models




def _yaml(data: bytes, where: str, what: str, count: int | None = 1) -> list[Any]:
    """The YAML documents of a build file (safe_load only); anything else is an input error naming it."""
    import yaml

    loader = yaml_loader()  # libyaml's safe loader where PyYAML has it (and it stops deep nesting)
    try:
        documents = list(yaml.load_all(data.decode("utf-8"), Loader=loader))
    except UnicodeDecodeError:
        raise InputError(f"{what} is not UTF-8 text", where=where, hint=REGENERATE) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(f"{what} is not YAML ({getattr(exc, 'problem', None) or exc})",
                         where=f"{where}:{mark.line + 1}" if mark else where, hint=REGENERATE) from None
    except RecursionError:
        raise InputError(f"{what} is nested too deeply to be read", where=where, hint=REGENERATE) from None
    if count is not None and len(documents) != count or not all(isinstance(d, dict) for d in documents):
        raise InputError(f"{what} is not what gpudash writes ({len(documents)} YAML document(s), expected "
                         f"{count or 'objects'})", where=where, hint=REGENERATE)
    return documents


def _agent(path: str, data: bytes, where: str):
    """One cluster's agent ConfigMaps, back as the configs they hold."""
    from .artifacts import AgentConfig
    from .markers import KUBERNETES_PROJECT, NO_PROJECT
    from .names import AGENT_CONFIGMAP, SCRAPE_CONFIGMAP
    from .render.agent import AGENT_KEY, SCRAPE_KEY
    from .render.agent_otel import OTEL_KEY

    try:
        documents = _yaml(data, where, "the agent ConfigMaps", count=None)
    except InputError as exc:
        raise InputError(f"not the agent ConfigMaps gpudash writes: {exc.what}", where=exc.where,
                         hint=REGENERATE) from None
    maps = {}
    for document in documents:
        metadata, content = document.get("metadata"), document.get("data")
        if isinstance(metadata, dict) and isinstance(content, dict):
            maps[metadata.get("name")] = (metadata, content)
    if not {AGENT_CONFIGMAP, SCRAPE_CONFIGMAP} <= set(maps) \
            or not isinstance(maps[AGENT_CONFIGMAP][1].get(AGENT_KEY), str) \
            or not isinstance(maps[SCRAPE_CONFIGMAP][1].get(SCRAPE_KEY), str):
        raise InputError(f"not the agent ConfigMaps gpudash writes ({AGENT_CONFIGMAP} with {AGENT_KEY}, "
                         f"{SCRAPE_CONFIGMAP} with {SCRAPE_KEY})", where=where, hint=REGENERATE)
    config = parse_json(maps[AGENT_CONFIGMAP][1][AGENT_KEY].encode(), where, AGENT_KEY)
    (scrape,) = _yaml(maps[SCRAPE_CONFIGMAP][1][SCRAPE_KEY].encode(), where, SCRAPE_KEY)
    otel_text = maps[AGENT_CONFIGMAP][1].get(OTEL_KEY)
    otel = _yaml(str(otel_text).encode(), where, OTEL_KEY, count=1)[0] if otel_text is not None else None
    notes = maps[AGENT_CONFIGMAP][0].get("annotations")
    project = notes.get(KUBERNETES_PROJECT) if isinstance(notes, dict) else None
    agent = AgentConfig(path[len(AGENT_FILE_PREFIX):-len(".yaml")],
                        str(maps[AGENT_CONFIGMAP][0].get("namespace", "")), config, scrape, otel,
                        project if isinstance(project, str) and project != NO_PROJECT else None)
    try:
        agent.publishing()["emf_processor"]
        scrape["scrape_configs"][0]["job_name"]
    except (KeyError, IndexError, TypeError) as exc:
        raise InputError(f"not the agent ConfigMaps gpudash writes (no {exc} in them)", where=where,
                         hint=REGENERATE) from None
    return agent



def _cloudwatch_dashboard(data: bytes, where: str, regions: dict[str, str], manifest: str):
    """A CloudWatch dashboard file, back as its name, Region and body (the ownership stamp taken off).

    The Region is the one the manifest records for it (`regions`): the one it had when it was built."""
    from .artifacts import CloudWatchDashboard
    from .ownership import unstamped_cloudwatch_body

    item = _object(data, where, "the CloudWatch dashboard", ("DashboardName", "DashboardBody"))
    body = parse_json(str(item["DashboardBody"]).encode(), where, "its DashboardBody")
    widgets = body.get("widgets", []) if isinstance(body, dict) else None
    if not isinstance(widgets, list) or not widgets or not isinstance(widgets[0], dict) \
            or not isinstance(widgets[0].get("properties"), dict) \
            or not isinstance(widgets[0]["properties"].get("markdown"), str):
        raise InputError("its DashboardBody has no list of widgets headed by gpudash's text widget", where=where,
                         hint=REGENERATE)
    if item["DashboardName"] not in regions:
        raise InputError(f"the manifest records no Region for the CloudWatch dashboard {item['DashboardName']!r}",
                         where=manifest, hint=REGENERATE)
    return CloudWatchDashboard(item["DashboardName"], regions[item["DashboardName"]], unstamped_cloudwatch_body(body))


def _alarms(data: bytes, where: str):
    from .artifacts import AlarmRequest

    alarms = _object(data, where, "the alarm list", ("alarms",))["alarms"]
    if not isinstance(alarms, list) or not all(isinstance(a, dict) and "Request" in a for a in alarms):
        raise InputError("`alarms` is not a list of {Region, Request} objects", where=where, hint=REGENERATE)
    seen: set[tuple[str, str]] = set()
    for number, alarm in enumerate(alarms, 1):
        what = f"alarm {number}"
        if not isinstance(alarm["Request"], dict):
            raise InputError(f"{what}'s Request is not an object", where=where, hint=REGENERATE)
        _texts(alarm, where, what, "Region")
        _texts(alarm["Request"], where, f"{what}'s Request", "AlarmName")
        key = (alarm["Region"], alarm["Request"]["AlarmName"])
        if key in seen:
            raise InputError(f"alarm {key[1]!r} in {key[0]} is listed twice", where=where, hint=REGENERATE)
        seen.add(key)
    return tuple(AlarmRequest(alarm["Region"], alarm["Request"]) for alarm in alarms)


def _template(data: bytes, where: str) -> dict[str, Any]:
    """A CloudFormation template, each dashboard's DashboardBody back as its body."""
    from .ownership import unstamped_cloudwatch_body

    template = _object(data, where, "the CloudFormation template", ("Resources",))
    resources = template["Resources"] if isinstance(template["Resources"], dict) else {}
    for logical_id, resource in list(resources.items()):
        properties = resource.get("Properties") if isinstance(resource, dict) else None
        if isinstance(properties, dict) and resource.get("Type") == DASHBOARD_TYPE:
            body = parse_json(str(properties.get("DashboardBody")).encode(), where, f"{logical_id}'s DashboardBody")
            try:
                body = unstamped_cloudwatch_body(body)
            except (KeyError, IndexError, TypeError):
                raise InputError(f"{logical_id}'s DashboardBody is not a body gpudash writes", where=where,
                                 hint=REGENERATE) from None
            resources[logical_id] = {**resource, "Properties": {**properties, "DashboardBody": body}}
    return template


def _agree(what: str, recorded, present, manifest: str) -> None:
    """The manifest's record and the build's files name the same artifacts."""
    recorded, present = set(recorded), set(present)
    if recorded - present:
        raise InputError(f"the manifest records the {what} {sorted(recorded - present)[0]!r}, which the build does "
                         "not hold", where=manifest, hint=REGENERATE)
    if present - recorded:
        raise InputError(f"the build holds the {what} {sorted(present - recorded)[0]!r}, which the manifest does "
                         "not record", where=manifest, hint=REGENERATE)


def read(directory: Path, origin: str | None = None, settings=None, consequence: str = LINTED,
         waiting: Callable[[str, str], None] | None = None, option: str = "--from") -> "Artifacts":
    """A build folder, back as the artifact set it was written from (every file checked against the
    manifest first). What the files do not say (each CloudWatch dashboard's Region, the primary Region,
    the Grafana folder, the name prefixes, what the build left out and why, the counters CSV's sha256)
    is read from the manifest's record, as it was written. With `settings`, the build must have been made
    with them (else an input error saying which to pass, ending with `consequence`). Read in a reader's turn
    (`turn`; `waiting(holders, doing)` is called once when a writer holds it), never while a gpudash writes the build."""
    from .artifacts import Artifacts, GrafanaDashboard, Note

    with turn(directory, waiting, shared=True):  # (a path with a `..` read where it names, as it is written: named)
        manifest, files = _read_build(as_named(directory), option)
    origin = origin or str(directory)

    def where(path: str) -> str:
        return f"{origin}/{path}"

    record = _record(manifest, where(MANIFEST))
    primary_region = record["primary_region"]

    models = grafana_models(files, origin)
    _agree("Grafana dashboard", record["grafana"], models, where(MANIFEST))
    grafana = tuple(GrafanaDashboard(uid, str(models[uid][1].get("title", "")), where(models[uid][0]), models[uid][1])
                    for uid in record["grafana"])  # in the order they were built
    # What only the build's own files use is read when the build has it (a hand-made build may not).
    provisioning = _yaml(files.get(PROVISIONING_FILE, b"{}"), where(PROVISIONING_FILE), "the provisioning file")[0]
    dashboards = []
    for path, data in sorted(files.items()):
        if path.startswith("cloudwatch/dashboards/"):
            dashboards.append(_cloudwatch_dashboard(data, where(path), record["cloudwatch_dashboards"],
                                                    where(MANIFEST)))
    names = [d.name for d in dashboards]
    twice = next((name for name, count in Counter(names).items() if count > 1), None)  # linear, not n²
    if twice:
        raise InputError(f"the CloudWatch dashboard {twice!r} is listed twice", where=where("cloudwatch/dashboards"),
                         hint=REGENERATE)
    _agree("CloudWatch dashboard", record["cloudwatch_dashboards"], names, where(MANIFEST))
    template_files = {template_file(stack): stack for stack in record["cloudformation"]}
    _agree("CloudFormation template", template_files, [p for p in files if p.startswith("cloudformation/")],
           where(MANIFEST))
    templates = {stack: _template(files[path], where(path)) for path, stack in template_files.items()}
    agents = tuple(_agent(path, data, where(path)) for path, data in sorted(files.items())
                   if path.startswith(AGENT_FILE_PREFIX) and path.endswith(".yaml"))
    _agree("agent ConfigMaps of the cluster", record["agents"], [a.cluster for a in agents], where(MANIFEST))
    order = {cluster: index for index, cluster in enumerate(record["agents"])}  # the clusters' order, as built
    agents = tuple(sorted(agents, key=lambda a: order[a.cluster]))

    def document(path: str, what: str) -> dict[str, Any]:
        return _yaml(files.get(path, b"{}"), where(path), what)[0]

    if settings is not None:
        _check_made_with(manifest, directory, settings, consequence)
    # one ServiceMonitor per deployment style's Service (an older build: one)
    monitors = _yaml(files.get(SERVICE_MONITOR_FILE, b"{}"), where(SERVICE_MONITOR_FILE), "the ServiceMonitors", None) \
        or [{}]
    return Artifacts(
        grafana=grafana,
        grafana_folder={"uid": record["grafana_folder"]["uid"], "title": record["grafana_folder"]["title"]},
        grafana_provisioning=provisioning,
        cloudwatch_dashboards=tuple(dashboards),
        alarms=_alarms(files.get(ALARMS_FILE, b'{"alarms": []}'), where(ALARMS_FILE)),
        primary_region=primary_region,
        cloudformation=templates,
        agents=agents,
        addon=_object(files[ADDON_FILE], where(ADDON_FILE), "the add-on configuration", ()) if ADDON_FILE in files
        else None,
        additional_scrape_configs=document(ADDITIONAL_SCRAPE_FILE, "the scrape configs"),
        service_monitor=monitors[0],
        more_service_monitors=tuple(monitors[1:]),
        prometheus_rules=document(RULES_FILE, "the rules file"),
        # one PrometheusRule per rule group (an older build: one of every group)
        prometheus_rule_objects=tuple(_yaml(files.get(PROMETHEUS_RULE_FILE, b""), where(PROMETHEUS_RULE_FILE),
                                            "the PrometheusRules", None)),
        grafana_uid_prefix=record["grafana_uid_prefix"],
        alarm_prefix=record["alarm_prefix"],
        dashboard_prefix=record["dashboard_prefix"],
        notes=tuple(Note(n["rule"], n["where"], n["message"]) for n in record["notes"]),
        counters_sha256=record["counters_sha256"],
        grafana_made_from=made if isinstance(made := record.get("grafana_made_from"), str) else "",
        project=(settings.project or "") if settings is not None else "",
        clusters=tuple(cluster.name for cluster in settings.clusters) if settings is not None else (),
        origin=origin,
        publisher=_publisher(files.get(SIDECAR_FILE, b""), where(SIDECAR_FILE)),
    )


def _publisher(data: bytes, where: str) -> dict[str, str]:
    """The annotations by which a build's dashboard ConfigMaps record the settings that wrote it (those of the first:
    every one carries the same), none where they carry none."""
    from .markers import KUBERNETES_CLUSTERS, KUBERNETES_PROJECT

    first = next(iter(_yaml(data, where, "the dashboard ConfigMaps", None)), None)
    notes = (first.get("metadata") or {}).get("annotations") if isinstance(first, dict) else None
    return {key: value for key, value in notes.items() if key in (KUBERNETES_PROJECT, KUBERNETES_CLUSTERS)
            and isinstance(value, str)} if isinstance(notes, dict) else {}
