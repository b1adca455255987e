"""Exporter checks: /metrics parses, expected fields are there, pod labels on busy GPUs, node label."""

from __future__ import annotations

from typing import Any

from ..errors import RemoteError
from ..project import Project
from ..verify import FAIL, OK, WARN, Check, Options

GROUP = "exporter"
# Fields that exist only on some GPUs or drivers: profiling (datacenter GPUs), HBM memory
# temperature (not on GDDR boards such as the A10G), reserved framebuffer (newer drivers),
# NVLink (boards without NVLink).
PARTIAL_SUPPORT = ("_PROF_", "MEMORY_TEMP", "FB_RESERVED", "NVLINK")


def fetch(options: Options) -> str:
    import requests

    try:
        response = requests.get(options.exporter_url, timeout=5)
        response.raise_for_status()
    except requests.RequestException as exc:
        raise RemoteError(f"cannot read {options.exporter_url} ({type(exc).__name__})",
                          hint="check the exporter URL (port 9400, path /metrics), or --skip exporter") from None
    return response.text


def parse(text: str) -> list[Any]:
    from prometheus_client.parser import text_string_to_metric_families

    return list(text_string_to_metric_families(text))


def checks(project: Project, options: Options) -> list[Check]:
    if options.exporter_url:
        text = fetch(options)
        source = options.exporter_url
    else:
        from .kube import proxy_metrics

        text, source = proxy_metrics(project, options)
    return analyse(project, text, source)


def analyse(project: Project, text: str, source: str) -> list[Check]:
    try:
        families = parse(text)
    except ValueError as exc:
        return [Check(GROUP, "metrics endpoint", FAIL, f"{source} is not Prometheus exposition: {exc}",
                      "check that the URL is the DCGM exporter's /metrics")]
    samples = {f.name: f.samples for f in families}
    result = [Check(GROUP, "metrics endpoint", OK, f"{source}: {len(families)} metric families")]
    wanted = sorted(project.queried_metrics())
    missing = [m for m in wanted if m not in samples]
    profiling = [m for m in missing if any(fragment in m for fragment in PARTIAL_SUPPORT)]
    absent = [m for m in missing if m not in profiling]
    if absent:
        result.append(Check(GROUP, "expected metrics", FAIL, f"missing: {', '.join(absent)}",
                            "add them to the exporter's counters CSV (DCGM_EXPORTER_COLLECTORS) and restart it"))
    else:
        result.append(Check(GROUP, "expected metrics", OK, f"{len(wanted) - len(profiling)} of {len(wanted)} present"))
    if profiling:
        result.append(Check(GROUP, "GPU-specific metrics", WARN,
                            f"not supported on this GPU: {', '.join(profiling)}",
                            "expected on GPUs without these features (profiling needs a datacenter GPU, memory "
                            "temperature HBM); their panels stay empty"))
    labels = project.settings.labels
    utilization = samples.get("DCGM_FI_DEV_GPU_UTIL", [])
    busy = [s for s in utilization if s.value > 0]
    unlabelled = [s for s in busy if not s.labels.get("pod")]
    if not utilization:
        pass
    elif unlabelled:
        gpus = ", ".join(sorted({f"gpu {s.labels.get('gpu', '?')}" for s in unlabelled}))
        result.append(Check(GROUP, "pod labels", FAIL, f"busy GPUs without a pod label: {gpus}",
                            "set DCGM_EXPORTER_KUBERNETES=true on the exporter and mount "
                            "/var/lib/kubelet/pod-resources into it"))
    elif busy:
        result.append(Check(GROUP, "pod labels", OK, f"{len(busy)} busy GPUs carry pod labels"))
    else:
        result.append(Check(GROUP, "pod labels", WARN, "no GPU is busy: cannot confirm pod labels",
                            "run again while a pod uses a GPU"))
    spellings = {name for s in utilization for name in ("Hostname", "hostname") if name in s.labels}
    if spellings and labels.node not in spellings:
        found = sorted(spellings)[0]
        result.append(Check(GROUP, "node label", FAIL, f"the exporter writes {found!r}, settings say {labels.node!r}",
                            f"set labels.node: {found} in gpudash.yaml"))
    elif spellings:
        result.append(Check(GROUP, "node label", OK, f"{labels.node!r} as configured"))
    return result
