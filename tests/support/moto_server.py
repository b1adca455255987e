"""moto's server on 127.0.0.1: CloudWatch over real HTTP, reached with boto3's endpoint_url."""

from __future__ import annotations

import os

from tests.support.prometheus_server import free_port

FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                    "AWS_SESSION_TOKEN": "testing"}


def _moto_modules_listed_once() -> None:
    """moto's server finds each request's service by listing its own package folder (a listdir and about
    150 isdir calls per request, a tenth of a publishing test's CPU): the folder never changes."""
    from moto import backends

    if not isinstance(backends.list_of_moto_modules, _Listed):
        backends.list_of_moto_modules = _Listed(tuple(backends.list_of_moto_modules()))


class _Listed:
    def __init__(self, names: tuple[str, ...]):
        self.names = names

    def __call__(self) -> tuple[str, ...]:
        return self.names


_DASHBOARDS: dict[str, dict] = {}  # account -> dashboards by name, whichever Region's endpoint is called


def _dashboards_global() -> None:
    """CloudWatch dashboards are global in AWS: every Region's endpoint lists, reads, writes and deletes
    the account's one set. moto keeps a set per Region, which hid that a fleet over two Regions saw each
    dashboard as another Region's to prune; here every Region's backend holds the account's one set."""
    from moto.cloudwatch.models import CloudWatchBackend

    if getattr(CloudWatchBackend.__init__, "global_dashboards", False):
        return
    regional = CloudWatchBackend.__init__

    def __init__(self, region_name: str, account_id: str):
        regional(self, region_name, account_id)
        self.dashboards = _DASHBOARDS.setdefault(account_id, {})

    __init__.global_dashboards = True
    CloudWatchBackend.__init__ = __init__


class MotoServer:
    def __init__(self):
        from moto.server import ThreadedMotoServer

        self.port = free_port()
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "MotoServer":
        import logging

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
        _moto_modules_listed_once()
        _dashboards_global()
        for key, value in FAKE_CREDENTIALS.items():
            os.environ.setdefault(key, value)
        self.server.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.stop()

    def reset(self) -> None:
        import requests

        requests.post(f"{self.url}/moto-api/reset", timeout=10)
        for dashboards in _DASHBOARDS.values():
            dashboards.clear()

    def client(self, service: str = "cloudwatch", region: str = "us-east-1"):
        import boto3
        from botocore.config import Config

        # moto answers unimplemented calls with HTTP 500: do not retry them.
        return boto3.client(service, region_name=region, endpoint_url=self.url,
                            config=Config(retries={"max_attempts": 1}), **{
                                "aws_access_key_id": "testing", "aws_secret_access_key": "testing"})

    def put_dcgm_metrics(self, pod: str, cluster: str = "gpu-cluster", region: str = "us-east-1",
                         namespace: str = "ml", node: str = "ip-10-0-1-1", gpu: str = "0") -> None:
        """Datapoints as the CloudWatch agent publishes them for one GPU a workload pod holds (the per-pod
        and the per-GPU dimension sets): what verify samples."""
        # one PutMetricData call for all eight (the API takes up to 1,000 datapoints a call): the same stored data
        self.client("cloudwatch", region).put_metric_data(Namespace="ContainerInsights/Prometheus", MetricData=[{
            "MetricName": metric, "Value": 50, "Dimensions": [
                {"Name": "ClusterName", "Value": cluster}, *({"Name": k, "Value": v} for k, v in dimensions.items())]}
            for metric in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_FB_USED",
                           "DCGM_FI_DEV_POWER_USAGE")
            for dimensions in ({"namespace": namespace, "pod": pod}, {"node": node, "gpu": gpu})])
