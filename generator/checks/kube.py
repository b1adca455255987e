"""Kubernetes checks through the official client: exporter DaemonSet, GPU node coverage, Service,
pod labels setting, counters CSV, the CloudWatch agent and its ConfigMaps, the ServiceMonitor."""

from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import Any

import yaml

from ..catalog import load_counters, parse_counters
from ..errors import InputError, RemoteError
from ..exporter_styles import EXPORTER_PORT, style_for
from ..project import Project
from ..render.agent import AGENT_CONFIGMAP, AGENT_KEY, SCRAPE_CONFIGMAP, SCRAPE_KEY
from ..resources import default_counters
from ..verify import FAIL, OK, WARN, Check, Options

GROUP = "kube"
AGENT_DEPLOYMENT = "cwagent-prometheus"
GPU_RESOURCE = "nvidia.com/gpu"
# Counters files that ship inside the exporter image and hold the operator's default set.
IMAGE_DEFAULTS = ("/etc/dcgm-exporter/dcp-metrics-included.csv", "/etc/dcgm-exporter/default-counters.csv")


class Kube:
    def __init__(self, context: str | None):
        import os

        from kubernetes import client, config

        try:
            # KUBECONFIG is read now: the client reads it once, when it is first imported.
            config.load_kube_config(config_file=os.environ.get("KUBECONFIG"), context=context)
        except Exception as kube_error:  # the client raises several types for a missing or bad kubeconfig
            try:
                config.load_incluster_config()
            except config.ConfigException:
                raise RemoteError(f"no usable kubeconfig ({kube_error})",
                                  hint="set KUBECONFIG or --context; for EKS: aws eks update-kubeconfig") from None
        configuration = client.Configuration.get_default_copy()
        configuration.retries = 0
        self.api = client.ApiClient(configuration)
        self.core = client.CoreV1Api(self.api)
        self.apps = client.AppsV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)

    def get(self, call, *args, **kwargs) -> Any:
        """Call the API; None on 404; RemoteError when the API cannot be reached."""
        from kubernetes.client.exceptions import ApiException

        try:
            return call(*args, _request_timeout=5, **kwargs)
        except ApiException as exc:
            if exc.status == 404:
                return None
            if exc.status in (401, 403):
                raise RemoteError(f"the Kubernetes API refused access ({exc.status})",
                                  hint="check the kubeconfig user's RBAC (get/list on pods, nodes, daemonsets, "
                                       "deployments, services, configmaps)") from None
            raise RemoteError(f"the Kubernetes API answered {exc.status}: {exc.reason}",
                              hint="check the cluster's API server") from None
        except Exception as exc:  # urllib3 connection errors and timeouts
            raise RemoteError(f"cannot reach the Kubernetes API ({type(exc).__name__})",
                              hint="check KUBECONFIG / --context and the network, or --skip kube") from None


def checks(project: Project, options: Options) -> list[Check]:
    kube = Kube(options.context)
    settings = project.settings
    style = style_for(settings)
    namespace = settings.exporter["namespace"]
    result: list[Check] = []
    daemonset = kube.get(kube.apps.read_namespaced_daemon_set, style.daemonset, namespace)
    if daemonset is None:
        result.append(Check(GROUP, "exporter DaemonSet", FAIL, f"no DaemonSet {namespace}/{style.daemonset}",
                            f"install the DCGM exporter ({style.key}), or set exporter.deployment and "
                            f"exporter.namespace in gpudash.yaml"))
        return result + _agent_checks(kube, project)
    result.append(_rollout(daemonset, namespace, style.daemonset))
    label = ",".join(f"{k}={v}" for k, v in [style.pod_label])
    pods = kube.get(kube.core.list_namespaced_pod, namespace, label_selector=label).items
    result += _coverage(kube, pods)
    result.append(_service(kube, namespace, style))
    container = next((c for c in daemonset.spec.template.spec.containers if c.name == style.container),
                     daemonset.spec.template.spec.containers[0])
    env = {e.name: e.value for e in (container.env or [])}
    if str(env.get("DCGM_EXPORTER_KUBERNETES", "")).lower() == "true":
        result.append(Check(GROUP, "pod labels setting", OK, "DCGM_EXPORTER_KUBERNETES=true"))
    else:
        result.append(Check(GROUP, "pod labels setting", FAIL,
                            "DCGM_EXPORTER_KUBERNETES is not true: series carry no workload pod",
                            f"set DCGM_EXPORTER_KUBERNETES=true on container {container.name} and mount "
                            "/var/lib/kubelet/pod-resources"))
    result.append(_counters(kube, project, daemonset, container, env, namespace))
    if options.prometheus_in_use:
        result.append(_service_monitor(kube, project, style, namespace))
    return result + _agent_checks(kube, project)


