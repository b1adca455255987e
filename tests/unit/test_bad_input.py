"""The bad-input corpus: every case is one clear message naming the file and line (where there is
one), the right exit code, no traceback, and build/ byte-identical to what it was before.

Each case is a small project written into a fresh folder (the current folder while the command
runs, so ./gpudash.yaml is found the way a user's is), a command line and an environment.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from generator.catalog import load_counters
from generator.resources import default_config, default_counters

GOOD_CSV = "DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).\nDCGM_FI_DEV_FB_USED, gauge, FB used (in MiB).\n"
GOOD_DASHBOARD = """
from generator.model import Dashboard, Row
from generator.panels import per_pod

dashboard = Dashboard("mine", "Mine", [Row("r", [per_pod("DCGM_FI_DEV_GPU_UTIL", "Util")])])
"""
GOOD_ALARM = """
from generator.model import Alarm, Condition, Query

alarm = Alarm("hot", "GPU hot", Condition(Query("DCGM_FI_DEV_GPU_UTIL", "max"), ">", 90), severity="warning")
"""


@dataclass(frozen=True)
class Case:
    name: str
    files: dict[str, str | bytes]  # the project, relative to the current folder
    where: str | None  # "file:line" (or a file) the message must name; None when no file is involved
    says: tuple[str, ...] = ()  # further fragments of the message
    args: tuple[str, ...] = ("generate", "--out", "build")
    env: dict[str, str] = field(default_factory=dict)
    code: int = 2


def csv(name: str, text: str | bytes, where: str | None, *says: str) -> Case:
    return Case(f"csv: {name}", {"counters.csv": text, "gpudash.yaml": "counters: counters.csv\n"}, where, says)


def settings(name: str, text: str | bytes, where: str | None, *says: str) -> Case:
    return Case(f"settings: {name}", {"gpudash.yaml": text}, where, says)


def definition(name: str, files: dict[str, str | bytes], where: str | None, *says: str, env=None, kind="dashboards",
               counters: str = GOOD_CSV) -> Case:
    project = {f"{kind}/{file}": text for file, text in files.items()}
    project["counters.csv"] = counters
    project["gpudash.yaml"] = f"counters: counters.csv\ndefinitions:\n  {kind}: {kind}\n"
    return Case(f"definition: {name}", project, where, says, env=env or {})


def flags(name: str, args: tuple[str, ...], *says: str, files=None, where=None, code=2) -> Case:
    return Case(f"flags: {name}", files or {}, where, says, args=args, code=code)


def prices(name: str, rates: dict, *says: str) -> Case:
    """`gpudash cost --prices p.json` with a file of these rates, told at the file."""
    return flags(f"cost --prices {name}", ("cost", "--pods", "3", "--prices", "p.json"), *says,
                 files={"p.json": json.dumps({"rates": rates})}, where="p.json")


def environment(name: str, env: dict[str, str], where: str | None, *says: str, files=None,
                args=("generate", "--out", "build")) -> Case:
    return Case(f"environment: {name}", files or {}, where, says, args=args, env=env)


def manifest_for(files: dict[str, bytes]) -> bytes:
    """A manifest as gpudash writes it for these files: their sums, and the record of what they hold."""
    dashboards = {p[len("cloudwatch/dashboards/"):-len(".json")]: "us-east-1" for p in files
                  if p.startswith("cloudwatch/dashboards/")}
    agents = [p[len("k8s/cwagent-prometheus-config-"):-len(".yaml")] for p in files
              if p.startswith("k8s/cwagent-prometheus-config-")]
    uids = [p[len("grafana/"):-len(".json")] for p in files if p.startswith("grafana/") and p.count("/") == 1]
    record = {"primary_region": "us-east-1", "cloudwatch_dashboards": dashboards, "agents": agents,
              "grafana": uids, "cloudformation": [],
              "grafana_folder": {"uid": "gpudash", "title": "GPU monitoring"}, "grafana_uid_prefix": "gpudash",
              "alarm_prefix": "gpudash", "dashboard_prefix": "gpudash", "notes": [],
              "counters_sha256": _bundled()[1]}  # made from the bundled CSV
    return json.dumps({"settings": _bundled()[0], "artifacts": record,  # the bundled settings
                       "files": {p: hashlib.sha256(d).hexdigest() for p, d in files.items()}}).encode()


@functools.cache
def _bundled() -> tuple[dict, str]:
    """The bundled settings' record and counters' sum, read once: every test process works out the cases above
    (some 40 manifests) when it collects this file, and the bundled files do not change."""
    from generator.output import settings_record
    from generator.settings import load_settings

    return settings_record(load_settings(None)), load_counters(default_counters()).sha256


AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"


def built(name: str, files: dict[str, bytes], manifest: bytes | None, where: str | None, *says: str,
          command: str = "lint") -> Case:
    """A --from build in folder `shipped/`; the manifest is written as given (None: matching the files)."""
    project = {f"shipped/{p}": d for p, d in files.items()}
    project["shipped/manifest.json"] = manifest if manifest is not None else manifest_for(files)
    args = {"lint": ("lint", "--from", "shipped"), "plan": ("plan", "--from", "shipped", "--no-grafana",
                                                            "--no-cloudwatch"),
            "push": ("push", "--from", "shipped"), "apply": ("apply", "--from", "shipped")}[command]
    return Case(f"build ({command}): {name}", project, where, says, args=args)


def dashboard_file(uid: str = "x", **extra) -> bytes:
    return json.dumps({"uid": uid, "title": "X", "panels": [], **extra}).encode()


DEEP_YAML = "labels: " + "[" * 50_000 + "]" * 50_000 + "\n"
ALIAS_BOMB = "grafana:\n  tags: &t0 [a, a, a, a, a, a, a, a, a, a]\n" + "".join(
    f"x{i}: &t{i} [{', '.join([f'*t{i - 1}'] * 10)}]\n" for i in range(1, 9))
INFINITE = "x = 0\nwhile True:\n    x += 1\n"
STUBBORN = "while True:\n    try:\n        pass\n    except Exception:\n        pass\n"
QUICK = {"GPUDASH_DEFINITION_TIME_LIMIT": "0.1"}

CASES = [
    # --- the counters CSV ------------------------------------------------------------------------
    csv("four fields", "DCGM_FI_DEV_GPU_UTIL, gauge, util, in %\n", "counters.csv:1", "found 4"),
    csv("two fields", "# c\nDCGM_FI_DEV_GPU_UTIL, gauge\n", "counters.csv:2", "found 2"),
    csv("one field", "DCGM_FI_DEV_GPU_UTIL\n", "counters.csv:1", "found 1"),
    csv("semicolons", "DCGM_FI_DEV_GPU_UTIL; gauge; util\n", "counters.csv:1", "found 1"),
    csv("bad type", "DCGM_FI_DEV_GPU_UTIL, gauges, util\n", "counters.csv:1", "'gauges'"),
    csv("upper-case type", "DCGM_FI_DEV_GPU_UTIL, GAUGE, util\n", "counters.csv:1", "'GAUGE'"),
    csv("tab before type", "DCGM_FI_DEV_GPU_UTIL,\tgauge, util\n", "counters.csv:1", "is not one of"),
    csv("header row", "name, type, help\nDCGM_FI_DEV_GPU_UTIL, gauge, u\n", "counters.csv:1", "'type'"),
    csv("numeric id", "203, gauge, util\n", "counters.csv:1", "numeric ids"),
    csv("dash in name", "DCGM-FI-DEV-GPU-UTIL, gauge, util\n", "counters.csv:1", "not a DCGM field name"),
    csv("empty name", ", gauge, util\n", "counters.csv:1", "not a DCGM field name"),
    csv("NUL in name", "DCGM_FI\x00_X, gauge, util\n", "counters.csv:1", "not a DCGM field name"),
    csv("type clash", "DCGM_FI_DEV_GPU_UTIL, gauge, a\nDCGM_FI_DEV_GPU_UTIL, counter, b\n", "counters.csv:2",
        "different types"),
    csv("unclosed quote", 'DCGM_FI_DEV_GPU_UTIL, gauge,"util\n', "counters.csv:1", "not closed"),
    csv("bare quote", 'DCGM_FI_DEV_GPU_UTIL, gauge, a "b"\n', "counters.csv:1", "quote"),
    csv("text after a quoted field", 'DCGM_FI_DEV_GPU_UTIL, gauge,"a"b\n', "counters.csv:1", "after a quoted"),
    csv("only comments", "# nothing\n\n", "counters.csv", "no metrics"),
    csv("empty file", "", "counters.csv", "no metrics"),
    csv("whitespace line", "DCGM_FI_DEV_GPU_UTIL, gauge, u (in %).\n   \n", "counters.csv:2", "found 1"),
    csv("indented comment", "DCGM_FI_DEV_GPU_UTIL, gauge, u\n # not a comment\n", "counters.csv:2", "found 1"),
    csv("carriage returns only", "# metrics\rDCGM_FI_DEV_GPU_UTIL, gauge, u\r", "counters.csv:1", "carriage return"),
    csv("carriage returns after a good line", "DCGM_FI_DEV_GPU_UTIL, gauge, u\nA, gauge, b\rC, gauge, d\r",
        "counters.csv:2", "carriage return"),
    csv("CRLF and a bad second line", "DCGM_FI_DEV_GPU_UTIL, gauge, u\r\nDCGM_FI_X, gauge\r\n", "counters.csv:2",
        "found 2"),
    csv("not UTF-8", b"DCGM_FI_DEV_GPU_UTIL, gauge, u\n# ok\nDCGM_FI_DEV_FB_USED, gauge, \xff\xfe\n",
        "counters.csv:3", "not UTF-8"),
    csv("UTF-16", "DCGM_FI_DEV_GPU_UTIL, gauge, u\n".encode("utf-16"), "counters.csv:1", "not UTF-8"),
    # the exporter (Go's encoding/csv) keeps the mark: its first line is then no comment and no field, and it exits
    csv("byte-order mark", "\ufeffDCGM_FI_DEV_GPU_UTIL, gauge, u (in %).\n", "counters.csv:1", "byte order mark",
        "the DCGM exporter reads it as part of the first line", "without a BOM"),
    csv("byte-order mark before a comment", "\ufeff# Format,,\nDCGM_FI_DEV_GPU_UTIL, gauge, u (in %).\n",
        "counters.csv:1", "byte order mark"),
    # a second file pasted after the first (cat a.csv b.csv) brings its mark to a later line: it was told as a field
    # name that is not a DCGM field's, 'use the DCGM field's name', of a name that looks right
    csv("byte-order mark on a later line", "DCGM_FI_DEV_GPU_UTIL, gauge, u (in %).\n\ufeffDCGM_FI_DEV_FB_USED, gauge, "
        "f (in MiB).\n", "counters.csv:2", "the line holds a UTF-8 byte order mark (BOM, U+FEFF, invisible) at column 1",
        "delete the mark"),
    csv("byte-order mark before a later comment", "DCGM_FI_DEV_GPU_UTIL, gauge, u (in %).\n\ufeff# more, fields\n",
        "counters.csv:2", "byte order mark"),
    csv("byte-order mark before a type", "DCGM_FI_DEV_GPU_UTIL,\ufeffgauge, u (in %).\n", "counters.csv:1",
        "byte order mark (BOM, U+FEFF, invisible) at column 22"),
    flags("--csv with a byte-order mark", ("metrics", "--csv", "other.csv"), "byte order mark",
          files={"other.csv": "\ufeffDCGM_FI_DEV_GPU_UTIL, gauge, u (in %).\n"}, where="other.csv:1"),
    Case("csv: counters is a folder", {"gpudash.yaml": "counters: .\n"}, None, ("is a folder",)),
    # told at the settings key that names it (the path is read from the settings file's folder), not as a --csv
    Case("csv: counters file missing", {"gpudash.yaml": "# ours\ncounters: nowhere.csv\n"}, "gpudash.yaml:2",
         ("counters: ", "nowhere.csv: counters CSV not found", "correct counters", "remove it to use the bundled CSV")),
    Case("csv: counters names a folder", {"gpudash.yaml": "counters: csvs\n", "csvs/a.csv": GOOD_CSV}, "gpudash.yaml:1",
         ("counters CSV is a folder", "correct counters")),
    flags("cost of GPU pods on no GPUs", ("cost", "--pods", "10", "--gpus", "0"), "--gpus", "0 GPUs for 10 GPU pods",
          "at least 1"),
    flags("--csv missing", ("generate", "--out", "build", "--csv", "absent.csv"), "not found",
          "omit it to use the settings' counters", where="absent.csv"),
    Case("csv: metrics of a counters file missing", {"gpudash.yaml": "counters: nowhere.csv\n"}, "gpudash.yaml:1",
         ("nowhere.csv: counters CSV not found", "correct counters"), args=("metrics",)),
    flags("--csv is a folder", ("generate", "--out", "build", "--csv", "."), "is a folder"),
    flags("--csv /dev/zero", ("generate", "--out", "build", "--csv", "/dev/zero"), "larger than",
          where="/dev/zero"),
    flags("--csv with a bad line", ("generate", "--out", "build", "--csv", "other.csv"), "found 2",
          files={"other.csv": "DCGM_FI_DEV_GPU_UTIL, gauge, u\nDCGM_FI_X, gauge\n"}, where="other.csv:2"),
    flags("metrics --csv with a bad line", ("metrics", "--csv", "other.csv"), "'gauges'",
          files={"other.csv": "DCGM_FI_DEV_GPU_UTIL, gauges, u\n"}, where="other.csv:1"),

    # --- settings --------------------------------------------------------------------------------
    settings("YAML syntax", "clusters: [\n  - name: a\n", "gpudash.yaml:", "not valid YAML"),
    # keys YAML reads as a number, null, true or a date: Python's TypeError (exit 4) or its words ('None')
    settings("a number as a key", "1: 2\n", "gpudash.yaml:1", "unknown key '1'", "remove '1'"),
    settings("a number and a name as keys", "1: 2\nfoo: 3\n", "gpudash.yaml:1", "unknown key '1'"),
    settings("null as a key", "~: 2\n", "gpudash.yaml:1", "null: unknown key 'null'"),
    settings("a date as a key", "labels:\n  2024-01-01: x\n", "gpudash.yaml:2", "labels.2024-01-01: unknown key"),
    # a value nested deeper than PyYAML's dumper goes: 'the input is nested too deeply' with no file or key
    settings("a deeply nested value", f"thresholds:\n  gpu_temp_celsius: {'[' * 400}1{']' * 400}\n",
             "gpudash.yaml:2", "thresholds.gpu_temp_celsius: a list nested 400 deep is given where a mapping goes"),
    # an unclosed list is found at the next text that cannot continue it, lines below: the line it began on is named
    settings("unclosed list", "clusters:\n  - name: a\n    region: [us-east-1\n# more\n\nlabels:\n  pod: pod\n",
             "gpudash.yaml:6", "not valid YAML", "(while parsing a flow sequence at line 3)"),
    settings("unclosed quote", 'grafana:\n  tags: ["gpu, gpudash]\n# more\n', "gpudash.yaml:4",
             "(while scanning a quoted scalar at line 2)"),
    settings("tab indentation", "grafana:\n\tfolder: x\n", "gpudash.yaml:2", "not valid YAML: a tab at column 1",
             "replace the tab with spaces"),
    settings("tab after spaces", "clusters:\n  - name: a\n  \t- name: b\n", "gpudash.yaml:3", "a tab at column 3"),
    settings("a list", "- just\n- a list\n", "gpudash.yaml:1", "mapping"),
    settings("a scalar", "just some text\n", "gpudash.yaml:1", "mapping"),
    settings("unknown top-level key", "# mine\nlabels:\n  pod: pod\nclusterz: []\n", "gpudash.yaml:4",
             "unknown key 'clusterz'", "did you mean 'clusters'"),
    # the first error is told in full, and where the others are: fixed together, not found one run at a time
    settings("several errors", "clusters:\n  - name: a\n    regoin: us-east-1\nlabels:\n  pod: foo\n",
             "gpudash.yaml:3", "unknown key 'regoin' (and 2 more: clusters.0 at line 2, labels.pod at line 5)"),
    settings("two errors of one key", "cloudwatch:\n  period: 60s\n", "gpudash.yaml:2",
             "cloudwatch.period: 60s is given where a whole number goes (and 1 more: this key)"),
    # a value is shown as YAML writes it, not as Python does ("None is not of type 'array'")
    settings("a key left empty", "clusters:\n", "gpudash.yaml:1", "clusters: no value (null) is given where a list goes",
             "e.g. [{name: gpu-cluster, region: us-east-1}]"),
    settings("yes for a boolean", "agent:\n  log_group_in_stack: yes please\n", "gpudash.yaml:2",
             "agent.log_group_in_stack: yes please is given where true or false goes"),
    settings("unknown nested key", "grafana:\n  folderr: x\n", "gpudash.yaml:2", "folderr", "did you mean 'folder'"),
    settings("unknown key in a cluster", "clusters:\n  - name: a\n    region: us-east-1\n    zone: b\n",
             "gpudash.yaml:4", "zone"),
    settings("duplicate top-level key", "labels:\n  pod: pod\nlabels:\n  pod: exported_pod\n", "gpudash.yaml:3",
             "appears twice", "first at line 1"),
    settings("duplicate nested key", "thresholds:\n  gpu_temp_celsius: {warning: 80, critical: 90, warning: 85}\n",
             "gpudash.yaml:2", "'warning' appears twice"),
    settings("bad pod label", "labels:\n  pod: workload\n", "gpudash.yaml:2", "labels.pod", "exported_pod"),
    settings("bad node label", "labels:\n  node: host\n", "gpudash.yaml:2", "labels.node", "hostname"),
    settings("bad cluster label", "labels:\n  cluster: 9cluster\n", "gpudash.yaml:2", "labels.cluster"),
    settings("bad region", "clusters:\n  - name: a\n    region: Mars\n", "gpudash.yaml:3", "clusters.0.region",
             "us-east-1"),
    settings("region with a trailing newline", 'clusters:\n  - name: a\n    region: "us-east-1\\n"\n',
             "gpudash.yaml:3", "clusters.0.region"),
    settings("cluster name with a trailing newline", 'clusters:\n  - name: "gpu\\n"\n    region: us-east-1\n',
             "gpudash.yaml:2", "clusters.0.name"),
    settings("cluster name with a space", "clusters:\n  - name: my cluster\n    region: us-east-1\n",
             "gpudash.yaml:2", "clusters.0.name"),
    settings("cluster name too long", f"clusters:\n  - name: {'a' * 101}\n    region: us-east-1\n",
             "gpudash.yaml:2", "clusters.0.name"),
    settings("cluster without a region", "clusters:\n  - name: a\n", "gpudash.yaml:2", "'region' is a required",
             "add `region:`"),
    settings("empty prometheus_label", "clusters:\n  - {name: a, region: us-east-1, prometheus_label: ''}\n",
             "gpudash.yaml:2", "prometheus_label"),
    settings("prometheus_label with a double quote",
             "clusters:\n  - {name: a, region: us-east-1, prometheus_label: 'x\"y'}\n", "gpudash.yaml:2",
             "clusters.0.prometheus_label", "double quote", "Grafana"),
    settings("prometheus_label with a single quote",
             "clusters:\n  - {name: a, region: us-east-1, prometheus_label: \"x'y\"}\n", "gpudash.yaml:2",
             "clusters.0.prometheus_label", "single or double quote", "Grafana"),
    settings("prometheus_label with a line break",
             'clusters:\n  - {name: a, region: us-east-1, prometheus_label: "x\\ny"}\n', "gpudash.yaml:2",
             "clusters.0.prometheus_label", "control character"),
    settings("two clusters of one prometheus_label",
             "clusters:\n  - {name: a, region: us-east-1, prometheus_label: p}\n"
             "  - {name: b, region: us-east-1, prometheus_label: p}\n", "gpudash.yaml:3",
             "clusters 'a' (clusters[0]) and 'b' (clusters[1]) have the same prometheus_label 'p'", "counted for both"),
    settings("one cluster without prometheus_label beside one with",
             "clusters:\n  - {name: a, region: us-east-1, prometheus_label: p}\n  - {name: b, region: us-east-1}\n",
             "gpudash.yaml:3", "cluster 'b' (clusters[1]) has no prometheus_label while 'a' has one",
             "set clusters[1].prometheus_label", "on no cluster"),
    settings("scrape interval 1m30s with the bundled alarms", "scrape:\n  interval: 1m30s\n", "gpudash.yaml:2",
             "scrape.interval 90 s", "the period of every bundled alarm, and leaves 3 scrapes in each: 10s, 12s, 15s, "
             "20s, 25s, 30s, 50s, 60s, 75s, 100s (a longer", "a longer cloudwatch.period alone does not do"),
    settings("scrape interval 1m30s with the bundled alarms and a 900 s period",
             "scrape:\n  interval: 1m30s\ncloudwatch:\n  period: 900\n", "gpudash.yaml:2",
             "alarm 'xid-error'", "divides 300 s and cloudwatch.period (10s, 12s, 15s", "copy the bundled alarms", "definitions.alarms"),
    settings("no clusters", "clusters: []\n", "gpudash.yaml:1", "clusters"),
    settings("clusters as a mapping", "clusters:\n  a: us-east-1\n", "gpudash.yaml:2", "clusters", "a list"),
    settings("duplicate cluster",
             "clusters:\n  - {name: a, region: us-east-1}\n  - {name: b, region: us-east-1}\n"
             "  - {name: a, region: us-east-2}\n", "gpudash.yaml:4", "listed twice"),
    settings("alarm prefix with a trailing newline", 'alarms:\n  name_prefix: "gpu\\n"\n', "gpudash.yaml:2",
             "alarms.name_prefix"),
    settings("dashboard prefix with a trailing newline", 'cloudwatch:\n  dashboard_prefix: "gpu\\n"\n',
             "gpudash.yaml:2", "cloudwatch.dashboard_prefix"),
    settings("folder uid with a trailing newline", 'grafana:\n  folder:\n    uid: "gpu\\n"\n', "gpudash.yaml:3",
             "grafana.folder.uid"),
    settings("folder uid too long", f"grafana:\n  folder:\n    uid: {'u' * 41}\n", "gpudash.yaml:3",
             "grafana.folder.uid"),
    settings("upper-case uid prefix", "grafana:\n  uid_prefix: GPU\n", "gpudash.yaml:2", "grafana.uid_prefix"),
    settings("refresh in words", "grafana:\n  refresh: 1 minute\n", "gpudash.yaml:2", "grafana.refresh", "such as 30s, 1m or 1h"),
    settings("time_from without now", "grafana:\n  time_from: 6h\n", "gpudash.yaml:2", "grafana.time_from"),
    settings("tags not a list", "grafana:\n  tags: gpu\n", "gpudash.yaml:2", "grafana.tags"),
    settings("datasource type", "grafana:\n  datasource:\n    type: influxdb\n", "gpudash.yaml:3",
             "grafana.datasource.type", "write one of"),
    settings("threshold as text", "thresholds:\n  gpu_temp_celsius: {warning: hot, critical: 90}\n",
             "gpudash.yaml:2", "thresholds.gpu_temp_celsius.warning", "a number"),
    settings("threshold NaN", "thresholds:\n  gpu_temp_celsius:\n    warning: .nan\n    critical: 90\n",
             "gpudash.yaml:3", "not a finite number"),
    settings("threshold infinite", "thresholds:\n  gpu_temp_celsius:\n    warning: 80\n    critical: .inf\n",
             "gpudash.yaml:4", "not a finite number"),
    settings("idle threshold NaN", "thresholds:\n  idle_gpu_util_percent: .nan\n", "gpudash.yaml:2",
             "not a finite number"),
    settings("warning above critical", "thresholds:\n  gpu_temp_celsius:\n    warning: 95\n    critical: 90\n",
             "gpudash.yaml:3", "above the critical level"),
    settings("levels without critical", "thresholds:\n  gpu_util_percent: {warning: 90}\n", "gpudash.yaml:2",
             "add `critical:`"),
    settings("unknown threshold", "thresholds:\n  gpu_temperature: {warning: 1, critical: 2}\n", "gpudash.yaml:2",
             "did you mean 'gpu_temp_celsius'"),
    # no GPU is ever under 0 %: the idle alarm and rule were written (and billed) and could never fire
    settings("idle threshold 0", "thresholds:\n  idle_gpu_util_percent: 0\n", "gpudash.yaml:2",
             "idle_gpu_util_percent: 0", "more than 0"),
    # the bundled alarm's level is the settings' own: told at its key there, not at the bundled alarm's code
    settings("framebuffer critical at the top of the ratio", "thresholds:\n  framebuffer_used_ratio: {warning: 0.9, "
             "critical: 1.0}\n", "gpudash.yaml:2", "thresholds.framebuffer_used_ratio.critical", "`> 1` never holds",
             "fix: set thresholds.framebuffer_used_ratio.critical below 1"),
    settings("framebuffer critical past the top of the ratio", "thresholds:\n  framebuffer_used_ratio: {warning: 0.9, "
             "critical: 95}\n", "gpudash.yaml:2", "thresholds.framebuffer_used_ratio.critical", "no value of it passes",
             "fix: set thresholds.framebuffer_used_ratio.critical in ratio 0-1 (e.g. 0.95 for 95 %)"),
    settings("framebuffer critical past the top, printed shorter than it is", "thresholds:\n  framebuffer_used_ratio: "
             "{warning: 0.9, critical: 95.0000001}\n", "gpudash.yaml:2", "thresholds.framebuffer_used_ratio.critical",
             "no value of it passes"),
    # the level a bundled definition reads is found as that level, not by its value: two levels (or two keys) of one
    # value were each a match, and the refusal was told at the bundled code
    settings("framebuffer levels of one value at the top of the ratio", "thresholds:\n  framebuffer_used_ratio:\n"
             "    warning: 1.0\n    critical: 1.0\n", "gpudash.yaml:4",
             "thresholds.framebuffer_used_ratio.critical is the level of the bundled alarm", "`> 1` never holds",
             "fix: set thresholds.framebuffer_used_ratio.critical below 1"),
    settings("framebuffer critical at the top of the ratio, another key of its value", "thresholds:\n"
             "  pcie_replays_per_minute: 1.0\n  framebuffer_used_ratio:\n    warning: 0.9\n    critical: 1.0\n",
             "gpudash.yaml:5", "thresholds.framebuffer_used_ratio.critical is the level of the bundled alarm"),
    # a YAML alias makes the two places one value object, which the settings copy into a level of its own each: the
    # refusal was told at the bundled code
    settings("framebuffer levels of one YAML alias at the top of the ratio", "thresholds:\n  framebuffer_used_ratio:\n"
             "    warning: &top 1.0\n    critical: *top\n", "gpudash.yaml:4",
             "thresholds.framebuffer_used_ratio.critical is the level of the bundled alarm", "`> 1` never holds",
             "fix: set thresholds.framebuffer_used_ratio.critical below 1"),
    settings("framebuffer critical a YAML alias of another key's level", "thresholds:\n"
             "  pcie_replays_per_minute: &one 1.0\n  framebuffer_used_ratio:\n    warning: 0.9\n    critical: *one\n",
             "gpudash.yaml:5", "thresholds.framebuffer_used_ratio.critical is the level of the bundled alarm"),
    settings("framebuffer levels of one YAML alias past the top of the ratio", "thresholds:\n"
             "  framebuffer_used_ratio:\n    warning: &high 95.0\n    critical: *high\n", "gpudash.yaml:3",
             "thresholds.framebuffer_used_ratio.warning is the level of the bundled panel", "no value of it passes",
             "fix: set thresholds.framebuffer_used_ratio.warning in ratio 0-1 (e.g. 0.95 for 95 %)"),
    settings("framebuffer levels of one value past the top of the ratio", "thresholds:\n  framebuffer_used_ratio:\n"
             "    warning: 95\n    critical: 95\n", "gpudash.yaml:3",
             "thresholds.framebuffer_used_ratio.warning is the level of the bundled panel", "no value of it passes",
             "fix: set thresholds.framebuffer_used_ratio.warning in ratio 0-1 (e.g. 0.95 for 95 %)"),
    settings("idle minutes too short", "thresholds:\n  idle_minutes: 2\n", "gpudash.yaml:2", "at least 5"),
    settings("idle minutes between periods", "thresholds:\n  idle_minutes: 9\n", "gpudash.yaml:2",
             "not a multiple of 5", "write a multiple of 5"),
    settings("scrape interval zero", "scrape:\n  interval: 0s\n", "gpudash.yaml:2", "scrape.interval", "such as 30s, 1m or 1m30s"),
    settings("scrape interval zero minutes", "scrape:\n  interval: 00m\n", "gpudash.yaml:2", "scrape.interval"),
    settings("scrape interval not dividing the alarms' period", "scrape:\n  interval: 90s\ncloudwatch:\n  period: 900\n",
             "gpudash.yaml:2", "its period of 300 s is not a whole number of scrape intervals (scrape.interval 90 s)",
             "pick a scrape.interval that divides 300 s"),
    settings("Grafana refresh zero", "grafana:\n  refresh: 0s\n", "gpudash.yaml:2", "grafana.refresh", "such as 30s, 1m or 1h"),
    settings("Grafana time range zero", "grafana:\n  time_from: now-0h\n", "gpudash.yaml:2", "grafana.time_from"),
    settings("PCIe replays below zero", "thresholds:\n  pcie_replays_per_minute: -1\n", "gpudash.yaml:2",
             "pcie_replays_per_minute"),
    settings("CloudWatch period", "cloudwatch:\n  period: 61\n", "gpudash.yaml:2", "cloudwatch.period",
             "write one of"),
    settings("repeated dimension", "cloudwatch:\n  dimensions: [pod, pod]\n", "gpudash.yaml:2",
             "cloudwatch.dimensions"),
    # A set that cannot tell pods or GPUs apart in a cluster: reported at its line, not at the first alarm that reads it
    settings("per-pod set without namespace", "cloudwatch:\n  dimensions: [ClusterName, pod]\n", "gpudash.yaml:2",
             "cloudwatch.dimensions [ClusterName, pod] lacks namespace", "dimensions: [ClusterName, namespace, pod]"),
    settings("per-pod set without ClusterName", "cloudwatch:\n  period: 300\n  dimensions: [namespace, pod]\n",
             "gpudash.yaml:3", "cloudwatch.dimensions [namespace, pod] lacks ClusterName"),
    settings("per-GPU set without gpu", "cloudwatch:\n  gpu_dimensions: [ClusterName, node]\n", "gpudash.yaml:2",
             "cloudwatch.gpu_dimensions [ClusterName, node] lacks gpu"),
    settings("per-GPU set of the cluster and what pods' copies keep", "cloudwatch:\n  gpu_dimensions: [ClusterName, UUID]\n",
             "gpudash.yaml:2", "cloudwatch.gpu_dimensions [ClusterName, UUID] lacks node, gpu"),
    # EKS names are case-sensitive, but a build names its files by cluster: refused, not silently one file on macOS
    settings("cluster names that differ only in case",
             "clusters:\n  - {name: ml-east, region: us-east-1}\n  - {name: ML-East, region: us-west-2}\n",
             "gpudash.yaml:3", "clusters 'ml-east' (clusters[0]) and 'ML-East' differ only in upper and lower case",
             "two settings files"),
    settings("top pods zero", "cloudwatch:\n  top_pods: 0\n", "gpudash.yaml:2", "cloudwatch.top_pods"),
    # the agent's JSON path cannot keep the pods' shares out of the per-GPU series: generate writes no widget lint fails
    settings("classic agent with virtual GPUs", "exporter:\n  virtual_gpus: true\nagent:\n  pipeline: classic\n",
             "gpudash.yaml:4", "agent.pipeline: classic with exporter.virtual_gpus: true", "would show a wrong number",
             "(Average GPU utilization)", "pcie-replays-warning", "set agent.pipeline: otel"),
    settings("empty namespace", "cloudwatch:\n  namespace: ''\n", "gpudash.yaml:2", "cloudwatch.namespace"),
    # CloudWatch's own namespaces, control characters, its length limit, a leading colon: PutMetricData refuses them
    settings("AWS namespace", "cloudwatch:\n  namespace: AWS/GPU\n", "gpudash.yaml:2",
             "cloudwatch.namespace 'AWS/GPU' begins with AWS/"),
    settings("namespace with a tab", "cloudwatch:\n  namespace: \"GPU\\tDCGM\"\n", "gpudash.yaml:2",
             "holds a control character ('\\t')"),
    settings("namespace not ASCII", "cloudwatch:\n  namespace: GPU/Über\n", "gpudash.yaml:2",
             "holds a character that is not ASCII ('Ü')"),
    settings("namespace too long", f"cloudwatch:\n  namespace: {'G' * 256}\n", "gpudash.yaml:2",
             "is 256 characters; CloudWatch takes 1 to 255"),
    settings("namespace with a leading colon", "cloudwatch:\n  namespace: ':GPU'\n", "gpudash.yaml:2",
             "begins with ':'"),
    settings("namespace of spaces", "cloudwatch:\n  namespace: '   '\n", "gpudash.yaml:2", "is only spaces"),
    settings("exporter deployment", "exporter:\n  deployment: daemonset\n", "gpudash.yaml:2", "gpu-operator"),
    settings("exporter namespace upper-case", "exporter:\n  namespace: GPU\n", "gpudash.yaml:2",
             "exporter.namespace"),
    settings("scrape interval without unit", "scrape:\n  interval: '30'\n", "gpudash.yaml:2", "scrape.interval",
             "such as 30s, 1m or 1m30s"),
    settings("scrape job with a space", "scrape:\n  job_name: dcgm exporter\n", "gpudash.yaml:2", "scrape.job_name"),
    settings("agent metric selection", "agent:\n  metric_selection: some\n", "gpudash.yaml:2", "used"),
    settings("agent flush interval", "agent:\n  force_flush_interval: 0\n", "gpudash.yaml:2",
             "agent.force_flush_interval"),
    settings("SNS topic not an ARN", "alarms:\n  actions:\n    critical: [my-topic]\n", "gpudash.yaml:3",
             "alarms.actions.critical.0", "arn:aws:sns"),
    settings("per-pod mode", "alarms:\n  per_pod: each\n", "gpudash.yaml:2", "group_by"),
    # Not a Kubernetes pod name (lower-case letters, digits, '-' and '.'): a static alarm that never gets data.
    settings("static pod name with a quote", "alarms:\n  static_pods: [\"ml/it's-0\"]\n", "gpudash.yaml:2",
             "alarms.static_pods.0"),
    settings("static pod name upper-case", "alarms:\n  static_pods: [ml/Train-0]\n", "gpudash.yaml:2",
             "alarms.static_pods.0"),
    # A static alarm's name ends in <namespace>-<pod>: two entries that name one alarm would overwrite each other.
    settings("static pods that name one alarm", "alarms:\n  per_pod: static\n  static_pods:\n    - ml/a-b\n"
             "    - ml-a/b\n", "gpudash.yaml:5", "'ml-a/b' and 'ml/a-b'", "group_by",
             "rename one of the two namespaces or pods"),
    # labels.node as one string: node, hostname or Hostname only (README: any label as a list of one)
    settings("node label string not of the three", "labels:\n  node: instance\n", "gpudash.yaml:2",
             "'instance' is written alone, which only Hostname, hostname or node may be",
             "write node: [instance] to read the node from instance alone"),
    settings("static pod listed twice", "alarms:\n  per_pod: static\n  static_pods: [ml/a, ml/a]\n",
             "gpudash.yaml:3", "'ml/a' twice", "remove the second"),
    settings("negative free framebuffer", "alarms:\n  framebuffer_free_mib: -1\n", "gpudash.yaml:2",
             "alarms.framebuffer_free_mib"),
    # a choice is said in YAML's words (not Python's ['gpu-operator', ...]) and one written in other case or close is named
    settings("choice in other case", "exporter:\n  deployment: Helm\n", "gpudash.yaml:2",
             "exporter.deployment: Helm is not one of gpu-operator, helm, static",
             "fix: did you mean 'helm'? write one of: gpu-operator, helm, static"),
    settings("choice misspelt", "alarms:\n  per_pod: groupby\n", "gpudash.yaml:2", "did you mean 'group_by'?"),
    settings("number not a choice", "cloudwatch:\n  period: 301\n", "gpudash.yaml:2",
             "cloudwatch.period: 301 is not one of 60, 300, 900, 3600", "fix: write one of: 60, 300, 900, 3600"),
    settings("definitions as a number", "definitions:\n  dashboards: 5\n", "gpudash.yaml:2",
             "definitions.dashboards", "a list"),
    Case("settings: definitions folder missing", {"gpudash.yaml": "definitions:\n  dashboards:\n    - mine\n    - nope\n",
                                                  "mine/d.py": GOOD_DASHBOARD}, "gpudash.yaml:4",
         ("definitions.dashboards.1: ", "nope: dashboards folder not found", "fix definitions.dashboards")),
    settings("single definitions folder missing", "definitions:\n  alarms: nope\n", "gpudash.yaml:2",
             "definitions.alarms: ", "nope: alarms folder not found"),
    Case("settings: definitions folder is a file", {"gpudash.yaml": "definitions:\n  dashboards: notes.txt\n",
                                                    "notes.txt": "x"}, "gpudash.yaml:2", ("notes.txt", "is a file")),
    settings("counters as a number", "counters: 5\n", "gpudash.yaml:1", "counters"),
    settings("unsafe YAML tag", "counters: !!python/object/apply:os.system ['true']\n", "gpudash.yaml:1",
             "not valid YAML"),
    settings("not UTF-8", b"# settings\nlabels:\n  pod: pod\n# caf\xe9\n", "gpudash.yaml:4", "not UTF-8"),
    settings("nested 50,000 deep", DEEP_YAML, "gpudash.yaml", "nested too deeply"),
    settings("alias bomb", ALIAS_BOMB, "gpudash.yaml:6", "more than 100,000 values"),
    settings("alias inside its own anchor", "grafana:\n  tags: &t [*t]\n", "gpudash.yaml:2", "would never end"),
    flags("--config missing", ("generate", "--out", "build", "--config", "absent.yaml"), "settings file not found",
          where="absent.yaml"),
    flags("--config is a folder", ("generate", "--out", "build", "--config", "."), "is a folder"),
    flags("--config /dev/zero", ("generate", "--out", "build", "--config", "/dev/zero"), "larger than",
          where="/dev/zero"),
    flags("--config with an error", ("lint", "--config", "conf/mine.yaml"), "labels.pod",
          files={"conf/mine.yaml": "labels:\n  pod: p\n"}, where="conf/mine.yaml:2"),

    # --- definitions -----------------------------------------------------------------------------
    definition("unknown metric", {"mine.py": GOOD_DASHBOARD.replace("GPU_UTIL", "GPU_UTILISATION")}, "mine.py:5",
               "unknown metric DCGM_FI_DEV_GPU_UTILISATION", "did you mean DCGM_FI_DEV_GPU_UTIL?", "gpudash metrics"),
    definition("raw_promql that does not parse", {"raw.py": (
        "from generator.model import Dashboard, Panel, Query, Row\n\n"
        "dashboard = Dashboard('raw', 'Raw', [Row('r', [Panel('Racks', Query('DCGM_FI_DEV_GPU_UTIL',\n"
        "    raw_promql='avg by (rack (DCGM_FI_DEV_GPU_UTIL{node=~\"$node\"})'), unit='percent')])])\n")},
               "raw.py:3", "raw_promql does not parse", "fix: correct the query"),
    definition("known field not collected", {"mine.py": GOOD_DASHBOARD.replace("GPU_UTIL", "GPU_TEMP")}, "mine.py:5",
               "DCGM_FI_DEV_GPU_TEMP is not collected"),
    definition("exporter's cumulative counter not collected", {"mine.py": GOOD_DASHBOARD.replace(
        "DCGM_FI_DEV_GPU_UTIL", "DCGM_EXP_XID_ERRORS_TOTAL")}, "mine.py:5", "DCGM_EXP_XID_ERRORS_TOTAL is not collected",
               "add DCGM_EXP_XID_ERRORS_TOTAL to the counters CSV"),
    definition("typo inside ctx.available", {
        "t.py": "from generator.model import Dashboard, Row\nfrom generator.panels import per_pod\n\n"
                "def dashboards(ctx):\n    panels = ctx.available([\n"
                "        per_pod('DCGM_FI_DEV_GPU_UTIL', 'Util'),\n        per_pod('DCGM_FI_DEV_GPU_UTILISATION', 'Typo'),\n"
                "    ])\n    return [Dashboard('t', 'T', [Row('r', panels)])]\n"}, "t.py:7",
               "unknown metric DCGM_FI_DEV_GPU_UTILISATION", "did you mean DCGM_FI_DEV_GPU_UTIL?", "gpudash metrics"),
    definition("typo inside ctx.has", {"h.py": "def dashboards(ctx):\n    if ctx.has('DCGM_FI_DEV_GPU_UTILZ'):\n"
                                               "        return []\n    return []\n"}, "h.py:2",
               "unknown metric DCGM_FI_DEV_GPU_UTILZ", "did you mean DCGM_FI_DEV_GPU_UTIL?", "gpudash metrics"),
    # thresholds read by a name the settings do not have, or of the other kind: named, with the names each takes
    definition("levels of no such threshold", {"l.py": "def dashboards(ctx):\n    ctx.levels('gpu_util')\n"
                                                      "    return []\n"}, "l.py:2",
               "ctx.levels('gpu_util'): the settings have no thresholds.gpu_util",
               "ctx.levels takes one of gpu_temp_celsius, memory_temp_celsius, framebuffer_used_ratio, gpu_util_percent"),
    definition("levels of a single threshold", {"l.py": "def dashboards(ctx):\n    ctx.levels('idle_minutes')\n"
                                                        "    return []\n"}, "l.py:2",
               "thresholds.idle_minutes is one number, not a warning and critical pair",
               "ctx.threshold one of idle_gpu_util_percent, idle_minutes, pcie_replays_per_minute"),
    definition("threshold of a pair", {"l.py": "def dashboards(ctx):\n    ctx.threshold('gpu_temp_celsius')\n"
                                               "    return []\n"}, "l.py:2",
               "thresholds.gpu_temp_celsius is a warning and critical pair, not one number"),
    # a keyword no model class takes: the fields it does take, the one meant first
    definition("misspelt keyword", {"k.py": GOOD_ALARM.replace('severity="warning"', 'sevrity="warning"')}, "k.py:4",
               "unexpected keyword argument 'sevrity'", "did you mean 'severity'? Alarm takes ", kind="alarms"),
    definition("raises", {"boom.py": "x = 1\nraise RuntimeError('no GPUs today')\n"}, "boom.py:2",
               "RuntimeError: no GPUs today", "`gpudash --debug generate`"),
    definition("syntax error", {"bad.py": "def dashboards(ctx)\n    pass\n"}, "bad.py:1", "SyntaxError"),
    definition("not UTF-8", {"latin.py": b"x = 1\ny = 'caf\xe9'\n"}, "latin.py", "SyntaxError"),
    definition("missing import", {"imp.py": "\nimport gpu_magic\n"}, "imp.py:2", "ModuleNotFoundError"),
    definition("dashboards() raises", {"f.py": "def dashboards(ctx):\n    return 1 / 0\n"}, "f.py:2",
               "ZeroDivisionError"),
    definition("bad group key", {"g.py": "from generator.model import Query\n"
                                         "q = Query('DCGM_FI_DEV_GPU_UTIL', by=('rack',))\n"}, "g.py:2",
               "cannot group by rack"),
    # the exporter's own label for a neutral key: the key meant
    definition("exporter label as a group key", {"g.py": "from generator.model import Query\n"
                                                         "q = Query('DCGM_FI_DEV_GPU_UTIL', by=('Hostname', 'gpu'))\n"},
               "g.py:2", "cannot group by Hostname", "did you mean 'node'? write by with gpudash's neutral keys"),
    definition("bad aggregation", {"a.py": "from generator.model import Query\n\n"
                                           "q = Query('DCGM_FI_DEV_GPU_UTIL', 'median')\n"}, "a.py:3", "aggregation",
               "fix: write aggregation as one of avg, sum, max, min, count"),
    definition("aggregation spelled out", {"a.py": "from generator.model import Query\n\n"
                                                   "q = Query('DCGM_FI_DEV_GPU_UTIL', 'average')\n"}, "a.py:3",
               "fix: did you mean 'avg'?"),
    # Grafana's legacy panel type (grafanalib's Graph), and a comparison written the other way round: the choice meant
    definition("legacy panel kind", {"k.py": "from generator.model import Panel, Query\n"
                                             "p = Panel('x', Query('DCGM_FI_DEV_GPU_UTIL'), kind='graph')\n"}, "k.py:2",
               "panel kind 'graph'", "fix: did you mean 'timeseries'?"),
    definition("comparison written backwards", {"c.py": "from generator.model import Condition, Query\n"
                                                        "c = Condition(Query('DCGM_FI_DEV_GPU_TEMP', 'max'), '=>', 85)\n"},
               "c.py:2", "comparison '=>'", "fix: did you mean '>='?"),
    definition("bad panel kind", {"k.py": "from generator.model import Panel, Query\n"
                                          "p = Panel('x', Query('DCGM_FI_DEV_GPU_UTIL'), kind='pie')\n"}, "k.py:2",
               "panel kind 'pie'"),
    definition("bad dashboard id", {"i.py": "from generator.model import Dashboard\n"
                                            "d = Dashboard('My Board', 'x', [])\n"}, "i.py:2", "dashboard id",
               "fix: write the id as e.g. 'training'"),
    # ctx read in the file's own lines (the `dashboard =` form), where no ctx is given: say the function form
    definition("ctx outside a function", {"c.py": GOOD_DASHBOARD.replace(
        '"Util")', '"Util", thresholds=ctx.levels("gpu_util_percent"))')}, "c.py:5", "NameError: name 'ctx'",
               "fix: ctx is given to a function, not to the file: write `def dashboards(ctx):`"),
    definition("duplicate dashboard id", {"a.py": GOOD_DASHBOARD, "b.py": GOOD_DASHBOARD}, "b.py:5", "used twice"),
    definition("label field charted", {"l.py": GOOD_DASHBOARD.replace("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DRIVER_VERSION")},
               "l.py:5", "label field", counters=GOOD_CSV + "DCGM_FI_DRIVER_VERSION, label, Driver\n"),
    definition("list of text", {"w.py": "def dashboards(ctx):\n    return ['not a dashboard']\n"}, "w.py:2",
               "returned str"),
    definition("returns None", {"n.py": "def dashboards(ctx):\n    x = 1\n    return None\n"}, "n.py:3",
               "returned NoneType"),
    definition("returns text", {"s.py": "def dashboards(ctx):\n\n    return 'board'\n"}, "s.py:3", "returned str"),
    definition("yields a number", {"y.py": "from generator.model import Dashboard\n\ndef dashboards(ctx):\n"
                                           "    yield 1\n    yield 2\n"}, "y.py:4", "returned int"),
    definition("DASHBOARDS not a list", {"d.py": "\n\nDASHBOARDS = 5\n"}, "d.py:3", "not a list"),
    definition("dashboard is a dict", {"m.py": "\ndashboard = {'title': 'x'}\n"}, "m.py:2", "returned dict"),
    definition("sys.exit(0) at import", {"e.py": "import sys\n\nsys.exit(0)\n"}, "e.py:3", "sys.exit(0)"),
    definition("sys.exit in dashboards()", {"e.py": "import sys\n\ndef dashboards(ctx):\n    sys.exit(3)\n"},
               "e.py:4", "sys.exit(3)"),
    definition("raise SystemExit", {"e.py": "raise SystemExit\n"}, "e.py:1", "sys.exit(None)"),
    # what derives from BaseException alone escaped every handler: a traceback, exit 1 (which means "differences")
    definition("raise GeneratorExit in dashboards()", {"g.py": "def dashboards(ctx):\n    raise GeneratorExit\n"},
               "g.py:2", "dashboards(ctx) raised GeneratorExit"),
    definition("a BaseException of its own at import", {"b.py": "class Stop(BaseException):\n    pass\n\n\n"
                                                                "raise Stop('no board today')\n"},
               "b.py:5", "raised Stop: no board today"),
    definition("asyncio.CancelledError in alarms()", {"a.py": "import asyncio\n\ndef alarms(ctx):\n"
                                                              "    raise asyncio.CancelledError()\n"},
               "a.py:4", "alarms(ctx) raised CancelledError", kind="alarms"),
    definition("endless recursion", {"r.py": "def f(n):\n    return f(n + 1)\n\nf(0)\n"}, "r.py:2",
               "recursed without end"),
    definition("endless loop", {"loop.py": INFINITE}, "loop.py:", "did not finish within 0.1 s", env=QUICK),
    definition("endless loop swallowing exceptions", {"loop.py": STUBBORN}, "loop.py:", "did not finish", env=QUICK),
    definition("endless loop in dashboards()", {"loop.py": "def dashboards(ctx):\n    while True:\n        pass\n"},
               "loop.py:", "dashboards(ctx) did not finish", env=QUICK),
    definition("time limit not a number", {"mine.py": GOOD_DASHBOARD}, None, "GPUDASH_DEFINITION_TIME_LIMIT",
               env={"GPUDASH_DEFINITION_TIME_LIMIT": "soon"}),
    definition("time limit zero", {"mine.py": GOOD_DASHBOARD}, None, "more than 0",
               env={"GPUDASH_DEFINITION_TIME_LIMIT": "0"}),
    definition("grafanalib panel that is not JSON", {
        "legacy.py": "from grafanalib.core import Dashboard, Graph, Row, Target\n\n"
                     "board = Dashboard(title='Old', uid='old', rows=[Row(panels=[Graph(title='x', targets=[\n"
                     "    Target(expr='up', legendFormat={1, 2})])])])\n"}, "legacy.py:3",
               "cannot be written as JSON"),
    definition("alarm of the wrong type", {"a.py": "def alarms(ctx):\n    return ['hot']\n"}, "a.py:2",
               "returned str", kind="alarms"),
    definition("alarm raises", {"a.py": "def alarms(ctx):\n    raise KeyError('gpu')\n"}, "a.py:2", "KeyError",
               kind="alarms"),
    definition("alarm defined twice", {"a.py": GOOD_ALARM, "b.py": GOOD_ALARM}, "b.py:4", "defined twice",
               kind="alarms"),
    definition("alarm severity misspelled", {"a.py": GOOD_ALARM.replace('"warning"', '"warn"')}, "a.py:4",
               "severity 'warn' is not one of critical, warning", "fix: did you mean 'warning'?", kind="alarms"),
    definition("panel unit in Grafana's words", {"u.py": GOOD_DASHBOARD.replace('"Util")', '"Util", unit="short")')},
               "u.py:5", "panel 'Util': unit 'short' is not one of", "fix: Grafana's 'short' is 'count' here"),
    definition("panel levels reversed", {"u.py": GOOD_DASHBOARD.replace('"Util")', '"Util", thresholds=(90, 70))')},
               "u.py:5", "the warning level 90 is above the critical level 70"),
    definition("panel bound as text", {"u.py": GOOD_DASHBOARD.replace('"Util")', '"Util", max="100")')},
               "u.py:5", "max is '100', not a finite number", "fix: write max=100, a number without quotes"),
    definition("query grouped by text", {"q.py": "from generator.model import Query\n\n"
                                                 "q = Query('DCGM_FI_DEV_GPU_UTIL', 'avg', 'pod')\n"}, "q.py:3",
               "by is 'pod' (text is read letter by letter)"),
    definition("alarm threshold as text", {"a.py": GOOD_ALARM.replace("90)", '"90")')}, "a.py:4",
               "threshold is '90', not a finite number", "fix: write threshold=90", kind="alarms"),
    definition("alarm threshold NaN", {"a.py": GOOD_ALARM.replace("90)", 'float("nan"))')}, "a.py:4",
               "threshold is nan, not a finite number", kind="alarms"),
    definition("alarm of a field not collected", {"a.py": GOOD_ALARM.replace("GPU_UTIL", "GPU_TEMP")}, "a.py:4",
               "DCGM_FI_DEV_GPU_TEMP is not collected", "wrap the alarm in ctx.available", kind="alarms"),

    # --- flags -----------------------------------------------------------------------------------
    flags("unknown option", ("generate", "--no-such-option"), "No such option"),
    flags("unknown command", ("frobnicate",), "No such command"),
    flags("--config before the command", ("--config", "mine.yaml", "generate"), "--config before the command",
          "gpudash generate --config ..."),
    # a definition's error says --debug shows the traceback: written after the command, it is said where it goes
    flags("--debug after the command", ("lint", "--debug"), "--debug after the command",
          "gpudash --debug lint ..."),
    flags("lint --disable of an unknown rule", ("lint", "--disable", "GF999"), "GF999", "--rules"),
    flags("verify --cluster mistyped", ("verify", "--cluster", "gpu-clustr"),
          "--cluster gpu-clustr: no such entry in clusters (gpu-cluster)", "fix: did you mean 'gpu-cluster'?"),
    flags("lint --disable of a rule id mistyped", ("lint", "--disable", "df01"), "no rule DF01; did you mean DF001?"),
    # a name in another case: difflib's ratio tells no case apart, so none was named
    flags("verify --cluster in capitals", ("verify", "--cluster", "GPU-CLUSTER"), "fix: did you mean 'gpu-cluster'?"),
    flags("lint --output xml", ("lint", "--output", "xml"), "xml"),
    flags("lint --grafana-schema nowhere", ("lint", "--grafana-schema", "nowhere"), "dashboard.jsonschema.json",
          where="nowhere"),
    flags("lint --cwagent-schema nowhere", ("lint", "--cwagent-schema", "nowhere.json"), "agent schema",
          where="nowhere.json"),
    flags("lint --cwagent-schema not JSON", ("lint", "--cwagent-schema", "agent.json"), "is not JSON",
          files={"agent.json": '{"a":\n 1,,}'}, where="agent.json:2"),
    flags("lint --cwagent-schema not a schema", ("lint", "--cwagent-schema", "agent.json"),
          "not a valid JSON schema", files={"agent.json": '{"type": 5}'}, where="agent.json"),
    # a $ref to nowhere passed the metaschema and raised while lint validated: internal error, exit 4
    flags("lint --cwagent-schema with a $ref to nowhere", ("lint", "--cwagent-schema", "agent.json"),
          "$ref '#/definitions/logs' points at nothing", files={"agent.json": '{"type": "object", "properties": '
                                                                '{"logs": {"$ref": "#/definitions/logs"}}}'},
          where="agent.json"),
    flags("lint --cwagent-schema with a $ref to another address", ("lint", "--cwagent-schema", "agent.json"),
          "$ref 'http://127.0.0.1:1/agent.json' points at nothing", files={"agent.json": '{"$ref": '
                                                                             '"http://127.0.0.1:1/agent.json"}'},
          where="agent.json"),
    flags("lint --grafana-schema without a panel schema", ("lint", "--grafana-schema", "sdk"), "not found",
          files={"sdk/dashboard.jsonschema.json": "{}"}, where="sdk/timeseries.jsonschema.json"),
    flags("lint --grafana-schema not JSON", ("lint", "--grafana-schema", "sdk"), "is not JSON",
          files={"sdk/dashboard.jsonschema.json": "{\n\n]"}, where="sdk/dashboard.jsonschema.json:3"),
    flags("verify --prometheus-url without a scheme", ("verify", "--prometheus-url", "localhost:9090"),
          "add http:// or https:// in front: --prometheus-url https://localhost:9090", where="--prometheus-url"),
    flags("verify --exporter-url of another scheme", ("verify", "--exporter-url", "ftp://node:9400"),
          "must start with http:// or https://", where="--exporter-url"),
    flags("apply --max-prune-share nan", ("apply", "--prune", "--max-prune-share", "nan"), "'nan' is not a number",
          "--max-prune-share"),
    flags("apply --retry-after-max nan", ("apply", "--retry-after-max", "nan"), "'nan' is not a number",
          "--retry-after-max"),
    flags("push --deadline nan", ("push", "--deadline", "nan"), "'nan' is not a number", "--deadline"),
    flags("verify --timeout nan", ("verify", "--timeout", "NaN"), "'NaN' is not a number", "--timeout"),
    flags("plan --endpoint-url without a scheme", ("plan", "--no-grafana", "--endpoint-url", "localhost:4566"),
          "add http:// or https:// in front", where="--endpoint-url"),
    flags("cost --prices with a typo in a rate", ("cost", "--pods", "3", "--prices", "p.json"),
          "unknown rate 'dashbord_month'", "did you mean 'dashboard_month'?",
          files={"p.json": '{"rates": {"dashbord_month": {"price": 1}}}'}, where="p.json"),
    flags("cost --prices with an unknown key", ("cost", "--pods", "3", "--prices", "p.json"), "unknown key 'rate'",
          "did you mean 'rates'?", files={"p.json": '{"rate": {"dashboard_month": {"price": 1}}}'}, where="p.json"),
    # a rate written at the top level, as the --help's "same keys as the bundled price file" may be read
    flags("cost --prices with a rate outside rates", ("cost", "--pods", "3", "--prices", "p.json"),
          "unknown key 'dashboard_month': a rate, which goes under \"rates\" with its fields",
          'fix: write {"rates": {"dashboard_month": {"price": 3.0}}}', files={"p.json": '{"dashboard_month": 2.5}'},
          where="p.json"),
    flags("cost --prices with a word for a price", ("cost", "--pods", "3", "--prices", "p.json"),
          'rates.dashboard_month.price is "abc", not a number', '{"price": 3.0}',
          files={"p.json": '{"rates": {"dashboard_month": {"price": "abc"}}}'}, where="p.json"),
    flags("cost --prices with a field a rate lacks", ("cost", "--pods", "3", "--prices", "p.json"),
          "has no field 'prize'", "did you mean 'price'?",
          files={"p.json": '{"rates": {"dashboard_month": {"prize": 1}}}'}, where="p.json"),
    # tiers that end with a bounded tier priced what passed it at nothing: 1,700,009 metrics for $2,997 (10,000 at $0.30)
    flags("cost --prices with tiers that leave the rest unpriced", ("cost", "--pods", "50000", "--prices", "p.json"),
          "rates.custom_metric_month.tiers ends with a tier of 10000 units: what passes it would be priced at nothing",
          'end the tiers with one of null units (the rest), e.g. [[10000, 0.3], [null, 0.1]]',
          files={"p.json": '{"rates": {"custom_metric_month": {"tiers": [[10000, 0.3]]}}}'}, where="p.json"),
    flags("cost --prices with a tier after the rest", ("cost", "--pods", "3", "--prices", "p.json"),
          "rates.custom_metric_month.tiers holds a tier after the one of null units (the rest): it is never reached",
          'end the tiers with one of null units (the rest), e.g. [[10000, 0.3], [null, 0.1]]',
          files={"p.json": '{"rates": {"custom_metric_month": {"tiers": [[null, 0.3], [10000, 0.1]]}}}'},
          where="p.json"),
    # counts of things and tier sizes are whole: half a free dashboard, a tier of no metrics or of half a one mean nothing
    prices("with half a free dashboard", {"free_dashboards": {"count": 2.5}},
           "rates.free_dashboards.count is 2.5, not a whole number of dashboards, 0 or more", '{"count": 3}'),
    prices("with a fraction of free alarm metrics", {"free_tier": {"alarm_metrics": 0.5}},
           "rates.free_tier.alarm_metrics is 0.5, not a whole number of alarm metrics"),
    prices("with a tier of no units", {"custom_metric_month": {"tiers": [[0, 0.3], [None, 0.1]]}},
           "rates.custom_metric_month.tiers[0] is a tier of 0 units: a tier holds a whole number of units, 1 or more",
           "leave out a tier of none"),
    prices("with a tier of a fraction of units",
           {"custom_metric_month": {"tiers": [[10000, 0.3], [10000.5, 0.2], [None, 0.1]]}},
           "rates.custom_metric_month.tiers[1] is a tier of 10000.5 units"),
    # a key written twice: json keeps the last silently, so the first, the price the user read, was not the one billed
    flags("cost --prices with a rate written twice", ("cost", "--pods", "3", "--prices", "p.json"),
          "prices file: key 'dashboard_month' appears twice in one object ({\"price\": 3} and {\"price\": 4})",
          "keep one of the two",
          files={"p.json": '{"rates": {"dashboard_month": {"price": 3}, "dashboard_month": {"price": 4}}}'},
          where="p.json"),
    flags("cost --prices not JSON", ("cost", "--pods", "3", "--prices", "p.json"), "not JSON",
          files={"p.json": '{"rates":\n  {]'}, where="p.json:2"),
    flags("cost without --pods", ("cost",), "--pods"),
    flags("cost with negative pods", ("cost", "--pods", "-1"), "--pods"),
    flags("verify --skip of an unknown group", ("verify", "--skip", "dns"), "--skip"),
    flags("verify --timeout 0", ("verify", "--timeout", "0"), "--timeout"),
    flags("--out is a file", ("generate", "--out", "notes.txt"), "is a file", files={"notes.txt": "x"},
          where="notes.txt"),
    flags("--out holds other files", ("generate", "--out", "site"), "did not write", files={"site/index.html": "x"},
          where="site"),
    flags("--out holds another tool's manifest.json", ("generate", "--out", "site"), "did not write",
          files={"site/manifest.json": '{"name": "app", "files": {}}', "site/index.html": "x"}, where="site"),
    flags("--out under a file", ("generate", "--out", "notes.txt/build"),
          "notes.txt, on this path, is a file, not a folder", "fix: pass a path whose parents are folders",
          files={"notes.txt": "x"}, where="notes.txt/build"),
    flags("--out on a read-only file system", ("generate", "--out", "/proc/gpudash-test/build"),
          "cannot create the output directory", where="/proc"),
    flags("init-config over a file", ("init-config", "gpudash.yaml"), "exists already", files={"gpudash.yaml": ""},
          where="gpudash.yaml"),
    flags("init-config under a file", ("init-config", "notes.txt/gpudash.yaml"),
          "notes.txt, on this path, is a file, not a folder", files={"notes.txt": "x"}, where="notes.txt/gpudash.yaml"),
    flags("lint --from a file inside a build", ("lint", "--from", "b/grafana/x.json"), "not a folder",
          "fix: pass --from b", files={"b/manifest.json": "{}", "b/grafana/x.json": "{}"}, where="b/grafana/x.json"),
    flags("lint --from a missing folder", ("lint", "--from", "nowhere"), "does not exist", where="nowhere"),
    # (it said "--from takes a whole build" of a --diff, an option the command was not given)
    flags("preview --diff a file", ("preview", "--sample", "--diff", "notes.txt"), "not a folder: --diff takes a "
          "whole build", files={"notes.txt": "x"}, where="notes.txt"),
    flags("push --from a file", ("push", "--from", "notes.txt"), "not a folder", files={"notes.txt": "x"},
          where="notes.txt"),
    flags("plan --from a folder without a manifest", ("plan", "--from", "empty", "--no-cloudwatch"),
          "no manifest.json", files={"empty/readme": "x"}, where="empty"),

    # --- environment -----------------------------------------------------------------------------
    environment("GPUDASH_CONFIG missing", {"GPUDASH_CONFIG": "gone.yaml"}, "gone.yaml", "not found",
                "GPUDASH_CONFIG"),
    environment("GPUDASH_CONFIG is a folder", {"GPUDASH_CONFIG": "."}, None, "is a folder"),
    environment("GPUDASH_CONFIG with an error", {"GPUDASH_CONFIG": "team.yaml"}, "team.yaml:2", "labels.pod",
                files={"team.yaml": "labels:\n  pod: who\n"}),
    environment("GPUDASH_CONFIG wins over ./gpudash.yaml", {"GPUDASH_CONFIG": "team.yaml"}, "team.yaml:2",
                "not valid YAML", files={"team.yaml": "labels: [\n", "gpudash.yaml": ""}),
    environment("./gpudash.yaml found and wrong", {}, "gpudash.yaml:3", "labels.node",
                files={"gpudash.yaml": "labels:\n  pod: pod\n  node: HOSTNAME\n"}),
    environment("push without GRAFANA_URL", {"GRAFANA_URL": ""}, None, "GRAFANA_URL is not set",
                args=("push", "--skip-verify")),
    environment("push without a token", {"GRAFANA_URL": "http://127.0.0.1:9", "GRAFANA_TOKEN": "",
                                         "GRAFANA_USER": ""}, None, "no Grafana credentials",
                args=("push", "--skip-verify")),
    environment("push without a Prometheus to check", {"GRAFANA_URL": "http://127.0.0.1:9", "GRAFANA_TOKEN": "t",
                                                      "PROMETHEUS_URL": None}, "--prometheus-url (PROMETHEUS_URL)",
                "no Prometheus URL is given", "--skip-verify", args=("push",)),
    environment("push with a missing token file", {"GRAFANA_URL": "http://127.0.0.1:9"}, "token.txt",
                "Grafana token file not found", args=("push", "--skip-verify", "--token-file", "token.txt")),
    # an empty token file was "no Grafana credentials ... set GRAFANA_TOKEN, or --token-file" to one who gave it
    environment("push with an empty token file", {"GRAFANA_URL": "http://127.0.0.1:9"}, "token.txt",
                "the Grafana token file is empty", files={"token.txt": "\n"},
                args=("push", "--skip-verify", "--token-file", "token.txt")),
    # an Authorization header's value copied whole: Grafana answered 401 "rejected the credentials"
    environment("GRAFANA_TOKEN with its Bearer", {"GRAFANA_URL": "http://127.0.0.1:9", "GRAFANA_TOKEN": "Bearer glsa_x"},
                "GRAFANA_TOKEN", "begins with 'Bearer'", "give the token alone", args=("plan", "--no-cloudwatch")),
    # a token file written as a shell or .env line, quoted, or with a second word: Grafana answered 401 "rejected the
    # credentials", and its fix said to set GRAFANA_TOKEN to one who gave a file
    *(environment(f"token file {name}", {"GRAFANA_URL": "http://127.0.0.1:9"}, "token.txt", said,
                  "the file holds the token, not a line of shell or .env", files={"token.txt": text},
                  args=("push", "--skip-verify", "--token-file", "token.txt"))
      for name, text, said in (("as .env", "GRAFANA_TOKEN=glsa_x\n", "is written as an assignment (GRAFANA_TOKEN=...)"),
                               ("as shell", "export GRAFANA_TOKEN=glsa_x\n", "holds a space: it is one word"),
                               ("quoted", '"glsa_x"\n', "is written in quotes"))),
    environment("GRAFANA_TOKEN of two words", {"GRAFANA_URL": "http://127.0.0.1:9", "GRAFANA_TOKEN": "glsa_x glsa_y"},
                "GRAFANA_TOKEN", "the Grafana token holds a space", args=("plan", "--no-cloudwatch")),
    # a token of spaces alone was said to be "written in quotes"
    environment("GRAFANA_TOKEN of spaces", {"GRAFANA_URL": "http://127.0.0.1:9", "GRAFANA_TOKEN": "   "},
                "GRAFANA_TOKEN", "the Grafana token is blank", args=("plan", "--no-cloudwatch")),
    # read without end: a device (memory grew until the process was killed), a named pipe with no writer (waited on)
    environment("push with --token-file /dev/zero", {"GRAFANA_URL": "http://127.0.0.1:9"}, "/dev/zero",
                "larger than", args=("push", "--skip-verify", "--token-file", "/dev/zero")),
    # a dashboard's link copied from the browser: the API paths would be sent inside its query string
    environment("GRAFANA_URL copied from a dashboard", {"GRAFANA_URL": "https://g.example.com/grafana/d/abc/gpu?orgId=1",
                                                        "GRAFANA_TOKEN": "t"}, "GRAFANA_URL",
                "'https://g.example.com/grafana/d/abc/gpu' has a query string or fragment",
                "GRAFANA_URL=https://g.example.com/grafana", args=("plan", "--no-cloudwatch")),
    environment("PROMETHEUS_URL with a fragment", {"PROMETHEUS_URL": "http://prom:9090/#/graph"}, "PROMETHEUS_URL",
                "has a query string or fragment", "PROMETHEUS_URL=http://prom:9090", args=("verify",)),
    # a page's link from either web UI: the fix gave the page's own address (Prometheus' /graph, Grafana's
    # /explore), below which the API paths are not served either
    environment("PROMETHEUS_URL copied from its graph page", {"PROMETHEUS_URL": "http://prom:9090/graph?g0.expr=up"},
                "PROMETHEUS_URL", "has a query string or fragment", "PROMETHEUS_URL=http://prom:9090\n",
                args=("verify",)),
    environment("GRAFANA_URL copied from Explore", {"GRAFANA_URL": "https://g.example.com/grafana/explore?left=x",
                                                    "GRAFANA_TOKEN": "t"}, "GRAFANA_URL",
                "has a query string or fragment", "GRAFANA_URL=https://g.example.com/grafana\n",
                args=("plan", "--no-cloudwatch")),
    environment("PROMETHEUS_URL without a scheme", {"PROMETHEUS_URL": "u:s3cret@prom:9090"}, "PROMETHEUS_URL",
                "'***@prom:9090' has no scheme", "PROMETHEUS_URL=https://prom:9090", args=("verify",)),
    environment("AWS_ENDPOINT_URL without a scheme", {"AWS_ENDPOINT_URL": "localhost:4566"}, "AWS_ENDPOINT_URL",
                "AWS_ENDPOINT_URL=https://localhost:4566", args=("apply", "--dry-run", "--skip-verify")),
    environment("AWS_PROFILE unknown", {"AWS_PROFILE": "nope", "AWS_CONFIG_FILE": "absent",
                                        "AWS_SHARED_CREDENTIALS_FILE": "absent"}, "AWS_PROFILE",
                "AWS profile 'nope' not found", args=("apply", "--dry-run", "--skip-verify")),
    environment("GPUDASH_GRAFANA_SCHEMA nowhere", {"GPUDASH_GRAFANA_SCHEMA": "nowhere"}, "nowhere",
                "dashboard.jsonschema.json", args=("lint",)),
    environment("GPUDASH_CWAGENT_SCHEMA nowhere", {"GPUDASH_CWAGENT_SCHEMA": "nowhere.json"}, "nowhere.json",
                "agent schema", args=("lint",)),

    # --- remote systems (waits run on the test clock) ---------------------------------------------
    Case("remote: Grafana unreachable (push)", {}, None, ("cannot reach Grafana at http://127.0.0.1:9",
                                                          "nothing was published"),
         args=("push", "--skip-verify"), env={"GRAFANA_URL": "http://127.0.0.1:9", "GRAFANA_TOKEN": "t"}, code=3),
    Case("remote: Grafana unreachable (plan)", {}, None, ("cannot reach Grafana",),
         args=("plan", "--no-cloudwatch"), env={"GRAFANA_URL": "http://127.0.0.1:9", "GRAFANA_TOKEN": "t"}, code=3),
    Case("remote: Grafana URL without a scheme", {}, None, ("add http:// or https://",),
         args=("push", "--skip-verify"), env={"GRAFANA_URL": "127.0.0.1:9", "GRAFANA_TOKEN": "t"}),

    # --- the flags naming clusters the settings had (before any read: CloudWatch is unreachable here) ---------------
    *(Case(f"flags: {name}", {"gpudash.yaml": "project: shop\nclusters:\n  - {name: a, region: us-east-1}\n"},
           where, says, args=("apply", "--skip-verify", "--endpoint-url", "http://127.0.0.1:9", *flags),
           env={"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y", "AWS_DEFAULT_REGION": "us-east-1"})
      for name, flags, where, says in (
          ("--renamed-from empty", ("--renamed-from", ""), "--renamed-from ''", ("never empty",)),
          ("--removed-cluster blank", ("--removed-cluster", " "), "--removed-cluster ' '", ("never empty",)),
          ("one cluster renamed and removed", ("--renamed-from", "b", "--removed-cluster", "b"),
           "--renamed-from b, --removed-cluster b", ("either renamed or removed, not both",)))),

    # --- builds read with --from -----------------------------------------------------------------
    built("manifest not JSON", {}, b"{files: ", "shipped/manifest.json:1", "not JSON"),
    built("manifest not JSON (plan)", {}, b"<html>", "shipped/manifest.json:1", "not JSON", command="plan"),
    built("manifest not JSON (push)", {}, b"[1, 2", "shipped/manifest.json:1", "not JSON", command="push"),
    built("manifest not JSON (apply)", {}, b"\xff\xfe", "shipped/manifest.json", "not UTF-8", command="apply"),
    built("manifest without files", {}, b'{"generator": "gpudash"}', "shipped/manifest.json", "no `files`"),
    built("manifest without files (push)", {}, b"{}", "shipped/manifest.json", "no `files`", command="push"),
    built("manifest files as a list", {}, b'{"files": ["a"]}', "shipped/manifest.json", "no `files`",
          command="plan"),
    built("manifest is a list", {}, b"[]", "shipped/manifest.json", "no `files`", command="apply"),
    built("manifest leaves the build", {}, b'{"files": {"../secret": "00"}}', "shipped/manifest.json",
          "not a path inside the build", command="plan"),
    built("manifest lists a missing file", {}, b'{"files": {"grafana/x.json": "00"}}', "shipped", "is missing"),
    built("dashboard edited after generate", {"grafana/x.json": dashboard_file()},
          manifest_for({"grafana/x.json": b"{}"}), "shipped", "differs from the manifest", command="push"),
    built("dashboard not JSON", {"grafana/x.json": b'{"uid": "x",\n  "title": }'}, None, "shipped/grafana/x.json:2",
          "not JSON", command="push"),
    built("dashboard not JSON (lint)", {"grafana/x.json": b"<html>oops</html>"}, None,
          "shipped/grafana/x.json:1", "not JSON"),
    built("dashboard is a list", {"grafana/x.json": b"[]"}, None, "shipped/grafana/x.json", "with uid",
          command="plan"),
    built("dashboard without uid", {"grafana/x.json": b'{"title": "x"}'}, None, "shipped/grafana/x.json",
          "with uid", command="push"),
    built("CloudWatch dashboard without a body", {"cloudwatch/dashboards/a.json": b'{"DashboardName": "a"}'}, None,
          "shipped/cloudwatch/dashboards/a.json", "DashboardBody", command="apply"),
    built("CloudWatch dashboard body not JSON",
          {"cloudwatch/dashboards/a.json": b'{"DashboardName": "a", "DashboardBody": "{"}'}, None,
          "shipped/cloudwatch/dashboards/a.json", "not JSON", command="apply"),
    built("alarm list not JSON", {"cloudwatch/alarms.json": b"{"}, None, "shipped/cloudwatch/alarms.json:1",
          "not JSON", command="apply"),
    built("alarm list without alarms", {"cloudwatch/alarms.json": b'{"Alarms": []}'}, None,
          "shipped/cloudwatch/alarms.json", "alarms", command="plan"),
    built("alarms not a list", {"cloudwatch/alarms.json": b'{"alarms": {"a": 1}}'}, None,
          "shipped/cloudwatch/alarms.json", "not a list", command="apply"),
    built("build without the agent ConfigMaps", {"grafana/x.json": dashboard_file()}, None, "shipped",
          AGENT_FILE),
    built("agent ConfigMaps damaged", {AGENT_FILE: b"kind: ConfigMap\ndata: [\n"}, None, f"shipped/{AGENT_FILE}",
          "not the agent ConfigMaps"),
    built("deeply nested dashboard", {"grafana/x.json": b"[" * 100_000 + b"]" * 100_000}, None,
          "shipped/grafana/x.json", "nested too deeply", command="push"),
    built("dashboard uid is a number", {"grafana/x.json": dashboard_file(5)}, None, "shipped/grafana/x.json",
          "`uid` (text)"),
    built("dashboard uid is a number (push)", {"grafana/x.json": dashboard_file(5)}, None, "shipped/grafana/x.json",
          "`uid` (text)", command="push"),
    built("dashboard title is a list", {"grafana/x.json": json.dumps({"uid": "x", "title": ["X"]}).encode()}, None,
          "shipped/grafana/x.json", "`title` (text)", command="push"),
    built("two dashboards with one uid", {"grafana/a.json": dashboard_file("x"), "grafana/b.json": dashboard_file("x")},
          None, "shipped/grafana/b.json", "uid 'x' is also the uid of grafana/a.json", command="push"),
    built("dashboard holding NaN", {"grafana/x.json": b'{"uid": "x", "title": "X", "max": NaN}'}, None,
          "shipped/grafana/x.json", "NaN", command="push"),
    built("dashboard holding Infinity (lint)", {"grafana/x.json": b'{"uid": "x", "title": "X", "max": -Infinity}'},
          None, "shipped/grafana/x.json", "-Infinity"),
    built("CloudWatch dashboard name is a number",
          {"cloudwatch/dashboards/a.json": json.dumps({"DashboardName": 1, "DashboardBody": "{}"}).encode()}, None,
          "shipped/cloudwatch/dashboards/a.json", "`DashboardName` (text)", command="apply"),
    built("two CloudWatch dashboards with one name", {f"cloudwatch/dashboards/{f}.json": json.dumps(
        {"DashboardName": "a", "DashboardBody": json.dumps({"widgets": [{"properties": {"markdown": "# a"}}]})}).encode()
        for f in ("a", "b")}, None, "shipped/cloudwatch/dashboards", "dashboard 'a' is listed twice", command="apply"),
    built("alarm without a name", {"cloudwatch/alarms.json": json.dumps(
        {"alarms": [{"Region": "us-east-1", "Request": {"Threshold": 1}}]}).encode()}, None,
          "shipped/cloudwatch/alarms.json", "AlarmName", command="apply"),
    built("alarm region is a number", {"cloudwatch/alarms.json": json.dumps(
        {"alarms": [{"Region": 1, "Request": {"AlarmName": "a"}}]}).encode()}, None,
          "shipped/cloudwatch/alarms.json", "Region", command="apply"),
    built("two alarms with one name", {"cloudwatch/alarms.json": json.dumps(
        {"alarms": [{"Region": "us-east-1", "Request": {"AlarmName": "a"}}] * 2}).encode()}, None,
          "shipped/cloudwatch/alarms.json", "alarm 'a' in us-east-1 is listed twice", command="apply"),
]


def _good_build(cli_session, out: Path) -> None:
    code, _, stderr = cli_session("generate", "--config", str(default_config()), "--out", str(out))
    assert code == 0, stderr


@pytest.fixture(scope="session")
def previous_build(tmp_path_factory, cli_session):
    """A good build made once: each case borrows it as its build/ (previous_build_in_place)."""
    out = tmp_path_factory.mktemp("previous") / "build"
    _good_build(cli_session, out)
    return out


class BuildInPlace:
    """The good build moved in as a case's build/ (`path`), with its files' bytes (`before`); `unchanged()` reads
    them again after the case and says whether they are the same."""

    def __init__(self, path: Path, before: dict[str, bytes]):
        self.path, self.before, self.read_after = path, before, None

    def unchanged(self) -> bool:
        self.read_after = self.path.is_dir() and not self.path.is_symlink() and snapshot(self.path) == self.before
        return self.read_after

    def changes(self) -> list[str]:
        """The files the case wrote, removed or changed (all, when build/ is no longer a folder)."""
        after = snapshot(self.path) if self.path.is_dir() and not self.path.is_symlink() else {}
        return sorted(name for name in {*self.before, *after} if self.before.get(name) != after.get(name))


_GOOD_BUILD: dict[str, dict[str, bytes]] = {}  # the good build's files, read once while no case changes them


@pytest.fixture
def previous_build_in_place(previous_build, tmp_path, cli_session):
    """The good build as the case's build/: moved in (a rename: its own files, as a copy would hold them, none
    written) and moved back after the case when it is as it was. One that a case changed stays with that case,
    and the good build is made again for the next. Its files are read once, when it is made: a build moved back is
    byte for byte what was read (each case compares every file after it ran, `unchanged`; a case that failed before
    it did is compared here)."""
    if not previous_build.exists():
        _good_build(cli_session, previous_build)
        _GOOD_BUILD.clear()
    build = tmp_path / "build"
    previous_build.rename(build)
    if "files" not in _GOOD_BUILD:
        _GOOD_BUILD["files"] = snapshot(build)
    place = BuildInPlace(build, _GOOD_BUILD["files"])
    yield place
    if place.read_after if place.read_after is not None else place.unchanged():
        build.rename(previous_build)


@pytest.fixture(scope="session")
def cli_session():
    from click.testing import CliRunner

    from generator.cli import main

    def invoke(*args: str, env: dict[str, str | None] | None = None):
        result = CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)
        return result.exit_code, result.stdout, result.stderr

    return invoke


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_corpus_is_large_and_distinct():
    names = [case.name for case in CASES]
    assert len(set(names)) == len(names)
    assert len(CASES) >= 120
    kinds = {name.split(":")[0].split(" (")[0] for name in names}
    assert kinds == {"csv", "settings", "definition", "flags", "environment", "build", "remote"}


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_bad_input(case: Case, tmp_path, monkeypatch, previous_build_in_place, cli_session):
    build = previous_build_in_place.path
    for relative, content in case.files.items():
        path = tmp_path / relative
        assert path != build and build not in path.parents, "a case writes its own files, not into the build"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    monkeypatch.chdir(tmp_path)
    env = {"GPUDASH_CONFIG": None, "GRAFANA_URL": None, "GRAFANA_TOKEN": None, "GPUDASH_GRAFANA_SCHEMA": None,
           "GPUDASH_CWAGENT_SCHEMA": None, "GPUDASH_DEFINITION_TIME_LIMIT": None, **case.env}

    code, _, stderr = cli_session(*case.args, env=env)

    assert code == case.code, stderr
    assert "Traceback" not in stderr
    messages = [line for line in stderr.splitlines() if line.lower().startswith("error")]
    assert len(messages) == 1, stderr
    message = stderr[stderr.lower().index(messages[0].lower()):]
    if case.where is not None:
        assert case.where in messages[0], (case.where, stderr)
    for fragment in case.says:
        assert fragment in message, (fragment, stderr)
    if not stderr.startswith("Usage:"):  # gpudash's own errors say what to do; click's show the usage
        assert "\n  fix: " in message or "Usage:" in stderr, stderr
    assert previous_build_in_place.unchanged(), previous_build_in_place.changes()


def test_debug_shows_the_traceback(tmp_path, cli):
    (tmp_path / "gpudash.yaml").write_text("labels: [\n")
    code, _, stderr = cli("--debug", "generate", "--config", str(tmp_path / "gpudash.yaml"), "--out",
                          str(tmp_path / "b"))
    assert code == 2 and "Traceback" in stderr


def test_ctrl_c_outside_a_publish_is_exit_130_not_differences(cli, monkeypatch):
    """`plan` exits 1 for differences, so a CI drift check must not read Ctrl-C as drift."""
    from generator import cli_base

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_base, "load_project_for", interrupted)
    monkeypatch.setattr("generator.cli_publish.load_project_for", interrupted, raising=False)
    code, _, stderr = cli("plan", "--no-cloudwatch", env={"GRAFANA_URL": "http://127.0.0.1:9", "GRAFANA_TOKEN": "x" * 8})
    assert code == 130 and "interrupted (Ctrl-C)" in stderr and "Aborted!" not in stderr
