"""The test servers' in-process answers are faithful: a story told once with the shortcut (a request to a running
Grafana test server or moto server, or to a fault proxy in front of a Grafana one, answered in the caller's thread,
tests/support/grafana_server.py, fault_proxy.py and moto_server.py) and once over real sockets
(GPUDASH_TEST_GRAFANA_HTTP=1, GPUDASH_TEST_MOTO_HTTP=1, set before the server starts) ends the same: the same exit
codes and JSON output, and the same requests in the server's log (and the proxy's)."""

from __future__ import annotations

import contextlib
import copy
import json

import pytest

from tests.support import moto_server
from tests.support.cloudwatch_world import PROJECT, _cloudwatch_state, alarms
from tests.support.fault_proxy import FaultProxy, Rule
from tests.support.grafana_push import TEAM, team_settings
from tests.support.grafana_server import ADMIN, GrafanaTestServer, answered_here, in_process_server
from tests.support.projects import builds_kept


# What a fault proxy in front of Grafana does to the story: the first save answered 503 (retried), the second's
# connection reset after Grafana saved it (a fault only a socket can show: over HTTP in both modes; read back), the
# search's answer passed through a rewrite, the prune's delete made and answered 502 by a gateway (read back)
FAULTS = (Rule(r"^/api/dashboards/db$", method="POST", status=503),
          Rule(r"^/api/dashboards/db$", method="POST", action="reset-after", skip=1),
          Rule(r"^/api/search$", action="rewrite", times=99, callback=lambda body: body),
          Rule(rf"^/api/dashboards/uid/{TEAM}$", method="DELETE", action="gateway", status=502))


def _grafana_prune_story(cli, reference, tmp_path, monkeypatch, over_http: bool, proxied: bool = False):
    """push the team's settings, then push them without the team dashboard with --prune (with `proxied`, through a
    fault proxy: FAULTS): (each push's exit code and JSON output, what the server was asked: method and path, in
    order, and what the proxy did with each request)."""
    monkeypatch.setenv("GPUDASH_TEST_GRAFANA_HTTP", "1" if over_http else "0")
    folder = tmp_path / ("http" if over_http else "here")
    with contextlib.ExitStack() as servers:
        server = servers.enter_context(GrafanaTestServer(reference / "grafana" / "grafana-http-api.openapi.json"))
        assert (in_process_server(server.address) is None) == over_http  # the mode told is the mode run
        proxy = servers.enter_context(FaultProxy(server.url)) if proxied else None
        if proxy is not None:
            assert (answered_here(proxy.address) is None) == over_http
            proxy.inject(*copy.deepcopy(FAULTS))
        env = {"GRAFANA_URL": (proxy or server).url, "GRAFANA_TOKEN": ADMIN}
        outcomes = []
        for config, flags in ((team_settings(folder, "a", ["alpha"]), ()),
                              (team_settings(folder, "a2", ["alpha"], team=False), ("--prune",))):
            code, stdout, stderr = cli("push", "--skip-verify", "--output", "json", "--config", config, *flags,
                                       env=env)
            outcomes.append((code, json.loads(stdout)))
        assert server.state.spec_errors == []
        assert TEAM not in server.state.dashboards  # the story is a prune: the retired dashboard is gone
        return outcomes, list(server.state.log), list(proxy.log) if proxy else None


@pytest.mark.parametrize("proxied", [False, True], ids=["", "through a fault proxy"])
def test_a_grafana_push_prune_ends_the_same_in_process_and_over_http(cli, reference, tmp_path, monkeypatch,
                                                                      proxied):
    builds_kept(monkeypatch)
    here = _grafana_prune_story(cli, reference, tmp_path, monkeypatch, over_http=False, proxied=proxied)
    over_http = _grafana_prune_story(cli, reference, tmp_path, monkeypatch, over_http=True, proxied=proxied)
    assert [code for code, _ in here[0]] == [0, 0]
    if proxied:  # every fault was met
        assert sorted({action for _, _, action in here[2]}) == ["forward", "gateway", "reset-after", "rewrite",
                                                                "status"]
    assert here == over_http


def _cloudwatch_prune_story(cli, monkeypatch, over_http: bool) -> tuple[list, list]:
    """apply to a moto server of its own, a retired alarm gpudash owned and a handmade one put beside, apply --prune:
    (each apply's exit code and JSON output, what moto was asked: method, target, AWS operation and the answer's
    status, sorted: Regions are read in threads)."""
    from generator.markers import ALARM_HASH_TAG
    from generator.ownership import alarm_hash

    asked: list[tuple[str, str, str, int]] = []
    answer = moto_server._answer

    def recorded(app, method, target, headers, body, *args, **kwargs):
        answered = answer(app, method, target, headers, body, *args, **kwargs)
        headers = dict(headers)
        asked.append((method, target, (headers.get("X-Amz-Target") or "").rpartition(".")[2], answered[0]))
        return answered

    monkeypatch.setenv("GPUDASH_TEST_MOTO_HTTP", "1" if over_http else "0")
    with moto_server.MotoServer() as server:
        assert (moto_server.in_process_server(server.address) is None) == over_http  # the mode told is the mode run
        server.reset()
        monkeypatch.setenv("AWS_ENDPOINT_URL", server.url)
        client = server.client("cloudwatch", "us-east-1")
        outcomes = []
        with monkeypatch.context() as patch:
            patch.setattr(moto_server, "_answer", recorded)
            code, stdout, stderr = cli("apply", "--skip-verify", "--output", "json")
            outcomes.append((code, json.loads(stdout)))
            for name, tagged in (("gpudash-gpu-cluster-retired-rule-warning", True), ("gpudash-handmade", False)):
                client.put_metric_alarm(AlarmName=name, MetricName="m", Namespace="n", Statistic="Average",
                                        Period=60, EvaluationPeriods=1, Threshold=1,
                                        ComparisonOperator="GreaterThanThreshold")
                if tagged:  # what gpudash leaves: its ownership and rule tags, the hash of the alarm as written
                    alarm = alarms(client)[name]
                    client.tag_resource(ResourceARN=alarm["AlarmArn"], Tags=[
                        {"Key": "ManagedBy", "Value": "gpudash"}, {"Key": ALARM_HASH_TAG, "Value": alarm_hash(alarm)},
                        {"Key": "gpudash:rule", "Value": "retired-rule"}, {"Key": "gpudash:project", "Value": "test"}])
            code, stdout, stderr = cli("apply", "--skip-verify", "--output", "json", "--prune")
            outcomes.append((code, json.loads(stdout)))
            live = alarms(client)
        server.reset()  # moto's state is the process's: leave none to the next test
    assert "gpudash-gpu-cluster-retired-rule-warning" not in live and "gpudash-handmade" in live  # the story prunes
    return outcomes, sorted(asked)


def test_a_cloudwatch_apply_prune_ends_the_same_in_process_and_over_http(cli, built_once, tmp_path, monkeypatch):
    (tmp_path / "project.yaml").write_text(PROJECT)
    monkeypatch.setenv("GPUDASH_CONFIG", str(tmp_path / "project.yaml"))
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    # both stories start from an empty CloudWatch: moto's state is the process's, whatever a module before left
    moto_server.shared_server().reset()
    assert not any(state["alarms"] or state["dashboards"] for state in _cloudwatch_state().values())
    here = _cloudwatch_prune_story(cli, monkeypatch, over_http=False)
    over_http = _cloudwatch_prune_story(cli, monkeypatch, over_http=True)
    assert [code for code, _ in here[0]] == [0, 0]
    assert here == over_http
