"""Exporter checks: /metrics parses, expected fields are there, pod labels on busy GPUs, node label,
and MIG: which fields a GPU split into MIG instances does not report."""

from __future__ import annotations

from typing import Any, Iterator

from .. import redact
from ..blanks import UNREAD_AT_ZERO
from ..catalog import MIG_INSTANCE_LABEL, MIG_PROFILE_LABEL, MIG_SUBSTITUTES, MIG_UNSUPPORTED, PER_PROCESS_FIELDS
from ..container_insights import enabled as addon_source
from ..exporter_styles import EXPORTER_PORT
from ..project import Project
from ..render.scrape import agent_renames
from ..settings import mig_of
from ..clients.exporter import fetch, fetch_through_proxy
from ..clients.http import SlowAnswer
from ..errors import RemoteError
from ..clients.options import Options
from .result import FAIL, OK, WARN, Check

GROUP = "exporter"
# Fields that exist only on some GPUs or drivers: profiling (datacenter GPUs), HBM memory
# temperature (not on GDDR boards such as the A10G), reserved framebuffer (newer drivers),
# NVLink (boards without NVLink).
PARTIAL_SUPPORT = ("_PROF_", "MEMORY_TEMP", "FB_RESERVED", "NVLINK")
# Utilization fields DCGM does not report for MIG instances (absent, or 0, depending on the version):
# those the catalog has a per-instance stand-in for, and the encoder and decoder utilization.
MIG_ACTIVITY = MIG_SUBSTITUTES["DCGM_FI_DEV_GPU_UTIL"][0]
# DCGM writes a value it could not read as a sentinel near 2**63; it is not a measurement.
SENTINEL_FLOOR = 0x7FFFFFFFFFFFFF00
FP_BLANK = 2.0 ** 47  # the floating-point blank; the next 15 values are blanks too (not found, ...)


def is_blank(value: float) -> bool:
    """A DCGM blank sentinel: integer (about 2**63) or floating-point (2**47 and the next 15)."""
    return value >= SENTINEL_FLOOR or FP_BLANK <= value < FP_BLANK + 16


def parse(text: str) -> dict[str, list[Any]]:
    """Samples by metric name; ValueError when the text is not Prometheus exposition."""
    from ..clients.deferred import defer

    defer("prometheus_client")  # its __init__ imports the HTTP server and default collectors: the parser alone
    from prometheus_client.parser import text_string_to_metric_families

    samples: dict[str, list[Any]] = {}
    for family in text_string_to_metric_families(text):
        if family.samples:  # a HELP or TYPE line alone is not a metric
            samples.setdefault(family.name, []).extend(family.samples)
    return samples


def checks(project: Project, options: Options) -> Iterator[Check]:
    if options.exporter_url:
        text = fetch(options)
        source = options.exporter_url
        judged = _url_cluster(project, options.cluster)
    else:
        from ..clients.kube import for_run
        from .kube import CLUSTER_FIX, exporter_service, exporter_to_read

        from ..clients.kube import KubeRefused

        kube = for_run(options)
        read = exporter_to_read(kube, project, options)
        judged = read.mig_cluster, read.mig_unknown
        unlisted = None  # the Services' refused listing: the proxy (services/proxy, a permission of its own) is tried
        try:
            labelled = exporter_service(kube, read.namespace, read.style)
        except KubeRefused as refused:
            labelled, unlisted = None, refused
        service = labelled or read.style.service
        if read.unknown:  # said before the read, which may fail: the Service read is a choice, not a judgement
            yield Check(GROUP, WHICH_CLUSTER, WARN, f"{read.unknown}; /metrics is read through the Service "
                        f"{read.namespace}/{service} of {read.basis}", CLUSTER_FIX)
        try:
            text, source = fetch_through_proxy(kube, read.namespace, service, EXPORTER_PORT)
        except RemoteError as exc:
            # 503 from the service proxy: the Service has no ready endpoint, or the API server is unavailable
            unready = _why_unready(kube, read.namespace, service, exc) if getattr(exc, "status", 0) == 503 else None
            if unready is not None:
                yield Check(GROUP, "metrics endpoint", FAIL, *unready)
                return
            if labelled is not None or isinstance(exc, SlowAnswer):
                raise
            # no Service is labelled as the settings' deployment style's: the name tried was a guess, say so (the API
            # server's answer alone sent the user to the API server)
            key, value = read.style.pod_label
            why = (f"the Services in {read.namespace} could not be listed ({unlisted.what})" if unlisted else
                   f"no Service in {read.namespace} labelled {key}={value} exposes {EXPORTER_PORT}")
            raise RemoteError(f"{exc.what}: {why}, so /metrics was read through {service}, exporter.deployment "
                              f"{read.style.key}'s name", hint=(
                                  f"{unlisted.hint}; or pass --exporter-url" if unlisted else "the kube group's "
                                  "exporter DaemonSet and exporter Service checks say what to write or create; or "
                                  "pass --exporter-url")) from None
    yield from analyse(project, text, source, *judged)


