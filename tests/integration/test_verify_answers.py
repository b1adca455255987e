"""`gpudash verify` against answers shaped unlike their API: each is one failed check that names what
was odd, with exit 1, never a crash (exit 4) and never a pass. Kubernetes answers come from the
Kubernetes API test server with one object broken; Prometheus, CloudWatch and exporter answers from
a loopback server that answers every request with the same canned body."""

from __future__ import annotations

import json

import pytest
import yaml

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support.canned_server import CannedServer
from tests.support.kube_server import KubeCluster, KubeTestServer
from tests.support.verify_deadline import verify_json

ONLY = {group: [arg for other in ("kube", "exporter", "prometheus", "cloudwatch") if other != group
                for arg in ("--skip", other)] for group in ("kube", "exporter", "prometheus", "cloudwatch")}
AGENT = ("amazon-cloudwatch", "prometheus-cwagentconfig")
SCRAPE = ("amazon-cloudwatch", "prometheus-config")


def _spec(c):
    return c.daemonset["spec"]["template"]["spec"]


def _set(target, key, value):
    target[key] = value


KUBE = [  # (case, break the cluster, the check that fails, what its detail names)
    ("DaemonSet status null", lambda c: _set(c.daemonset, "status", None), "exporter rollout",
     "status is null, expected an object"),
    ("DaemonSet numberReady missing", lambda c: c.daemonset["status"].pop("numberReady"), "exporter rollout",
     "status.numberReady is missing"),
    ("DaemonSet numberReady text", lambda c: _set(c.daemonset["status"], "numberReady", "two"), "exporter rollout",
     "status.numberReady is 'two', expected a whole number"),
    ("no containers", lambda c: _set(_spec(c), "containers", []), "pod labels setting",
     "spec.template.spec.containers is a list of 0, expected at least one container"),
    ("containers null", lambda c: _set(_spec(c), "containers", None), "counters CSV",
     "spec.template.spec.containers is null"),
    ("container env an object", lambda c: _set(_spec(c)["containers"][0], "env", {"A": "b"}), "pod labels setting",
     "spec.template.spec.containers[0].env is an object, expected a list"),
    ("container args a string", lambda c: _set(_spec(c)["containers"][0], "args", "-f x"), "counters CSV",
     "args is '-f x', expected a list"),
    ("volumeMounts entries strings", lambda c: _set(_spec(c)["containers"][0], "volumeMounts", ["x"]),
     "counters CSV", "volumeMounts[0] is 'x', expected an object"),
    ("mountPath empty", lambda c: _spec(c)["containers"][0].setdefault("volumeMounts", []).append(
        {"name": "x", "mountPath": ""}), "counters CSV", "mountPath is '', expected an absolute path"),
    ("GPU capacity 500m", lambda c: _set(c.nodes[0]["status"]["capacity"], "nvidia.com/gpu", "500m"),
     "GPU node coverage", "status.capacity[nvidia.com/gpu] is '500m', expected a whole number of devices"),
    ("GPU capacity a word", lambda c: _set(c.nodes[0]["status"]["capacity"], "nvidia.com/gpu", "eight"),
     "GPU node coverage", "is 'eight', expected a Kubernetes quantity"),
    ("GPU capacity negative", lambda c: _set(c.nodes[1]["status"]["capacity"], "nvidia.com/gpu", "-1"),
     "GPU node coverage", "is '-1', expected a whole number of devices"),
    ("node status null", lambda c: _set(c.nodes[0], "status", None), "GPU node coverage",
     "items[0].status is null, expected an object"),
    ("node capacity a list", lambda c: _set(c.nodes[0]["status"], "capacity", ["nvidia.com/gpu"]),
     "GPU node coverage", "items[0].status.capacity is a list of 1, expected an object"),
    ("node without a name", lambda c: c.nodes[0]["metadata"].pop("name"), "GPU node coverage",
     "items[0].metadata.name is missing"),
    # a list asked without a limit is answered whole by the API server, with no continue token: one that gives a token
    # is a page of it (something in front paging on its own), never read as every node
    ("nodes a page of the list", lambda c: _set(c.fronted, "/api/v1/nodes", (200, json.dumps({
        "apiVersion": "v1", "kind": "NodeList", "metadata": {"resourceVersion": "5", "continue": "eyJydiI6NX0"},
        "items": [{"metadata": {"name": "cpu-node-1"}, "status": {"capacity": {"cpu": "8"}}}]}))),
     "GPU node coverage", "a list read in one answer came with a continue token ('eyJydiI6NX0'): a page of the list"),
    ("pod status null", lambda c: _set(c.pods[0], "status", None), "GPU node coverage",
     "items[0].status is null, expected an object"),
    ("container ready as text", lambda c: _set(c.pods[0]["status"]["containerStatuses"][0], "ready", "yes"),
     "GPU node coverage", "containerStatuses[0].ready is 'yes', expected true or false"),
    ("pod nodeName a number", lambda c: _set(c.pods[0]["spec"], "nodeName", 7), "GPU node coverage",
     "items[0].spec.nodeName is 7, expected a string"),
    ("Service port as text", lambda c: _set(next(iter(c.services.values()))["spec"], "ports", [{"port": "9400"}]),
     "exporter Service", "spec.ports[0].port is '9400', expected a whole number"),
    ("Service spec a string", lambda c: _set(next(iter(c.services.values())), "spec", "none"), "exporter Service",
     "spec is 'none', expected an object"),
    ("ConfigMap holding a list", lambda c: _set(c.configmaps, AGENT, [1, 2]), "ConfigMap prometheus-cwagentconfig",
     "the answer is a list of 2, expected an object"),
    ("ConfigMap data a list", lambda c: _set(c.configmaps[AGENT], "data", ["cwagentconfig.json"]),
     "ConfigMap prometheus-cwagentconfig", "data is a list of 1, expected an object"),
    ("ConfigMap value a number", lambda c: _set(c.configmaps[SCRAPE], "data", {"prometheus.yaml": 5}),
     "ConfigMap prometheus-config", "data.prometheus.yaml is 5, expected a string"),
    ("agent config a JSON list", lambda c: _set(c.configmaps[AGENT]["data"], "cwagentconfig.json", "[1, 2]"),
     "ConfigMap prometheus-cwagentconfig", "the answer is a list of 2, expected an object"),
    ("scrape config a YAML list", lambda c: _set(c.configmaps[SCRAPE]["data"], "prometheus.yaml", "- a\n- b\n"),
     "ConfigMap prometheus-config", "the answer is a list of 2, expected an object"),
    ("scrape_configs a string", lambda c: _set(c.configmaps[SCRAPE]["data"], "prometheus.yaml", "scrape_configs: x\n"),
     "ConfigMap prometheus-config", "scrape_configs is 'x', expected a list"),
    ("ServiceMonitor spec null", lambda c: _set(c.service_monitors[0], "spec", None), "Prometheus scrape config",
     "items[0].spec is null, expected an object"),
    ("ServiceMonitor endpoints an object", lambda c: _set(c.service_monitors[0]["spec"], "endpoints", {"a": 1}),
     "Prometheus scrape config", "spec.endpoints is an object, expected a list"),
    ("agent Deployment status null", lambda c: _set(c.deployments[AGENT[0], "cwagent-prometheus"], "status", None),
     "CloudWatch agent", "status is null, expected an object"),
    ("agent replicas as text",
     lambda c: _set(c.deployments[AGENT[0], "cwagent-prometheus"]["spec"], "replicas", "1"),
     "CloudWatch agent", "spec.replicas is '1', expected a whole number"),
]


