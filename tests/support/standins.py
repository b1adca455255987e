"""Command-line stand-ins for a CI runner's tools, talking to the local test servers.

`gpudash ARGS` is gpudash whose CloudWatch pacing and publishing deadline run on a clock that
advances without sleeping (the behaviour is the real one; only the waiting is skipped).
`kubectl apply --server-side [-n NS] -f FILE...` sends each object as a server-side apply through
the official Kubernetes client to the cluster named by $KUBECONFIG, with kubectl's namespace rules
(the object's own namespace, else -n, else `default`; a clash is an error). `aws eks
update-kubeconfig` writes a kubeconfig for the Kubernetes API test server at $KUBE_TEST_SERVER
(trusting $KUBE_TEST_CA when it serves TLS).
Run as `python -m tests.support.standins gpudash|kubectl|aws ARGS...`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import yaml

PLURALS = {"ConfigMap": ("/api/v1", "configmaps"),
           "ServiceMonitor": ("/apis/monitoring.coreos.com/v1", "servicemonitors"),
           "PrometheusRule": ("/apis/monitoring.coreos.com/v1", "prometheusrules")}


def _option(args: list[str], *names: str) -> list[str]:
    values = []
    for index, arg in enumerate(args):
        for name in names:
            if arg == name and index + 1 < len(args):
                values.append(args[index + 1])
            elif arg.startswith(name + "="):
                values.append(arg.split("=", 1)[1])
    return values


def kubectl(args: list[str]) -> int:
    if args[:1] != ["apply"] or "--server-side" not in args:
        print(f"kubectl stand-in: only `apply --server-side` is served, not {' '.join(args)}", file=sys.stderr)
        return 2
    from kubernetes import client, config

    config.load_kube_config()
    api = client.ApiClient()
    flag_namespace = (_option(args, "-n", "--namespace") or [None])[0]
    for file_name in _option(args, "-f", "--filename"):
        for document in yaml.safe_load_all(Path(file_name).read_text()):
            if not document:
                continue
            kind, name = document["kind"], document["metadata"]["name"]
            own = document["metadata"].get("namespace")
            if own and flag_namespace and own != flag_namespace:
                print(f'error: the namespace from the provided object "{own}" does not match the namespace '
                      f'"{flag_namespace}". You must pass \'--namespace={own}\' to perform this operation.',
                      file=sys.stderr)
                return 1
            namespace = own or flag_namespace or "default"
            prefix, plural = PLURALS[kind]
            _, status, _ = api.call_api(
                f"{prefix}/namespaces/{namespace}/{plural}/{name}", "PATCH",
                query_params=[("fieldManager", "kubectl")], body=document,
                header_params={"Content-Type": "application/apply-patch+yaml", "Accept": "application/json"},
                auth_settings=["BearerToken"], response_type="object", _return_http_data_only=False)
            print(f"{kind.lower()}/{name} serverside-applied" + (" (created)" if status == 201 else ""))
    return 0


def aws(args: list[str]) -> int:
    if args[:2] != ["eks", "update-kubeconfig"]:
        print(f"aws stand-in: only `eks update-kubeconfig` is served, not {' '.join(args)}", file=sys.stderr)
        return 2
    from tests.support.kube_server import TOKEN

    path = Path(os.environ.get("KUBECONFIG", Path.home() / ".kube" / "config"))
    path.parent.mkdir(parents=True, exist_ok=True)
    name = (_option(args, "--name") or ["cluster"])[0]
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": name,
        "clusters": [{"name": name, "cluster": {"server": os.environ["KUBE_TEST_SERVER"], **(
            {"certificate-authority-data": os.environ["KUBE_TEST_CA"]} if os.environ.get("KUBE_TEST_CA") else {})}}],
        "users": [{"name": name, "user": {"token": TOKEN}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}]}))
    print(f"Added new context {name} to {path}")
    return 0


def gpudash(args: list[str]) -> int:
    from generator import cli
    from generator.clients import deadline
    from tests.support.clock import FakeClock

    deadline.CLOCK = FakeClock()  # pacing and backoff wait on the deadline's clock
    sys.argv = ["gpudash", *args]
    cli.run()
    return 0


if __name__ == "__main__":
    tool, *rest = sys.argv[1:]
    sys.exit({"gpudash": gpudash, "kubectl": kubectl, "aws": aws}[tool](rest))