def _rollout(daemonset, namespace: str, name: str) -> Check:
    status = daemonset.status
    desired = status.desired_number_scheduled or 0
    ready = status.number_ready or 0
    updated = status.updated_number_scheduled or 0
    if desired and ready == desired and updated == desired:
        return Check(GROUP, "exporter rollout", OK, f"{ready}/{desired} pods ready")
    return Check(GROUP, "exporter rollout", FAIL, f"{ready}/{desired} pods ready, {updated} updated",
                 f"kubectl -n {namespace} rollout status daemonset/{name}")


def _coverage(kube: Kube, pods) -> list[Check]:
    nodes = kube.get(kube.core.list_node).items
    gpu_nodes = sorted(n.metadata.name for n in nodes
                       if int((n.status.capacity or {}).get(GPU_RESOURCE, "0") or 0) > 0)
    by_node = {p.spec.node_name: p for p in pods if p.spec.node_name}
    uncovered = [n for n in gpu_nodes if n not in by_node]
    not_ready = sorted(node for node, pod in by_node.items() if node in gpu_nodes and not _ready(pod))
    result = []
    if not gpu_nodes:
        result.append(Check(GROUP, "GPU node coverage", WARN, f"no node has {GPU_RESOURCE} capacity",
                            "install the NVIDIA device plugin (the GPU operator does) on GPU nodes"))
    elif uncovered:
        result.append(Check(GROUP, "GPU node coverage", FAIL,
                            f"GPU nodes without an exporter pod: {', '.join(uncovered)}",
                            "check the DaemonSet's nodeSelector and tolerations (the operator needs the label "
                            "nvidia.com/gpu.deploy.dcgm-exporter=true)"))
    else:
        result.append(Check(GROUP, "GPU node coverage", OK, f"all {len(gpu_nodes)} GPU nodes run the exporter"))
    if not_ready:
        result.append(Check(GROUP, "exporter pods ready", FAIL, f"exporter not ready on {', '.join(not_ready)}",
                            "kubectl describe the exporter pod on that node; look at its events and logs"))
    elif gpu_nodes:
        result.append(Check(GROUP, "exporter pods ready", OK, f"{len(by_node)} exporter pods ready"))
    return result


def _ready(pod) -> bool:
    statuses = pod.status.container_statuses or []
    return bool(statuses) and all(s.ready for s in statuses) and pod.status.phase == "Running"


def _service(kube: Kube, namespace: str, style) -> Check:
    service = kube.get(kube.core.read_namespaced_service, style.service, namespace)
    if service is None:
        return Check(GROUP, "exporter Service", FAIL, f"no Service {namespace}/{style.service}",
                     "create the exporter's Service (port 9400), which ServiceMonitors and the proxy need")
    ports = [p.port for p in service.spec.ports or []]
    if EXPORTER_PORT not in ports:
        return Check(GROUP, "exporter Service", FAIL, f"Service {style.service} exposes {ports}, not {EXPORTER_PORT}",
                     f"expose port {EXPORTER_PORT} on the Service")
    return Check(GROUP, "exporter Service", OK, f"{style.service} exposes {EXPORTER_PORT}")


def _collectors_path(container, env: dict[str, str]) -> str:
    args = list(container.args or []) + list(container.command or [])
    for flag in ("-f", "--collectors"):
        if flag in args and args.index(flag) + 1 < len(args):
            return args[args.index(flag) + 1]
    return env.get("DCGM_EXPORTER_COLLECTORS") or IMAGE_DEFAULTS[0]


