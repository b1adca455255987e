"""`--sample`: a local Prometheus holding a bundled exporter payload, so a preview needs no cluster.

The payload (`defaults/sample-exporter.prom`) is one scrape of a DCGM exporter. It is turned into a
history over the preview's range (gauges wander around their recorded value, counters climb to it),
with the target labels gpudash's scrape job attaches (`node`, `instance`, `job`) and the workload's labels as the
settings name them (as_scraped), written as
OpenMetrics and loaded with `promtool tsdb create-blocks-from openmetrics` into a fresh TSDB; then
Debian's `prometheus` serves it on 127.0.0.1 and the preview queries it like any other Prometheus.
The queries are the panels' own, evaluated by Prometheus: no PromQL is reimplemented here.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Callable, Iterator

from ..catalog import dcgm_meaning
from ..errors import GpudashError, InputError
from ..resources import default_counters

SAMPLE = default_counters().parent / "sample-exporter.prom"
_LINE = re.compile(r"^(?P<name>[A-Za-z_:][\w:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)(?:\s+\S+)?$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


class SampleUnavailable(GpudashError):
    """`--sample` needs Prometheus' own programs, which this machine lacks."""


def parse(text: str) -> list[tuple[str, str, dict[str, str], float]]:
    """(name, type, labels, value) per sample of a Prometheus text exposition."""
    types: dict[str, str] = {}
    samples = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("# TYPE "):
            parts = line.split()
            if len(parts) >= 4:
                types[parts[2]] = parts[3]
            continue
        if not line.strip() or line.startswith("#"):
            continue
        match = _LINE.match(line)
        if not match:
            raise InputError("not a line of the Prometheus text format", where=f"{SAMPLE}:{number}",
                             hint="reinstall gpudash")
        labels = dict(_LABEL.findall(match["labels"] or ""))
        # a field's history follows its meaning (the catalog of DCGM's fields), not `# TYPE`: the exporter serves
        # DCGM's NVLink throughput (MB/s) typed counter
        kind = dcgm_meaning(match["name"])[0] or types.get(match["name"], "gauge")
        samples.append((match["name"], kind, labels, float(match["value"])))
    return samples


def _wander(name: str, value: float, t: float, seed: int) -> float:
    """A gauge's value at `t`: within about 8% of the recorded one; 0 stays 0, ratios stay <= 1 and
    utilizations <= 100."""
    if value == 0:
        return 0.0
    swing = 0.06 * math.sin(t / 600 + seed) + 0.02 * math.sin(t / 97 + 2 * seed)
    moved = value * (1 + swing)
    if value <= 1:
        return min(moved, 1.0)
    return min(moved, 100.0) if name.endswith("_UTIL") else moved


def as_scraped(settings) -> Callable[[dict[str, str]], dict[str, str]]:
    """The sample's labels as the settings say their Prometheus carries them: the workload's `pod`, `namespace` and
    `container` under the names `labels` gives (`exported_pod` beside the exporter pod's own `pod`, `namespace`,
    `container`, as a ServiceMonitor without honorLabels leaves them; `pod_name` and `uuid` as --use-old-namespace
    writes them), so that the per-pod panels of such settings draw the sample's pods."""
    from ..exporter_styles import exporter_daemonset, exporter_namespace, style_for
    from ..series_labels import WORKLOAD, uuid_label

    written = (settings.labels.namespace, settings.labels.pod, settings.labels.container)
    renamed = {old: new for old, new in zip(WORKLOAD, written) if old != new}
    if uuid_label(written) != "UUID":
        renamed["UUID"] = uuid_label(written)
    target = {}
    if any(name.startswith("exported_") for name in written):  # the scrape target's own, the exporter pod's
        target = {"namespace": exporter_namespace(settings), "pod": f"{exporter_daemonset(settings)}-sample",
                  "container": style_for(settings).container}

    def labelled(labels: dict[str, str]) -> dict[str, str]:
        return {**{renamed.get(name, name): value for name, value in labels.items()}, **target}

    return labelled