def _url_cluster(project: Project, chosen: str | None) -> tuple[Any, str]:
    """The cluster an --exporter-url's exporter is judged by in exporter.mig (clusters[].exporter.mig): --cluster's,
    else, where the clusters differ in it, none (why), else the first (every cluster's alike)."""
    clusters = project.settings.clusters
    if chosen is not None:
        picked = next((c for c in clusters if c.name == chosen), None)
        return picked, "" if picked else f"--cluster {chosen} is none of clusters"
    if len(project.settings.mig_groups()) > 1:
        return None, "--exporter-url names no cluster, and the clusters differ in exporter.mig"
    return clusters[0], ""


def _why_unready(kube, namespace: str, service: str, answered: RemoteError) -> tuple[str, str] | None:
    """unready_service's (what, fix) for the proxy's 503 `answered`; where the EndpointSlices that tell why cannot
    be read either (other than refused, which unready_service says), the 503 is raised with that failure after it."""
    from .kube import unready_service

    try:
        return unready_service(kube, namespace, service)
    except RemoteError as exc:
        answered.what += f"; the EndpointSlices that tell why could not be read either: {exc.what}"
        raise answered from None


WHICH_CLUSTER = "which cluster"


def analyse(project: Project, text: str, source: str, cluster: Any = None, unknown: str = "") -> list[Check]:
    """The exporter's /metrics `text` judged against the settings; `cluster`: the one its exporter.mig is judged by
    (None: the first, where every cluster says the same; `unknown`: why it cannot be told where they differ)."""
    try:
        samples = _workload_named(parse(text), project.settings)
    except ValueError as exc:
        said = redact.text(f"{source} is not Prometheus exposition: {exc}")  # masked, then cut: no secret in part
        return [Check(GROUP, "metrics endpoint", FAIL, said[:300],
                      "check that the URL is the DCGM exporter's /metrics")]
    if not any(name.startswith("DCGM_") for name in samples):
        return [Check(GROUP, "metrics endpoint", FAIL, f"{source} has no DCGM_* metric ({len(samples)} families)",
                      "check that the URL is the DCGM exporter's /metrics, and its counters CSV")]
    result = [Check(GROUP, "metrics endpoint", OK, f"{source}: {len(samples)} metric families")]
    mig = sorted({(s.labels.get("gpu", "?"), s.labels.get(MIG_PROFILE_LABEL, "?"))
                  for values in samples.values() for s in values if s.labels.get(MIG_INSTANCE_LABEL)})
    wanted = sorted(project.queried_metrics())
    missing = [m for m in wanted if m not in samples]
    under_mig = [m for m in missing if mig and m in MIG_UNSUPPORTED]
    partial = [m for m in missing if m not in under_mig and any(fragment in m for fragment in PARTIAL_SUPPORT)]
    absent = [m for m in missing if m not in partial and m not in under_mig]
    if absent:
        result.append(Check(GROUP, "expected metrics", FAIL, f"missing: {', '.join(absent)}",
                            "add them to the exporter's counters CSV (DCGM_EXPORTER_COLLECTORS) and restart it"))
    else:
        result.append(Check(GROUP, "expected metrics", OK,
                            f"{len(wanted) - len(missing)} of {len(wanted)} present"
                            + (f" ({len(missing)} expected absent, below)" if missing else "")))
    if partial:
        result.append(Check(GROUP, "GPU-specific metrics", WARN, f"not supported on this GPU: {', '.join(partial)}",
                            "expected on GPUs without these features (profiling needs a datacenter GPU, memory "
                            "temperature HBM); their panels stay empty"))
    addon = addon_source(project.settings)
    if mig:
        result.append(_mig(mig, wanted))
        if addon:
            result.append(_addon_mig(mig))
    result += _mig_said_none(samples, project.settings, cluster, unknown)
    result += _blanks(samples, set(wanted), "addon" if addon else project.settings.agent.pipeline)
    copied = _per_process_copies(samples)
    result += _pod_labels(samples, {device for devices in copied.values() for device in devices})
    result += _shared_reading(copied, project.settings.exporter.virtual_gpus)
    result += _whole_copies(samples) + _silent_shares(samples, copied.get("DCGM_FI_DEV_GPU_UTIL", []))
    result += _node_label(samples, project.settings.labels.node_sources)
    return result


