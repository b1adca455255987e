"""What the dashboards and rules need of Prometheus beyond data, as `gpudash verify` reports it.

The range bars query with `@ end()` and a negative offset: verify reads the server's version
(/api/v1/status/buildinfo) and proves the feature with a query that uses both. Prometheus here is
2.42 (test_verify.py::test_all_healthy); the servers that refuse it or answer otherwise (older
Prometheus, back-ends reporting other versions) are loopback servers answering as those do, per
request path.

The data-missing rule judges each node of the GPU operator's stock ServiceMonitor through
kube-state-metrics' kube_pod_info: verify says whether the join finds the exporter pods, on a real
Prometheus scraping through that ServiceMonitor's configuration."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml

from generator.checks.prometheus import PINNED, POD_NODES
from tests.support.canned_server import CannedServer
from tests.support.operator_scrape import endpoint_target, scrape_config
from tests.support.prometheus_server import Prometheus
from tests.support.replay_exporter import ReplayExporter
from tests.support.verify_deadline import HANG_DETECTOR, deadline

ONLY_PROMETHEUS = ("--skip", "kube", "--skip", "exporter", "--skip", "cloudwatch")
EMPTY = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}})


def _verify(cli, url):
    code, stdout, stderr = cli("verify", "--output", "json", *ONLY_PROMETHEUS, "--prometheus-url", url, *deadline(()))
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    return code, {c["name"]: c for c in json.loads(stdout)["checks"]}


def _build(version, **more):
    return json.dumps({"status": "success", "data": {"version": version, **more}})


PROMETHEUS_2_30 = _build("2.30.3", revision="f29caccc", branch="HEAD", buildUser="root@build",
                         buildDate="20211005-16:10:52", goVersion="go1.17.1")
PROMETHEUS_2_24 = _build("2.24.1", revision="e4487274", branch="HEAD", buildUser="root@build",
                         buildDate="20210120-00:09:36", goVersion="go1.15.6")
VICTORIA_METRICS = _build("2.24.0")  # what VictoriaMetrics answers, whatever its own version
MIMIR = _build("2.0.0", application="Grafana Mimir", revision="9fd2da5", branch="HEAD", goVersion="go1.17.8",
               features={"query_sharding": "false"})
UNNAMED = _build("", revision="", branch="", buildUser="", buildDate="", goVersion="go1.17.6")  # a development build


def _refused(reason, status=400):
    return status, json.dumps({"status": "error", "errorType": "bad_data",
                               "error": f'invalid parameter "query": {reason}'})


def _read(shift):
    """An answer to the probe that reads the instant asked for plus `shift` seconds (Prometheus: 1)."""
    def answer(path):
        at = float(re.search(r"[?&]time=([0-9.]+)", path).group(1))
        return json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
            {"metric": {}, "value": [at, f"{at + shift:.3f}"]}]}})
    return 200, answer


PINNED_CASES = [  # (case, buildinfo (status, body), probe (status, body), status, cause, what the detail says)
    ("Prometheus 2.30 without the feature flags", (200, PROMETHEUS_2_30), _refused("@ modifier is disabled"), "fail",
     "", ["it reports version 2.30.3, before Prometheus 2.33", "refuses a query with `@ end()` and a negative offset",
      "@ modifier is disabled", "a panel whose query uses either shows an error"]),
    ("Prometheus 2.30 with the @ flag alone", (200, PROMETHEUS_2_30), _refused("negative offset is disabled"), "fail",
     "", ["negative offset is disabled"]),
    ("Prometheus 2.24, before the @ modifier", (200, PROMETHEUS_2_24),
     _refused("1:44: parse error: unexpected character: '@'"), "fail", "",
     ["it reports version 2.24.1, before Prometheus 2.33", "unexpected character: '@'"]),
    ("no buildinfo endpoint", (404, "404 page not found"), _refused("1:44: parse error: unexpected character: '@'"),
     "fail", "", ["version unknown: it has no /api/v1/status/buildinfo (HTTP 404)"]),
    ("odd build information, the probe refused as VictoriaMetrics refuses",
     (200, json.dumps({"status": "success", "data": None})),
     (422, json.dumps({"status": "error", "errorType": "422", "error": "cannot parse query"})), "fail", "",
     ["version unknown: its build information is not the API's (data is odd)", "cannot parse query"]),
    ("VictoriaMetrics reports 2.24.0 and answers as Prometheus", (200, VICTORIA_METRICS), _read(1), "ok", "",
     ["answered as Prometheus answers it (it reports version 2.24.0, before Prometheus 2.33)"]),
    ("Mimir reports its own version", (200, MIMIR), _read(1), "ok", "",
     ["(Grafana Mimir 2.0.0, whose version is not Prometheus')"]),
    ("a back-end reporting a version of its own", (200, _build("0.34.1")), _read(1), "ok", "",
     ["(version '0.34.1', not one of Prometheus')"]),
    ("a build naming no version", (200, UNNAMED), _read(1), "ok", "",
     ["(version unknown: its build information names none)"]),
    ("a back-end that reads the negative offset as a positive one", (200, VICTORIA_METRICS), _read(-1), "warn", "",
     ["answers a query with `@ end()` and a negative offset otherwise than Prometheus", "a panel whose query uses them may count other scrapes than its range's"]),
    ("the probe failing for another reason", (200, PROMETHEUS_2_30),
     (503, json.dumps({"status": "error", "errorType": "unavailable", "error": "too many queries"})), "fail",
     "unreachable", ["cannot tell whether", "too many queries"]),
    ("the probe failing in evaluation, as Prometheus answers it (HTTP 422, errorType execution)", (200, PROMETHEUS_2_30),
     (422, json.dumps({"status": "error", "errorType": "execution", "error": "query processing would load too many "
                       "samples into memory in query execution"})), "fail", "unreachable",
     ["cannot tell whether", "too many samples"]),
    ("the probe answered with no result list", (200, PROMETHEUS_2_30),
     (200, json.dumps({"status": "success", "data": {"resultType": "vector", "result": None}})), "fail", "odd-answer",
     ["data.result is null"]),
]


@pytest.fixture(scope="module")
def canned():
    with CannedServer(EMPTY) as server:
        yield server


@pytest.mark.parametrize("case, build, probe, status, cause, said", PINNED_CASES, ids=[c[0] for c in PINNED_CASES])
def test_the_range_bars_modifiers_are_proven_by_a_query_and_the_version_is_read_beside(case, build, probe, status,
                                                                                         cause, said, cli, canned):
    canned.routes = {"status/buildinfo": build, "timestamp": probe}
    code, checks = _verify(cli, canned.url)
    check = checks[PINNED]
    assert (check["status"], check["cause"]) == (status, cause), check
    for words in said:
        assert words in check["detail"], check
    assert "those panels" not in check["detail"], check  # verify reads no build: it says what such a panel does
    if status != "ok" and not cause:
        assert "upgrade Prometheus to 2.33 or later" in check["fix"], check
    assert code == 1  # the canned server has no DCGM targets: that check fails in every case


def test_push_is_refused_by_a_prometheus_that_refuses_the_range_bars_modifiers(canned):
    """Even on a new cluster (no data yet, which alone publishes with a wait): its range bar panels would show an
    error."""
    from generator import verify
    from generator.clients.options import Options
    from generator.errors import RemoteError
    from generator.project import load_project

    canned.routes = {"status/buildinfo": (200, PROMETHEUS_2_30), "timestamp": _refused("@ modifier is disabled")}
    with pytest.raises(RemoteError) as refused:
        verify.preflight(load_project(), ("prometheus",), Options(prometheus_url=canned.url, timeout=HANG_DETECTOR))
    assert ("prometheus/PromQL @ and negative offset: Prometheus at " in str(refused.value)
            and "refuses a query with `@ end()` and a negative offset" in str(refused.value)), refused.value


EXPORTER_POD = "nvidia-dcgm-exporter-7xk2p"
KSM_POD = {"namespace": "monitoring", "pod": "kube-prometheus-stack-kube-state-metrics-6d9f"}


def _pod_info(*pods):
    lines = ["# TYPE kube_pod_info gauge"]
    lines += [f'kube_pod_info{{namespace="gpu-operator",pod="{pod}",uid="u-{k}",node="node-1",'
              f'created_by_kind="DaemonSet",created_by_name="nvidia-dcgm-exporter"}} 1' for k, pod in enumerate(pods)]
    return "\n".join(lines + ["# TYPE kube_node_info gauge", 'kube_node_info{node="node-1"} 1']) + "\n"


@pytest.fixture(scope="module")
def stock(reference, tmp_path_factory):
    """Two Prometheus servers scraping an exporter pod through the GPU operator's ServiceMonitor as shipped, and
    kube-state-metrics: with honorLabels (`honored`) and without (`renamed`: its target carries its own pod and
    namespace, so kube_pod_info's are renamed exported_*). Each kube-state-metrics payload can be replaced."""
    monitor = yaml.safe_load((reference / "k8s" / "gpu-operator" /
                              "assets_state-dcgm-exporter_0500_service_monitor.yaml").read_text())
    monitor["metadata"]["namespace"] = monitor["spec"]["namespaceSelector"]["matchNames"] = "gpu-operator"
    with ReplayExporter('DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-0",Hostname="node-1"} 60\n') as exporter, \
            ReplayExporter(_pod_info(EXPORTER_POD)) as honored_ksm, \
            ReplayExporter(_pod_info(EXPORTER_POD)) as renamed_ksm:
        servers = {}
        for name, ksm, honor in (("honored", honored_ksm, True), ("renamed", renamed_ksm, False)):
            folder = tmp_path_factory.mktemp(f"prom-{name}")
            (folder / "sd.json").write_text(json.dumps([endpoint_target(
                exporter.address, namespace="gpu-operator", service="nvidia-dcgm-exporter",
                service_labels={"app": "nvidia-dcgm-exporter"}, port="gpu-metrics", pod=EXPORTER_POD,
                container="nvidia-dcgm-exporter", node="node-1")]))
            servers[name] = Prometheus(folder, {"global": {"scrape_interval": "1s"}, "scrape_configs": [
                scrape_config(monitor, str(folder / "sd.json")),
                {"job_name": "kube-state-metrics", "honor_labels": honor,
                 "static_configs": [{"targets": [ksm.address], "labels": KSM_POD}]}]})
            servers[name].ksm = ksm
        try:
            with ThreadPoolExecutor(len(servers)) as pool:
                list(pool.map(Prometheus.start, servers.values()))
            for server in servers.values():
                server.wait_for('DCGM_FI_DEV_GPU_TEMP{container="nvidia-dcgm-exporter"}')
            yield servers
        finally:
            for server in servers.values():
                server.stop()


def test_the_data_missing_rules_node_join_is_reported_as_the_cluster_gets_it(stock, cli):
    """Found: each node judged. Not found, for each reason the join misses: the exporter pod absent from
    kube_pod_info, kube-state-metrics scraped without honorLabels, no kube-state-metrics at all; each a warning
    naming the pods, the weaker judgement they get, and the fix."""
    honored, renamed = stock["honored"], stock["renamed"]
    honored.wait_for(f'kube_pod_info{{pod="{EXPORTER_POD}", namespace="gpu-operator"}}')
    _, checks = _verify(cli, honored.url)
    assert (checks[POD_NODES]["status"], checks[POD_NODES]["detail"]) == (
        "ok", "the pod of each of the 1 exporter targets without `node` is in kube_pod_info: the data-missing rule "
              "judges each node")

    not_judged = ("the data-missing rule judges each of them alone, so an exporter pod replaced more often than every "
                  "10 minutes is never judged")
    honored.ksm.payload = _pod_info("validator-0")  # kube-state-metrics lists other pods of the namespace
    honored.wait_for(f'absent(kube_pod_info{{pod="{EXPORTER_POD}"}}) and on() kube_pod_info{{pod="validator-0"}}')
    _, checks = _verify(cli, honored.url)
    assert (checks[POD_NODES]["status"], checks[POD_NODES]["detail"]) == (
        "warn", "1 of 1 exporter targets without `node` have no kube_pod_info of their pod "
                f"(gpu-operator/{EXPORTER_POD}): kube_pod_info names no such pod in gpu-operator; {not_judged}")
    assert "lists the pods of namespace gpu-operator" in checks[POD_NODES]["fix"]

    renamed.wait_for(f'kube_pod_info{{exported_pod="{EXPORTER_POD}"}}')
    _, checks = _verify(cli, renamed.url)
    assert checks[POD_NODES]["status"] == "warn" and checks[POD_NODES]["detail"].endswith(
        "kube_pod_info carries exported_pod: kube-state-metrics is scraped without honorLabels, so the pod it "
        f"describes is renamed; {not_judged}"), checks[POD_NODES]
    assert checks[POD_NODES]["fix"] == ("set honorLabels: true on kube-state-metrics' ServiceMonitor (Helm values: "
                                        "kube-state-metrics.prometheus.monitor.honorLabels: true)")

    renamed.ksm.payload = _pod_info()  # no kube_pod_info served at all
    renamed.wait_for("absent(kube_pod_info) and on() kube_node_info")
    _, checks = _verify(cli, renamed.url)
    assert checks[POD_NODES]["status"] == "warn" and checks[POD_NODES]["detail"].endswith(
        f"this Prometheus holds no kube_pod_info (kube-state-metrics is not scraped); {not_judged}"), checks[POD_NODES]
    assert checks[POD_NODES]["fix"].startswith("install kube-state-metrics and scrape it with this Prometheus")