def history(samples: list[tuple[str, str, dict[str, str], float]], start: float, end: float, spacing: float,
            job: str, labelled: Callable[[dict[str, str]], dict[str, str]] = dict) -> str:
    """The samples as an OpenMetrics history from `start` to `end`, one point every `spacing` seconds, each series'
    labels as `labelled` gives them (as_scraped)."""
    out: list[str] = []
    times = [end - spacing * i for i in range(int((end - start) // spacing), -1, -1)]
    by_name: dict[str, list] = {}
    for sample in samples:
        by_name.setdefault(sample[0], []).append(sample)
    for name, group in by_name.items():
        out.append(f"# TYPE {name} gauge")  # counters keep their name: OpenMetrics counters need `_total`
        for seed, (_, kind, labels, value) in enumerate(group):
            node = labels.get("Hostname", "sample-node")
            target = {**labelled(labels), "node": node, "instance": f"{node}:9400", "job": job}
            text = ",".join(f'{k}="{v}"' for k, v in sorted(target.items()))
            for t in times:
                if kind == "counter":
                    rate = value / (30 * 86400)  # the recorded total reached after a month at a steady rate
                    point = max(0.0, round(value - rate * (end - t)))
                else:
                    point = _wander(name, value, t, seed)
                out.append(f"{name}{{{text}}} {point:.6g} {t:.3f}")
    out.append("# EOF")
    return "\n".join(out) + "\n"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise SampleUnavailable(f"--sample needs `{name}` (Prometheus' own program), which is not installed",
                                hint="install Debian's prometheus package (apt-get install prometheus), or pass "
                                     "--prometheus-url to preview against a Prometheus you have")
    return path


BLOCK_SECONDS = 7200  # promtool writes backfilled recordings in blocks of 2 h aligned to Unix time


def backfill_start(begin: float, interval: str) -> int:
    """The --start to give `promtool tsdb create-blocks-from rules` for recordings from `begin` on, evaluated every
    `interval`. Prometheus 2.x's promtool writes nothing, and exits 0, when its start lies less than an evaluation
    interval before a 2 h block boundary: its first block then holds no evaluation and its loop stops there
    (prometheus/prometheus#19714; the group's phase hashes the rule file's path, so a temporary folder's name decided
    it: preview --sample failed "internal error" about one run in a few hundred). Then start a little over an interval
    earlier: the recordings before the history read nothing."""
    from ..settings import duration_seconds

    seconds = math.ceil(duration_seconds(interval) or 60)
    start = math.floor(begin)
    to_boundary = -start % BLOCK_SECONDS
    if 0 < to_boundary <= seconds + 1:
        start -= seconds + 2
    return start


@contextmanager
def serve(range_s: float, end: float, job: str, spacing: float = 15.0,
          recorded: dict | None = None, labelled: Callable[[dict[str, str]], dict[str, str]] = dict) -> Iterator[str]:
    """A Prometheus on 127.0.0.1 holding the sample history over [end - range_s, end]; its URL. `recorded` (a rule
    group: the counters' recordings Grafana's rate panels read, promql.counted_rules): its history over the same span
    too, as `promtool tsdb create-blocks-from rules` writes it (docs/grafana-panels.md, "Counter rates")."""
    prometheus, promtool = _binary("prometheus"), _binary("promtool")
    samples = parse(SAMPLE.read_text(encoding="utf-8"))
    begin = end - range_s - 600
    with tempfile.TemporaryDirectory(prefix="gpudash-sample-") as folder:
        work = Path(folder)
        (work / "sample.om").write_text(history(samples, begin, end, spacing, job, labelled), encoding="utf-8")
        made = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", "--quiet",
                               str(work / "sample.om"), str(work / "data")], capture_output=True, text=True)
        if made.returncode != 0:
            raise GpudashError(f"promtool could not load the sample: {made.stderr.strip()[-400:]}",
                               hint="check the prometheus package (promtool) on this machine")
        (work / "prometheus.yml").write_text("global: {}\n", encoding="utf-8")
        if recorded:
            with _running(prometheus, work) as url:
                (work / "recorded.yaml").write_text(json.dumps({"groups": [recorded]}), encoding="utf-8")
                first = backfill_start(begin, recorded["interval"])
                made = subprocess.run([promtool, "tsdb", "create-blocks-from", "rules", "--start", f"{first}",
                                       "--end", f"{end:.0f}", "--eval-interval", recorded["interval"], "--url", url,
                                       "--output-dir", str(work / "recorded"), str(work / "recorded.yaml")],
                                      capture_output=True, text=True)
            if made.returncode != 0:
                raise GpudashError(f"promtool could not record the sample's counters: {made.stderr.strip()[-400:]}",
                                   hint="check the prometheus package (promtool) on this machine")
            if not (work / "recorded").is_dir():
                raise GpudashError("promtool recorded none of the sample's counters (it wrote no block)",
                                   hint="run again; report it with the prometheus package's version")
            for block in (work / "recorded").iterdir():
                if block.is_dir():
                    block.rename(work / "data" / block.name)
        with _running(prometheus, work) as url:
            yield url


@contextmanager
def _running(prometheus: str, work: Path) -> Iterator[str]:
    """A Prometheus of work/prometheus.yml and the blocks in work/data, while the block runs; its URL."""
    process, url, log = start(prometheus, [f"--config.file={work / 'prometheus.yml'}",
                                           f"--storage.tsdb.path={work / 'data'}",
                                           "--storage.tsdb.retention.time=3650d"], work / "prometheus.log")
    try:
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def start(prometheus: str, args: list[str], log_path: Path, ready_within: float = 30.0,
          what: str = "the sample Prometheus") -> tuple[subprocess.Popen, str, IO[str]]:
    """Prometheus with `args` on a free loopback port, ready (its output in `log_path`): the process, its
    URL and the open log. A port another process took first is chosen again."""
    attempts = 5
    for attempt in range(1, attempts + 1):
        port = free_port()
        log = log_path.open("w")
        process = subprocess.Popen([prometheus, *args, f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                                   stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_ready(url, process, log_path, ready_within, what, _flag(args, "storage.tsdb.path"))
            return process, url, log
        except GpudashError as exc:
            process.kill()
            process.wait()
            log.close()
            if attempt == attempts or "address already in use" not in str(exc):
                raise
    raise GpudashError(f"no free port for {what}", hint="run the command again")


def _flag(args: list[str], name: str) -> str | None:
    """The value of the flag `--name=value` in `args` (None: not given)."""
    return next((arg.split("=", 1)[1] for arg in args if arg.startswith(f"--{name}=")), None)


def _wait_ready(url: str, process: subprocess.Popen, log_path: Path, ready_within: float, what: str,
                storage: str | None = None) -> None:
    """Until the Prometheus at `url` is ready, and is the one started (`process`): its storage folder, as its flags
    report it, is `storage`. Another process may take the free port between its choice and this Prometheus' start
    (a busy machine starting several), which then fails to bind it and exits a moment later, while the other answers
    ready: a sample read from that one held none of this one's data (promtool recorded nothing from it)."""
    from ..clients.answer import json_value
    from ..clients.http import get
    from ..clients.options import Options
    from ..errors import RemoteError

    deadline = time.monotonic() + ready_within
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log_path.read_text(errors="replace")[-400:]
            raise GpudashError(f"{what} exited: {tail}", hint="check the prometheus package")
        probe = Options(timeout=1.0)
        probe.start()
        try:
            if get(f"{url}/-/ready", probe, what, "")[0] == 200:
                if storage is None:
                    return
                status, text = get(f"{url}/api/v1/status/flags", probe, what, "")
                try:  # (a text that is no JSON, however deep, is NOT_JSON: not subscriptable)
                    answered = json_value(text)["data"]["storage.tsdb.path"] if status == 200 else None
                except (KeyError, TypeError):
                    answered = None
                if answered == storage:
                    return
                raise GpudashError(f"{what}: address already in use by another process answering there (its "
                                   f"storage {answered!r})", hint="run the command again")
        except RemoteError:  # not listening yet
            pass
        time.sleep(0.1)
    raise GpudashError(f"{what} did not become ready in {ready_within:g} s", hint="check the prometheus package")