def _workload_named(samples: dict[str, list[Any]], settings: Any) -> dict[str, list[Any]]:
    """The samples with the workload's labels named `pod`, `namespace` and `container`, from the names `labels:`
    says the exporter writes them under (pod_name, ... with --use-old-namespace), as the checks below read them."""
    renames = dict(agent_renames(settings))
    if not renames:
        return samples
    return {name: [s._replace(labels={renames.get(k, k): v for k, v in s.labels.items()}) for s in values]
            for name, values in samples.items()}


def _mig(instances: list[tuple[str, str]], wanted: list[str]) -> Check:
    gpus = sorted({gpu for gpu, _ in instances})
    profiles = sorted({profile for _, profile in instances})
    used = [m for m in MIG_UNSUPPORTED if m in wanted]
    detail = (f"GPU {', '.join(gpus)} split into MIG instances ({', '.join(profiles)}); "
              f"not reported for MIG instances: {', '.join(MIG_UNSUPPORTED)}")
    if not used:
        return Check(GROUP, "MIG", OK, detail)
    substituted = [f"{MIG_SUBSTITUTES[m][0]} for {m}" for m in used if m in MIG_SUBSTITUTES]
    alone = [m for m in used if m not in MIG_SUBSTITUTES]
    fix = (f"on MIG instances the dashboards and alerts read {', '.join(substituted)} where the counters CSV "
           "collects them (add them if not)" if substituted else "")
    if alone:
        fix += ("; " if fix else "") + f"{', '.join(alone)} stay empty for MIG instances"
    return Check(GROUP, "MIG", WARN, detail, fix)


def _mig_said_none(samples: dict[str, list[Any]], settings: Any, cluster: Any, unknown: str) -> list[Check]:
    """exporter.mig: none (the cluster's own, clusters[].exporter.mig, or the fleet's) against the series: a series
    whose GPU_I_PROFILE or GPU_I_ID is not blank is a MIG instance's, which reports no GPU utilization: the alarms
    built for a cluster of whole GPUs leave it out. Named by node, GPU and instance, with the setting to change.
    Where the clusters differ in it and this exporter's cannot be told, a MIG instance is a warning."""
    split = sorted({(_node_of(s, settings), _device(s) + (f" ({s.labels.get(MIG_PROFILE_LABEL)})"
                                                            if s.labels.get(MIG_PROFILE_LABEL) else ""))
                    for values in samples.values() for s in values
                    if s.labels.get(MIG_INSTANCE_LABEL) or s.labels.get(MIG_PROFILE_LABEL)})
    if cluster is None and unknown and not settings.no_mig:
        said_none = [c.name for c in settings.clusters if mig_of(settings, c) == "none"]
        if not split or not said_none:
            return []
        return [Check(GROUP, "no MIG", WARN,
                      f"{unknown}: {_instances(split)}; cluster{'s' if len(said_none) > 1 else ''} "
                      f"{', '.join(said_none)} say{'' if len(said_none) > 1 else 's'} exporter.mig: none",
                      "pass --cluster to judge this exporter by its cluster's exporter.mig")]
    cluster = cluster or settings.clusters[0]
    if mig_of(settings, cluster) != "none":
        return []
    own = cluster.exporter_mig == "none"
    if not split:
        return [Check(GROUP, "no MIG", OK, f"no series carries a MIG instance, as cluster {cluster.name}'s "
                                           f"{'clusters[].exporter.mig' if own else 'exporter.mig'}: none says")]
    if own:
        fix = f"write clusters[].exporter.mig: some for cluster {cluster.name} (it says none)"
    elif len(settings.clusters) > 1:
        fix = (f"write clusters[].exporter.mig: some for cluster {cluster.name} (or remove exporter.mig: none if "
               f"other clusters' GPUs are split too)")
    else:
        fix = "remove exporter.mig: none"
    return [Check(GROUP, "no MIG", FAIL,
                  f"cluster {cluster.name} says {'clusters[].exporter.mig' if own else 'exporter.mig'}: none, but "
                  f"{_instances(split)}",
                  f"{fix}, and generate again: a MIG instance reports no GPU utilization, so the CloudWatch alarms "
                  f"built for whole GPUs leave its GPU out or judge its group without it")]