def _counters(kube: Kube, project: Project, daemonset, container, env, namespace: str) -> Check:
    path = _collectors_path(container, env)
    catalog = None
    source = path
    for mount in container.volume_mounts or []:
        if path.startswith(mount.mount_path.rstrip("/") + "/"):
            volume = next((v for v in daemonset.spec.template.spec.volumes or [] if v.name == mount.name), None)
            if volume is not None and volume.config_map is not None:
                key = str(PurePosixPath(path).relative_to(mount.mount_path))
                for item in volume.config_map.items or []:
                    if item.path == key:
                        key = item.key
                configmap = kube.get(kube.core.read_namespaced_config_map, volume.config_map.name, namespace)
                if configmap is None or key not in (configmap.data or {}):
                    return Check(GROUP, "counters CSV", FAIL,
                                 f"ConfigMap {volume.config_map.name} (key {key}) behind {path} is missing",
                                 f"create ConfigMap {volume.config_map.name} with key {key} from your counters CSV")
                source = f"ConfigMap {namespace}/{volume.config_map.name} key {key}"
                try:
                    catalog = parse_counters(configmap.data[key], source)
                except InputError as exc:
                    return Check(GROUP, "counters CSV", FAIL, f"{source} is invalid: {exc.what}", exc.hint or "")
    if catalog is None:
        if path not in IMAGE_DEFAULTS:
            return Check(GROUP, "counters CSV", WARN, f"cannot read {path} from outside the image",
                         "mount the counters CSV from a ConfigMap so gpudash can check it")
        catalog = load_counters(default_counters())  # the image's default set, as bundled
        source = f"{path} (the image's default set)"
    missing = sorted(project.queried_metrics() - {m.name for m in catalog})
    if missing:
        return Check(GROUP, "counters CSV", FAIL, f"{source} lacks {', '.join(missing)}",
                     "add those fields to the exporter's counters CSV, or stop using them in definitions")
    return Check(GROUP, "counters CSV", OK, f"{source} has every field the definitions use")


def proxy_metrics(project: Project, options: Options) -> tuple[str, str]:
    """One exporter's /metrics through the API server's service proxy, and where it came from."""
    settings = project.settings
    style = style_for(settings)
    namespace = settings.exporter["namespace"]
    kube = Kube(options.context)
    text = kube.get(kube.core.connect_get_namespaced_service_proxy_with_path,
                    f"{style.service}:{EXPORTER_PORT}", namespace, "metrics")
    if not text:
        raise RemoteError(f"no answer from Service {namespace}/{style.service} through the API server proxy",
                          hint="pass --exporter-url, or check the exporter Service")
    return text, f"service proxy {namespace}/{style.service}"


def _service_monitor(kube: Kube, project: Project, style, namespace: str) -> Check:
    """A ServiceMonitor that selects the exporter, and whether it keeps the workload's labels."""
    listing = kube.get(kube.custom.list_namespaced_custom_object, "monitoring.coreos.com", "v1", namespace,
                       "servicemonitors")
    name, value = style.pod_label
    monitors = [m for m in (listing or {}).get("items", [])
                if m.get("spec", {}).get("selector", {}).get("matchLabels", {}).get(name) == value]
    if not monitors:
        return Check(GROUP, "Prometheus scrape config", WARN, "no ServiceMonitor selects the exporter",
                     "apply build/k8s/servicemonitor.yaml, unless Prometheus scrapes the exporter through "
                     "additionalScrapeConfigs (the prometheus group checks its targets)")
    honoring = [m for m in monitors if all(e.get("honorLabels") for e in m["spec"].get("endpoints", []))]
    names = ", ".join(m["metadata"]["name"] for m in monitors)
    pod_label = project.settings.labels.pod
    if not honoring and pod_label == "pod":
        return Check(GROUP, "Prometheus scrape config", FAIL,
                     f"ServiceMonitor {names} does not honor labels: the workload pod arrives as exported_pod",
                     "apply build/k8s/servicemonitor.yaml (honorLabels: true) in its place, or set labels.pod: "
                     "exported_pod in gpudash.yaml")
    return Check(GROUP, "Prometheus scrape config", OK, f"ServiceMonitor {names}")