@pytest.fixture(scope="module")
def kube_server(reference, tmp_path_factory):
    with KubeTestServer(KubeCluster(reference)) as server:
        server.kubeconfig_path = server.kubeconfig(tmp_path_factory.mktemp("kube") / "kubeconfig")
        yield server


@pytest.fixture(scope="module")
def canned():
    """One server for the module; each test sets its answer (a server per test costs its shutdown)."""
    with CannedServer() as server:
        yield server


def _answer(server, body, status=200, content_type="application/json"):
    server.body, server.status, server.content_type = body.encode(), status, content_type
    return server


@pytest.fixture(scope="module")
def generated():
    project = load_project()
    return {"configmaps": list(yaml.safe_load_all(encode(build(project))["k8s/cwagent-prometheus-config-gpu-cluster.yaml"])),
            "monitors": list(yaml.safe_load_all(encode(build(project))["k8s/servicemonitor.yaml"]))}


# Answers of the API that hold content that is not what gpudash wrote: the check fails on the content (no odd answer)
CONTENT = [
    # JSON nested deeper than Python's parser follows: verify ended with "the input is nested too deeply ... the file
    # you changed last" (exit 2), of a ConfigMap in the cluster
    ("agent config nested too deeply",
     lambda c: _set(c.configmaps[AGENT]["data"], "cwagentconfig.json", "[" * 10**5 + "]" * 10**5),
     "ConfigMap prometheus-cwagentconfig", "differs from what gpudash generates: cwagentconfig.json is not JSON"),
]


@pytest.mark.parametrize("case, breaks, check, named, cause", [(*k, "odd-answer") for k in KUBE] +
                         [(*k, "") for k in CONTENT], ids=[k[0] for k in KUBE + CONTENT])