def _instances(split: list[tuple[str, str]]) -> str:
    """The MIG instances seen, by node: `3 MIG instance(s) report on nodes a, b: a gpu 1 MIG instance 1 (3g.20gb),
    ...`."""
    nodes = sorted({node for node, _ in split if node})
    shown = [f"{node} {device}" if node else device for node, device in split]
    return (f"{len(split)} MIG instance(s) report" + (f" on node{'s' if len(nodes) > 1 else ''} {', '.join(nodes)}"
                                                      if nodes else "")
            + f": {', '.join(shown[:5])}" + (", ..." if len(shown) > 5 else ""))


def _node_of(sample: Any, settings: Any) -> str:
    """The node a series names (labels.node's spellings: Hostname, hostname), '' when none."""
    return next((sample.labels[name] for name in settings.labels.node_sources if sample.labels.get(name)), "")


def _busy(samples: dict[str, list[Any]]) -> list[Any]:
    """Series of GPUs (or MIG instances) doing work: utilization above 0, from the field each reports."""
    busy = []
    for name in ("DCGM_FI_DEV_GPU_UTIL", MIG_ACTIVITY):
        for sample in samples.get(name, []):
            is_mig = bool(sample.labels.get(MIG_INSTANCE_LABEL))
            if (name == MIG_ACTIVITY) != is_mig:
                continue  # each series is judged once, by the field its kind of device reports
            if 0 < sample.value < SENTINEL_FLOOR:
                busy.append(sample)
    return busy


def _pod_labels(samples: dict[str, list[Any]], copied: set[tuple[str, str]]) -> list[Check]:
    if not samples.get("DCGM_FI_DEV_GPU_UTIL") and not samples.get(MIG_ACTIVITY):
        return []
    busy = _busy(samples)
    # a device whose pods have their own copies keeps its own series without a pod label
    unlabelled = [s for s in busy if not s.labels.get("pod") and _key(s) not in copied]
    if unlabelled:
        gpus = ", ".join(sorted({_device(s) for s in unlabelled}))
        return [Check(GROUP, "pod labels", FAIL, f"busy GPUs without a pod label: {gpus}",
                      "set DCGM_EXPORTER_KUBERNETES=true on the exporter and mount /var/lib/kubelet/pod-resources "
                      "into it")]
    if busy:
        return [Check(GROUP, "pod labels", OK, f"{len(busy)} busy GPUs carry pod labels")]
    return [Check(GROUP, "pod labels", WARN, "no GPU is busy: cannot confirm pod labels",
                  "run again while a pod uses a GPU")]


def _addon_mig(instances: list[tuple[str, str]]) -> Check:
    """On the Container Insights add-on a GPU split into MIG instances is published as one of its instances
    (container_insights.MIG_ONE_INSTANCE): named here, where it happens."""
    gpus = sorted({gpu for gpu, _ in instances})
    return Check(GROUP, "MIG on the add-on", WARN,
                 f"GPU {', '.join(gpus)} split into MIG instances: the Container Insights add-on publishes one "
                 f"instance of each (its agent drops GPU_I_ID and GPU_I_PROFILE and keeps the first of a "
                 f"collection's instances), so its framebuffer reads one slice",
                 "read MIG GPUs from cloudwatch.source: prometheus-emf, which publishes each instance")


