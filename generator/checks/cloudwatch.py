"""CloudWatch checks: the expected metrics arrive, recently, in the declared namespace and dimensions."""

from __future__ import annotations

from ..errors import RemoteError
from ..project import Project
from ..verify import FAIL, OK, Check, Options

GROUP = "cloudwatch"
SAMPLE = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE")


def checks(project: Project, options: Options) -> list[Check]:
    from ..targets.cloudwatch_sync import CloudWatch

    settings = project.settings
    namespace = settings.cloudwatch["namespace"]
    declared = sorted(settings.cloudwatch["dimensions"])
    used = project.used_metrics()
    metrics = [m for m in SAMPLE if m in used] or sorted(used)[:4]
    cloudwatch = CloudWatch(profile=options.profile, endpoint_url=options.endpoint_url, max_attempts=2)
    result = []
    for cluster in settings.clusters:
        missing, wrong_dimensions = [], set()
        for metric in metrics:
            kwargs = {"Namespace": namespace, "MetricName": metric, "RecentlyActive": "PT3H"}
            if "ClusterName" in declared:
                kwargs["Dimensions"] = [{"Name": "ClusterName", "Value": cluster.name}]
            try:
                found = cloudwatch.call(cluster.region, "ListMetrics", f"CloudWatch {namespace}", **kwargs)["Metrics"]
            except RemoteError as exc:
                return result + [Check(GROUP, f"{cluster.name} metrics", FAIL, exc.what, exc.hint or "")]
            if not found:
                missing.append(metric)
            for item in found:
                names = sorted(d["Name"] for d in item.get("Dimensions", []))
                if names != declared:
                    wrong_dimensions.add(", ".join(names))
        name = f"{cluster.name} metrics"
        if len(missing) == len(metrics):
            result.append(Check(GROUP, name, FAIL, f"no DCGM metrics in {namespace} for {cluster.name} in the last 3 h",
                                "apply build/k8s/cwagent-prometheus-config.yaml and check the cwagent-prometheus logs"))
        elif missing:
            result.append(Check(GROUP, name, FAIL, f"missing in {namespace}: {', '.join(missing)}",
                                "check the agent's metric_selectors (gpudash verify's kube group shows the drift)"))
        elif wrong_dimensions:
            result.append(Check(GROUP, name, FAIL, f"published with dimensions [{'; '.join(sorted(wrong_dimensions))}], "
                                f"declared [{', '.join(declared)}]",
                                "apply the generated agent ConfigMap, or set cloudwatch.dimensions to what is published"))
        else:
            result.append(Check(GROUP, name, OK, f"{len(metrics)} sampled metrics arriving in {namespace}"))
    return result