def test_odd_kubernetes_answers(case, breaks, check, named, cause, reference, generated, cli, kube_server,
                                monkeypatch):
    cluster = KubeCluster(reference)
    for document in generated["configmaps"]:
        cluster.applied(document)
    cluster.service_monitors = [{**m, "metadata": {**m["metadata"], "namespace": "gpu-operator"}}
                                for m in generated["monitors"]]
    breaks(cluster)
    kube_server.cluster = cluster
    monkeypatch.setenv("KUBECONFIG", str(kube_server.kubeconfig_path))
    # the ServiceMonitor is checked when Prometheus is in use; this one cannot be reached
    code, checks = verify_json(cli, "--skip", "exporter", "--skip", "cloudwatch", "--prometheus-url", "http://127.0.0.1:9")
    assert code == 1
    assert ("kube", check) in checks, {key: c["detail"] for key, c in checks.items()}
    assert checks[("kube", check)]["status"] == "fail"
    assert named in checks[("kube", check)]["detail"], checks[("kube", check)]["detail"]
    assert checks[("kube", check)]["cause"] == cause


def test_a_service_monitor_listing_without_its_items_is_odd_not_none(reference, cli, kube_server, monkeypatch):
    kube_server.cluster = KubeCluster(reference)
    path = "/apis/monitoring.coreos.com/v1/servicemonitors"
    kube_server.documents[path] = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitorList",
                                   "metadata": {}}
    monkeypatch.setenv("KUBECONFIG", str(kube_server.kubeconfig_path))
    try:
        _, checks = verify_json(cli, "--skip", "exporter", "--skip", "cloudwatch", "--prometheus-url", "http://127.0.0.1:9")
    finally:
        del kube_server.documents[path]
    check = checks[("kube", "Prometheus scrape config")]
    assert check["status"] == "fail" and check["cause"] == "odd-answer" and "items is missing" in check["detail"], check


def _vector(*results):
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": list(results)}})


PROMETHEUS = [  # (case, body, status, the check that fails, what it names)
    ("no data", '{"status": "success"}', 200, "DCGM targets", "data is missing, expected an object"),
    ("data without result", '{"status": "success", "data": {"resultType": "vector"}}', 200, "DCGM targets",
     "data.result is missing, expected a list"),
    ("result null", '{"status": "success", "data": {"resultType": "vector", "result": null}}', 200, "DCGM targets",
     "data.result is null"),
    ("result an object", '{"status": "success", "data": {"resultType": "vector", "result": {}}}', 200,
     "DCGM targets", "data.result is an object, expected a list"),
    ("a matrix", '{"status": "success", "data": {"resultType": "matrix", "result": []}}', 200, "DCGM targets",
     "data.resultType is 'matrix', expected 'vector'"),
    ("value a word", _vector({"metric": {}, "value": [1, "many"]}), 200, "DCGM targets",
     "data.result[0].value[1] is 'many', expected a number"),
    ("value a list", _vector({"metric": {}, "value": [1, [2]]}), 200, "DCGM targets",
     "value[1] is a list of 1, expected a number"),
    ("value without time", _vector({"metric": {}, "value": ["1"]}), 200, "DCGM targets",
     "data.result[0].value is a list of 1, expected [time, value]"),
    ("value missing", _vector({"metric": {}}), 200, "DCGM targets", "data.result[0].value is missing"),
    ("labels a list", _vector({"metric": ["job"], "value": [1, "1"]}), 200, "DCGM targets",
     "data.result[0].metric is a list of 1, expected an object"),
    ("label value a number", _vector({"metric": {"instance": 5}, "value": [1, "0"]}), 200, "DCGM targets",
     "data.result[0].metric.instance is 5, expected a string"),
    ("sample a string", _vector("up"), 200, "DCGM targets", "data.result[0] is 'up', expected an object"),
    ("GPU count infinite", _vector({"metric": {}, "value": [1, "+Inf"]}), 200, "DCGM series",
     "value[1] is inf, expected a count of GPUs"),
    ("a JSON list", "[]", 200, "DCGM targets", "the answer is a list of 0, expected an object"),
    ("JSON null", "null", 200, "DCGM targets", "the answer is null, expected an object"),
    ("a login page", "<html><body>Sign in</body></html>", 200, "DCGM targets", "expected JSON"),
    ("status a number", '{"status": 1}', 200, "DCGM targets", "status is 1, expected a string"),
    ("an HTML error page", "<html>Bad gateway</html>", 502, "reachable", "answered HTTP 502"),
]
CHARSETS = [  # (case, content type): the text is read as UTF-8 when the charset is unknown
    ("an unknown charset", "application/json; charset=nonsense"),
    ("an empty charset", 'application/json; charset=""'),
    ("two charsets", "application/json; charset=utf-8; charset=latin1"),
]


@pytest.mark.parametrize("case, body, status, check, named", PROMETHEUS, ids=[p[0] for p in PROMETHEUS])
def test_odd_prometheus_answers(case, body, status, check, named, cli, canned):
    prometheus = _answer(canned, body, status)
    code, checks = verify_json(cli, *ONLY["prometheus"], "--prometheus-url", prometheus.url)
    assert code == 1
    failing = checks[("prometheus", check)]
    assert failing["status"] == "fail" and named in failing["detail"], failing