def _blanks(samples: dict[str, list[Any]], wanted: set[str], publisher: str) -> list[Check]:
    """Fields the dashboards and alarms read that some GPU reports as a DCGM blank, by GPU; `publisher`: "otel" (the
    CloudWatch agent's OTel pipeline drops them before they are published), "classic" (the agent's JSON path
    publishes them), "addon" (the Container Insights add-on publishes them, and its own exporter and fields are
    the add-on's)."""
    found: dict[str, list[str]] = {}
    zeros = False  # a field whose 0 DCGM writes for "not supported" (blanks.UNREAD_AT_ZERO) read 0
    for name in sorted(wanted & set(samples)):
        for sample in samples[name]:
            zero = name in UNREAD_AT_ZERO and sample.value == 0
            if is_blank(sample.value) or zero:
                zeros = zeros or zero
                node = sample.labels.get("hostname") or sample.labels.get("Hostname")
                found.setdefault(f"{node} {_device(sample)}" if node else _device(sample), []).append(name)
    if not found:
        return []
    listed = "; ".join(f"{gpu}: {', '.join(sorted(set(names)))}" for gpu, names in sorted(found.items()))
    if zeros:  # said as what DCGM wrote: 0, not a blank
        listed = f"{listed} (memory temperature at 0: DCGM's 'not supported' on GPUs without the sensor)"
    if publisher == "addon":
        return [Check(GROUP, "blank values", WARN, f"DCGM could not read (blank value published): {listed}",
                      "the Container Insights add-on publishes such readings as values (its configuration cannot "
                      "drop them): CloudWatch widgets of one line leave the period out, lines per pod or GPU show "
                      "the blank, and alarms read it (a GPU reading blank fires a '>' alarm and hides from a '<' "
                      "one); cloudwatch.source: prometheus-emf with agent.pipeline: otel drops them before they are "
                      "published")]
    if publisher == "otel":
        return [Check(GROUP, "blank values", WARN, f"DCGM could not read (blank value published): {listed}",
                      "Grafana and the CloudWatch agent's OTel pipeline leave such readings out, so these GPUs show "
                      "no value for them; drop a field this GPU never reads from the counters CSV, or use a "
                      "dcgm-exporter that skips DCGM's blank values (2.x and later skip the named ones)")]
    if zeros:  # the JSON path publishes every value; no declaration matches on one
        return [Check(GROUP, "blank values", WARN, f"DCGM could not read (blank value published): {listed}",
                      "Grafana leaves such readings out; agent.pipeline: classic publishes them to CloudWatch, whose "
                      "widgets and alarms cannot tell memory temperature's 0 from a reading (a GPU writing it pulls "
                      "means and minima down and fires a '<' alarm) nor a blank from one in alarms: agent.pipeline: "
                      "otel drops both before they are published, or drop DCGM_FI_DEV_MEMORY_TEMP from the counters "
                      "CSV of a fleet whose GPUs never read it")]
    return [Check(GROUP, "blank values", WARN, f"DCGM could not read (blank value published): {listed}",
                  "Grafana and the CloudWatch widgets leave such readings out, CloudWatch alarms cannot (a GPU "
                  "reading blank fires a '>' alarm and hides from a '<' one): use a dcgm-exporter that skips "
                  "DCGM's blank values (2.x and later skip the named ones), or drop a field this GPU never reads "
                  "from the counters CSV")]


def _key(sample: Any) -> tuple[str, str]:
    node = sample.labels.get("hostname") or sample.labels.get("Hostname") or ""
    return node, _device(sample)


def _per_process_copies(samples: dict[str, list[Any]]) -> dict[str, list[tuple[str, str]]]:
    """By field: devices that have both a series without a pod label and series with one."""
    found: dict[str, list[tuple[str, str]]] = {}
    for name in PER_PROCESS_FIELDS:
        bare = {_key(s) for s in samples.get(name, []) if not s.labels.get("pod")}
        podded = {_key(s) for s in samples.get(name, []) if s.labels.get("pod")}
        if bare & podded:
            found[name] = sorted(bare & podded)
    return found


def _shared_reading(copied: dict[str, list[tuple[str, str]]], read_apart: bool) -> list[Check]:
    if not copied:
        return []
    listed = _listed({device for values in copied.values() for device in values})
    detail = (f"{', '.join(sorted(copied))} come once per device without a pod label and once per pod with "
              f"that pod's processes' value (KUBERNETES_VIRTUAL_GPUS=true): {listed}")
    if read_apart:
        return [Check(GROUP, "per-process copies", OK, detail + "; exporter.virtual_gpus reads them apart")]
    return [Check(GROUP, "per-process copies", WARN, detail,
                  "set exporter.virtual_gpus: true and generate again: until then per-GPU averages and totals of "
                  "these fields mix the device's value with its pods' (a GPU at 90 % shared by three pods at 30 % "
                  "reads 45 %, framebuffer counts twice)")]