def _agent_checks(kube: Kube, project: Project) -> list[Check]:
    from ..artifacts import feed_files

    settings = project.settings
    namespace = settings.agent["namespace"]
    result = []
    deployment = kube.get(kube.apps.read_namespaced_deployment, AGENT_DEPLOYMENT, namespace)
    if deployment is None:
        result.append(Check(GROUP, "CloudWatch agent", FAIL, f"no Deployment {namespace}/{AGENT_DEPLOYMENT}",
                            "deploy the CloudWatch agent for Prometheus (cwagent-prometheus)"))
    else:
        wanted = deployment.spec.replicas or 1
        available = deployment.status.available_replicas or 0
        status = OK if available >= wanted else FAIL
        result.append(Check(GROUP, "CloudWatch agent", status, f"{available}/{wanted} replicas available",
                            "" if status == OK else f"kubectl -n {namespace} describe deployment {AGENT_DEPLOYMENT}"))
    generated = {d["metadata"]["name"]: d for d in yaml.safe_load_all(feed_files(project)[
        "k8s/cwagent-prometheus-config.yaml"])}
    for name, key in ((AGENT_CONFIGMAP, AGENT_KEY), (SCRAPE_CONFIGMAP, SCRAPE_KEY)):
        live = kube.get(kube.core.read_namespaced_config_map, name, namespace)
        check = f"ConfigMap {name}"
        fix = f"kubectl apply -f build/k8s/cwagent-prometheus-config.yaml (then restart {AGENT_DEPLOYMENT})"
        if live is None or key not in (live.data or {}):
            result.append(Check(GROUP, check, FAIL, f"{namespace}/{name} (key {key}) is missing", fix))
            continue
        drift = _config_drift(key, live.data[key], generated[name]["data"][key])
        result.append(Check(GROUP, check, FAIL, "differs from what gpudash generates: " + "; ".join(drift), fix)
                      if drift else Check(GROUP, check, OK, "matches what gpudash generates"))
    return result


def _selectors(config: dict[str, Any]) -> tuple[set[str], list]:
    declarations = config.get("logs", {}).get("metrics_collected", {}).get("prometheus", {}) \
        .get("emf_processor", {}).get("metric_declaration", [])
    selectors = {s for d in declarations for s in d.get("metric_selectors", [])}
    dimensions = [d.get("dimensions") for d in declarations]
    return selectors, dimensions


def _config_drift(key: str, live_text: str, generated_text: str) -> list[str]:
    if key == AGENT_KEY:
        try:
            live = json.loads(live_text)
        except ValueError:
            return ["cwagentconfig.json is not JSON"]
        generated = json.loads(generated_text)
        if live == generated:
            return []
        (live_selectors, live_dims), (new_selectors, new_dims) = _selectors(live), _selectors(generated)
        drift = [f"metric selector missing: {s}" for s in sorted(new_selectors - live_selectors)]
        drift += [f"metric selector extra: {s}" for s in sorted(live_selectors - new_selectors)]
        if live_dims != new_dims:
            drift.append(f"dimensions {live_dims} → {new_dims}")
        return drift or ["other settings differ"]
    try:
        live = yaml.safe_load(live_text) or {}
    except yaml.YAMLError:
        return ["prometheus.yaml is not YAML"]
    generated = yaml.safe_load(generated_text)
    if live == generated:
        return []
    live_jobs = {j.get("job_name"): j for j in live.get("scrape_configs", [])}
    drift = []
    for job in generated["scrape_configs"]:
        if job["job_name"] not in live_jobs:
            drift.append(f"scrape job {job['job_name']} missing")
        elif live_jobs[job["job_name"]] != job:
            keys = sorted(k for k in set(job) | set(live_jobs[job["job_name"]])
                          if job.get(k) != live_jobs[job["job_name"]].get(k))
            drift.append(f"scrape job {job['job_name']} differs in {', '.join(keys)}")
    return drift or ["other settings differ"]