@pytest.mark.parametrize("case, content_type", CHARSETS, ids=[c[0] for c in CHARSETS])
def test_answers_in_odd_charsets(case, content_type, cli, canned):
    prometheus = _answer(canned, '{"status": "success"}', content_type=content_type)
    code, checks = verify_json(cli, *ONLY["prometheus"], "--prometheus-url", prometheus.url)
    assert code == 1 and "data is missing" in checks[("prometheus", "DCGM targets")]["detail"]
    code, checks = verify_json(cli, *ONLY["exporter"], "--exporter-url", prometheus.url + "/metrics")
    assert code == 1 and "is not Prometheus exposition" in checks[("exporter", "metrics endpoint")]["detail"]


CLOUDWATCH = [  # (case, body, what it names)
    ("an empty object", "{}", "Metrics is missing, expected a list"),
    ("Metrics null", '{"Metrics": null}', "Metrics is missing, expected a list"),
    ("Metrics a string", '{"Metrics": "all"}', "not a ListMetrics answer"),
    ("Metrics an object", '{"Metrics": {}}', "not a ListMetrics answer (Metrics is not a list)"),
    ("dimensions an object", '{"Metrics": [{"MetricName": "DCGM_FI_DEV_GPU_UTIL", "Dimensions": {}}]}',
     "not a ListMetrics answer (Metrics[0].Dimensions is not a list)"),
    ("a metric without a name", '{"Metrics": [{"Namespace": "x"}]}', "Metrics[0].MetricName is missing"),
    ("a metric name a number", '{"Metrics": [{"MetricName": 5}]}', "Metrics[0].MetricName is 5, expected a string"),
    ("dimensions a string", '{"Metrics": [{"MetricName": "DCGM_FI_DEV_GPU_UTIL", "Dimensions": "pod"}]}',
     "not a ListMetrics answer"),
    ("a dimension name null",
     '{"Metrics": [{"MetricName": "DCGM_FI_DEV_GPU_UTIL", "Dimensions": [{"Name": null, "Value": "x"}]}]}',
     "Metrics[0].Dimensions[0].Name is missing"),
    ("a token a number", '{"Metrics": [], "NextToken": 7}', "NextToken is 7, expected a string"),
    ("the same page forever", '{"Metrics": [], "NextToken": "again"}', "NextToken 'again' repeats the token just sent"),
    ("an HTML page", "<html>maintenance</html>", "Metrics is missing"),
]


@pytest.mark.parametrize("case, body, named", CLOUDWATCH, ids=[c[0] for c in CLOUDWATCH])
def test_odd_cloudwatch_answers(case, body, named, cli, canned, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    cloudwatch = _answer(canned, body, content_type="application/x-amz-json-1.0")
    code, checks = verify_json(cli, *ONLY["cloudwatch"], "--endpoint-url", cloudwatch.url)
    assert code == 1
    failing = checks[("cloudwatch", "gpu-cluster metrics")]
    assert failing["status"] == "fail" and failing["cause"] == "odd-answer" and named in failing["detail"], failing


EXPORTER = [  # (case, body, status, what it names)
    ("a login page", "<html><body>Sign in</body></html>", 200, "is not Prometheus exposition"),
    ("JSON", '{"status": "success"}', 200, "is not Prometheus exposition"),
    ("binary", "\x00\x01\x02\x03", 200, "is not Prometheus exposition"),
    ("a value that is a word", 'DCGM_FI_DEV_GPU_UTIL{gpu="0"} busy\n', 200, "is not Prometheus exposition"),
    ("an empty body", "", 200, "has no DCGM_* metric (0 families)"),
    ("another exporter", "# TYPE go_goroutines gauge\ngo_goroutines 12\n", 200, "has no DCGM_* metric (1 families)"),
    ("a 404 page", "404 page not found", 404, "answered HTTP 404"),
]


@pytest.mark.parametrize("case, body, status, named", EXPORTER, ids=[e[0] for e in EXPORTER])
def test_odd_exporter_answers(case, body, status, named, cli, canned):
    exporter = _answer(canned, body, status, "text/plain")
    code, checks = verify_json(cli, *ONLY["exporter"], "--exporter-url", exporter.url + "/metrics")
    assert code == 1
    failing = checks.get(("exporter", "metrics endpoint")) or checks[("exporter", "reachable")]
    assert failing["status"] == "fail" and named in failing["detail"], failing


def test_the_table_holds_at_least_thirty_odd_answers():
    assert len(KUBE) + len(PROMETHEUS) + len(CHARSETS) + len(CLOUDWATCH) + len(EXPORTER) >= 30
