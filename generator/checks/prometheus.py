"""Prometheus checks: DCGM targets up, series present, which label carries the workload pod."""

from __future__ import annotations

from typing import Any

from ..errors import RemoteError
from ..project import Project
from ..verify import FAIL, OK, WARN, Check, Options

GROUP = "prometheus"


def _query(url: str, expr: str) -> list[dict[str, Any]]:
    import requests

    try:
        response = requests.get(f"{url.rstrip('/')}/api/v1/query", params={"query": expr}, timeout=5)
        body = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise RemoteError(f"cannot query Prometheus at {url} ({type(exc).__name__})",
                          hint="check --prometheus-url (PROMETHEUS_URL) and that Prometheus is up, "
                               "or --skip prometheus") from None
    if body.get("status") != "success":
        raise RemoteError(f"Prometheus refused the query {expr!r}: {body.get('error')}",
                          hint="check that the URL is Prometheus' own API")
    return body["data"]["result"]


def checks(project: Project, options: Options) -> list[Check]:
    if not options.prometheus_url:
        return [Check(GROUP, "reachable", FAIL, "no Prometheus URL given",
                      "pass --prometheus-url (or PROMETHEUS_URL), or --skip prometheus")]
    url = options.prometheus_url
    settings = project.settings
    job = settings.scrape["job_name"]
    result = []
    targets = _query(url, f'up{{job="{job}"}}') or _query(url, "count by (job) (up and on (job) DCGM_FI_DEV_GPU_UTIL)")
    down = [t for t in targets if t["value"][1] == "0"]
    if not targets:
        result.append(Check(GROUP, "DCGM targets", FAIL, f"no scrape target for job {job!r} and no job with DCGM series",
                            "apply build/prometheus/additional-scrape-configs.yaml or build/k8s/servicemonitor.yaml"))
    elif down:
        instances = ", ".join(t["metric"].get("instance", "?") for t in down)
        result.append(Check(GROUP, "DCGM targets", FAIL, f"{len(down)} of {len(targets)} targets down: {instances}",
                            "check the exporter pods on those nodes (kubectl -n "
                            f"{settings.exporter['namespace']} get pods -o wide)"))
    else:
        result.append(Check(GROUP, "DCGM targets", OK, f"{len(targets)} targets up"))
    series = _query(url, "count(DCGM_FI_DEV_GPU_UTIL)")
    count = int(float(series[0]["value"][1])) if series else 0
    if not count:
        result.append(Check(GROUP, "DCGM series", FAIL, "no DCGM_FI_DEV_GPU_UTIL series",
                            "check the scrape job's metric_relabel_configs keep DCGM_.* and the exporter's CSV"))
        return result
    result.append(Check(GROUP, "DCGM series", OK, f"{count} GPUs reporting"))
    exported = _query(url, 'count(DCGM_FI_DEV_GPU_UTIL{exported_pod!=""})')
    plain = _query(url, 'count(DCGM_FI_DEV_GPU_UTIL{pod!=""})')
    detected = "exported_pod" if exported else ("pod" if plain else None)
    if detected is None:
        result.append(Check(GROUP, "workload pod label", WARN, "no series carries a workload pod label",
                            "run again while a pod uses a GPU; check the exporter's pod labels"))
    elif detected != settings.labels.pod:
        if detected == "exported_pod":
            fix = ("set labels.pod: exported_pod, labels.namespace: exported_namespace and labels.container: "
                   "exported_container in gpudash.yaml, or scrape with gpudash's job or ServiceMonitor "
                   "(honorLabels: true)")
        else:
            fix = "set labels.pod: pod, labels.namespace: namespace and labels.container: container in gpudash.yaml"
        result.append(Check(GROUP, "workload pod label", FAIL,
                            f"the workload pod arrives as {detected!r}, settings say {settings.labels.pod!r}", fix))
    else:
        result.append(Check(GROUP, "workload pod label", OK, f"{detected!r} as configured"))
    for spelling in ("Hostname", "hostname"):
        if spelling != settings.labels.node and _query(url, f'count(DCGM_FI_DEV_GPU_UTIL{{{spelling}!=""}})') \
                and not _query(url, f'count(DCGM_FI_DEV_GPU_UTIL{{{settings.labels.node}!=""}})'):
            result.append(Check(GROUP, "node label", FAIL, f"series carry {spelling!r}, settings say "
                                f"{settings.labels.node!r}", f"set labels.node: {spelling} in gpudash.yaml"))
    return result