def _listed(devices: Any) -> str:
    return ", ".join(f"{node} {gpu}".strip() for node, gpu in sorted(devices))


def _whole_copies(samples: dict[str, list[Any]]) -> list[Check]:
    """GPUs that several pods hold whose per-process fields come only as copies of the device's value: dcgm-exporter
    before 4.5.3 with KUBERNETES_VIRTUAL_GPUS=true (with the setting off, one pod is named per GPU), or one that
    could not read per-process data from NVML."""
    pods: dict[tuple[str, str], set[tuple[str, str]]] = {}
    bare = set()
    for sample in samples.get("DCGM_FI_DEV_GPU_UTIL", []) + samples.get("DCGM_FI_DEV_FB_USED", []):
        if sample.labels.get("pod"):
            pods.setdefault(_key(sample), set()).add((sample.labels.get("namespace", ""), sample.labels["pod"]))
        else:
            bare.add(_key(sample))
    whole = [device for device, holders in pods.items() if len(holders) > 1 and device not in bare]
    if not whole:
        return []
    return [Check(GROUP, "shared GPUs read whole", WARN,
                  f"several pods hold these GPUs and each pod's DCGM_FI_DEV_GPU_UTIL and DCGM_FI_DEV_FB_USED is the "
                  f"whole GPU's value: {_listed(whole)}",
                  "dcgm-exporter before 4.5.3 with KUBERNETES_VIRTUAL_GPUS=true writes every pod sharing a GPU the "
                  "GPU's whole use (and leaves out a GPU no pod holds beside a held one): upgrade it to 4.5.3 or "
                  "later, whose copies hold each pod's own share")]


def _silent_shares(samples: dict[str, list[Any]], copied: list[tuple[str, str]]) -> list[Check]:
    """GPUs whose own utilization is above 0 while every pod's share reads 0: the exporter writes 0 for a pod when
    NVML gives it no per-process utilization (GetProcessUtilization not supported, or no sample of the pod's
    processes)."""
    series = samples.get("DCGM_FI_DEV_GPU_UTIL", [])
    busy = {_key(s) for s in series if not s.labels.get("pod") and 0 < s.value < SENTINEL_FLOOR}
    working = {_key(s) for s in series if s.labels.get("pod") and s.value > 0}
    silent = [device for device in copied if device in busy and device not in working]
    if not silent:
        return []
    return [Check(GROUP, "per-process utilization", WARN,
                  f"busy, but every pod's share of DCGM_FI_DEV_GPU_UTIL reads 0: {_listed(silent)}",
                  "the exporter writes 0 for a pod whose processes NVML gives no utilization sample (process "
                  "utilization not supported, or the work runs in a process outside the pods, such as an MPS "
                  "server): per-pod utilization and the idle-GPU alarm read 0 for these pods; check `nvidia-smi "
                  "pmon` on the node")]


def _device(sample: Any) -> str:
    gpu = f"gpu {sample.labels.get('gpu', '?')}"
    instance = sample.labels.get(MIG_INSTANCE_LABEL)
    return f"{gpu} MIG instance {instance}" if instance else gpu


def _node_label(samples: dict[str, list[Any]], sources: tuple[str, ...]) -> list[Check]:
    spellings = {name for values in samples.values() for s in values if s.labels.get("gpu") is not None
                 for name in ("Hostname", "hostname") if name in s.labels}
    configured = spellings & set(sources)
    if spellings and not configured:
        found = sorted(spellings)[0]
        fix = (f"set labels.node: {found} in gpudash.yaml" if len(sources) == 1
               else f"add {found} to labels.node in gpudash.yaml")
        return [Check(GROUP, "node label", FAIL,
                      f"the exporter writes {found!r}, settings say {' or '.join(map(repr, sources))}", fix)]
    if spellings:
        return [Check(GROUP, "node label", OK, f"{', '.join(map(repr, sorted(configured)))} as configured")]
    return []
