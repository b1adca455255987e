"""CloudWatch publishing test world: moto's server over real HTTP, the CLI pointed at it (directly
or through the fault proxy), and what tests do to it (a console edit, a foreign alarm).

tests/integration/conftest.py makes the fixtures (`moto`, `aws`, `proxied`) available to every test there.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest

from generator.clients.cloudwatch import WRITES as WRITE_APIS
from generator.project import load_project
from tests.support.fault_proxy import FaultProxy, Rule
from tests.support.moto_server import shared_server
from tests.support.projects import builds_kept, by_value

NAMES = ["gpudash-gpu-cluster-by-pod", "gpudash-gpu-cluster-health", "gpudash-gpu-cluster-overview"]


@pytest.fixture(scope="module")
def moto():
    """The worker's moto server (its applications and clients made once), empty for each module."""
    server = shared_server()
    server.reset()
    yield server
    server.reset()  # moto's state is per process: leave none to the next test module


@pytest.fixture
def built_once(monkeypatch):
    """A project equal by value to one this worker built before (its settings, counters and definitions, wherever its
    folder) is built once: these tests are about publishing (tests/support/projects.builds_kept)."""
    builds_kept(monkeypatch)


PROJECT = "project: test\n"  # the settings' project name: what --prune may delete carries it


@pytest.fixture
def project_dir(project_dir):
    """The project on disk (tests/conftest.py), its settings naming the project unless they name one."""

    def make(config: str = "", *args, **kwargs):
        return project_dir(config if "project:" in config else PROJECT + config, *args, **kwargs)

    return make


_PROXY_CLIENTS: dict = {}  # the product's clients of a fault proxy in front of moto answering in this process, by address


def _clients_kept(moto, monkeypatch) -> None:
    """Each CLI run's CloudWatch makes its boto3 clients as the command does, but one it makes for moto's own
    address is kept for the module's later runs, and one for a fault proxy in front of it answering in this process
    (tests/support/fault_proxy.py) for later runs to the same address (a test's `proxied` takes the port the proxy
    before it had): creating a client (its handlers, its endpoint rules) was a fifth of a publishing test's CPU, and
    a client holds nothing of a run but its connections. A proxy's clients close their connections when the test
    ends (`_connections_closed`): a proxy lives for one test, and a connection kept to it would reach that proxy's
    handler, not the next test's proxy. Reused only under the same credentials; masked for each run as the command
    does."""
    from generator.clients import cloudwatch
    from tests.support.fault_proxy import FaultProxy
    from tests.support.moto_server import answered_here

    make = cloudwatch.CloudWatch.client

    def client(self, region: str, service: str = "cloudwatch"):
        if self.endpoint_url == moto.url:
            kept = moto.product_clients
        elif isinstance(answered_here(self.endpoint_url), FaultProxy):
            kept = _PROXY_CLIENTS
        else:
            return make(self, region, service)
        if (region, service) in self.clients:
            return make(self, region, service)
        found = self.session.get_credentials()
        if found is None:
            return make(self, region, service)
        frozen = found.get_frozen_credentials()
        key = (self.endpoint_url, region, service, self.session.profile, frozen.access_key, frozen.secret_key,
               frozen.token)
        if key not in kept:
            kept[key] = make(self, region, service)
        with self.lock:
            cloudwatch._mask_credentials(self.session)
            self.clients[(region, service)] = kept[key]
        return self.clients[(region, service)]

    monkeypatch.setattr(cloudwatch.CloudWatch, "client", client)


def _connections_closed() -> None:
    """Every kept client of a fault proxy without a connection left open: a later request opens one to whichever
    proxy then has the address (connections are made only for a rule that breaks one: see FaultProxy.answer)."""
    for kept in _PROXY_CLIENTS.values():
        kept.close()


@pytest.fixture
def aws(moto, cli, monkeypatch, built_once, tmp_path):
    """The CLI pointed at moto; the settings (GPUDASH_CONFIG) are the defaults with a project name."""
    moto.reset()
    _clients_kept(moto, monkeypatch)
    (tmp_path / "project.yaml").write_text(PROJECT)
    monkeypatch.setenv("GPUDASH_CONFIG", str(tmp_path / "project.yaml"))
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto.url)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    client = moto.client("cloudwatch", "us-east-1")

    def apply(*args):
        code, stdout, stderr = cli("apply", "--skip-verify", "--output", "json", *args)
        return code, (json.loads(stdout) if stdout.strip().startswith("{") else stdout), stderr

    yield client, apply
    _connections_closed()


_PUBLISHED: dict = {}  # (project by value, arguments) -> moto's CloudWatch state right after that first apply


def _cloudwatch_state():
    from moto.cloudwatch.models import cloudwatch_backends

    return {(account, region): {key: backend.__dict__[key] for key in _STATE}
            for account, regions in cloudwatch_backends.items() for region, backend in regions.items()}


_STATE = ("alarms", "dashboards", "metric_data", "paged_metric_data", "insight_rules", "tagger")


@pytest.fixture
def published(aws, moto):
    """`published(*args)` leaves in moto what `apply(*args)` leaves when it publishes into moto's empty
    state: alarms with their tags and history, dashboards, datapoints. A worker's first test of a project (its
    settings, counters and definitions by value: tests/support/projects.by_value) runs that apply (it must exit 0)
    and keeps a copy of moto's CloudWatch state; every later test gets a fresh copy of that state instead of the
    apply's 50-odd requests. The apply is the same each time (the same build into the same empty state), and moto
    keeps each request's outcome in these objects alone, so the copy is the world the apply would leave.

    `published(*args, settle=True)`: that, then what `settled(apply)` leaves after it (an apply of the test's
    own settings, GPUDASH_CONFIG, without --prune), kept the same way by both projects: the same apply into
    the same state. The first apply's state is the one kept for `published(*args)`: whichever form comes first
    makes it, and a later one of either form starts from its copy. Both applies go to moto directly, as a test's
    own first apply does before it injects a fault (a test's proxy, which has seen neither, counts what comes
    after)."""
    import copy
    import os

    from moto.cloudwatch.models import cloudwatch_backends

    _, apply = aws

    def publish(*args, settle: bool = False):
        assert not any(state["alarms"] or state["dashboards"] for state in _cloudwatch_state().values()), \
            "published() starts a test: moto must still be empty"
        config = args[args.index("--config") + 1] if "--config" in args else os.environ["GPUDASH_CONFIG"]
        key = (by_value(load_project(Path(config))), tuple(a for a in args if a != config),
               by_value(load_project(Path(os.environ["GPUDASH_CONFIG"]))) if settle else None)
        if key in _PUBLISHED:
            _restored(_PUBLISHED[key])
            return
        first = (*key[:2], None)  # the first apply's state: the whole of it without `settle`
        with pytest.MonkeyPatch.context() as patch:  # straight to moto: a test's proxy starts with this state
            patch.setenv("AWS_ENDPOINT_URL", moto.url)
            if first in _PUBLISHED:  # kept by a test of the same apply without `settle`
                _restored(_PUBLISHED[first])
            else:
                code, report, stderr = apply(*args)
                assert code == 0, stderr
                _PUBLISHED[first] = copy.deepcopy(_cloudwatch_state())
            if settle:
                settled(apply)
                _PUBLISHED[key] = copy.deepcopy(_cloudwatch_state())

    def _restored(kept) -> None:
        for (account, region), state in copy.deepcopy(kept).items():
            backend = cloudwatch_backends[account][region]
            dashboards = backend.dashboards  # every Region's one set (moto_server.py): filled, not replaced
            dashboards.clear()
            dashboards.update(state.pop("dashboards"))
            backend.__dict__.update(state)

    return publish


@pytest.fixture
def proxied(aws, moto, monkeypatch):
    """The same, through a fault-injecting proxy in front of moto."""
    client, apply = aws
    with FaultProxy(moto.url, port=_PROXY_PORT[0]) as proxy:  # the last test's proxy's port: its clients are kept
        _PROXY_PORT[0] = proxy.server.server_address[1]
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        yield proxy, client, apply


_PROXY_PORT = [0]  # the port of the last proxy `proxied` made (0: none yet)


ALWAYS = 10**6


def fault(operation, action, *, times=1, status=200, body=None, callback=None, naming=None):
    """A proxy rule for one CloudWatch (or tagging) operation, or only the calls whose request names
    `naming`; `body` bytes, or JSON-able."""
    data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
    return Rule(path="/", operation=operation, action=action, times=times, status=status, body=data,
                callback=callback, contains=json.dumps(naming).encode() if naming else None)


class DescribedNames(Rule):
    """A proxy rule that takes no request: `names` holds the alarm names the last DescribeAlarms by name asked for (a
    read-back asks for the alarm written and the next one)."""

    def __init__(self, names: list[str]):
        super().__init__(path="/")
        self.names = names

    def matches(self, method, path, body, operation="", region="", query="") -> bool:
        if operation == "DescribeAlarms" and b"AlarmNames" in body:
            self.names[:] = re.findall(r'"(gpudash-[^"]+)"', body.decode())
        return False


class CreateOrder(Rule):
    """A proxy rule that takes no request: it learns the alarms an apply is to write, in order (the longest
    DescribeAlarms by name: the batch's read before its writes), and those it sent PutMetricAlarm for. `next()` is
    the first alarm of the batch after the last one sent that does not exist yet in `client`: the alarm the apply
    writes next, for a person to create under its name."""

    def __init__(self, client):
        super().__init__(path="/")
        self.client = client
        self.batch: list[str] = []
        self.put: list[str] = []

    def matches(self, method, path, body, operation="", region="", query="") -> bool:
        if operation == "DescribeAlarms" and b"AlarmNames" in body:
            names = re.findall(r'"(gpudash-[^"]+)"', body.decode())
            if len(names) > len(self.batch):
                self.batch = names
        elif operation == "PutMetricAlarm":
            self.put.extend(re.findall(r'"AlarmName":\s*"([^"]+)"', body.decode())[:1])
        return False

    def next(self) -> str | None:
        start = self.batch.index(self.put[-1]) + 1 if self.put and self.put[-1] in self.batch else 0
        present = alarms(self.client)
        return next((name for name in self.batch[start:] if name not in present), None)


def at_every_wait(monkeypatch, clock, act, alarms_only: bool = False) -> list[float]:
    """`act()` runs whenever publishing waits on the pacing clock `clock` (a person acting while gpudash waits for a
    call's turn); the list returned gets each wait's length. Dashboards are published beside alarms, on a thread of
    their own and its readers: with `alarms_only`, a person acts only while the alarms' side waits, where a test of
    alarms means them to; acting while the dashboards' side waits, they would act at any point of the alarms' work,
    also between the last look at an alarm and its DeleteAlarms or PutMetricAlarm, where no client can see an edit
    (CloudWatch writes and deletes unconditionally)."""
    sleep, waits = clock.sleep, []

    def waiting(seconds: float) -> None:
        if seconds > 0 and not (alarms_only and threading.current_thread().name.startswith(
                ("gpudash-dashboards", "gpudash-read"))):
            act()
        waits.append(seconds)
        sleep(seconds)

    monkeypatch.setattr(clock, "sleep", waiting)
    return waits


def writes(proxy):
    return [op for op in proxy.operations if op in WRITE_APIS]


def fresh(proxy):
    """No faults, and an empty record of operations."""
    proxy.clear()
    with proxy.lock:
        proxy.operations.clear()


def without_query_periods(body: bytes) -> bytes:
    """A DescribeAlarms answer as a CloudWatch that reports alarms in its own form might give it: the queries
    without their Period."""
    answer = json.loads(body)
    for alarm in answer.get("MetricAlarms", []):
        for query in alarm.get("Metrics", []):
            query.pop("Period", None)
    return json.dumps(answer).encode()


def reported_in_a_form_of_its_own(proxied, rewrite):
    """Apply twice while every DescribeAlarms answer is `rewrite(body)` (a CloudWatch reporting alarms in a
    form of its own): the first creates every alarm, the second writes nothing; then a console edit is still
    refused. Returns the first apply's report."""
    proxy, client, apply = proxied
    proxy.inject(fault("DescribeAlarms", "rewrite", times=ALWAYS, callback=rewrite))
    code, first, stderr = apply()
    assert code == 0, stderr
    fresh(proxy)
    proxy.inject(fault("DescribeAlarms", "rewrite", times=ALWAYS, callback=rewrite))
    code, report, _ = apply()
    assert code == 0 and report["written"] == [] and report["refused"] == [] and writes(proxy) == []
    edit_in_console(client)  # a real edit is still seen
    code, report, _ = apply()
    assert code == 1 and report["refused"] == [EDITED]
    return first


def alarms(client):
    return {a["AlarmName"]: a for a in client.describe_alarms(AlarmNamePrefix="gpudash-")["MetricAlarms"]}


FOREIGN = "gpudash-gpu-cluster-xid-error-critical"
EDITED = "gpudash-gpu-cluster-gpu-temp-critical-critical"


def foreign_alarm(client, name=FOREIGN, threshold=1.0):
    client.put_metric_alarm(AlarmName=name, MetricName="CPUUtilization", Namespace="AWS/EC2", Statistic="Average",
                            Period=300, EvaluationPeriods=1, Threshold=threshold,
                            ComparisonOperator="GreaterThanThreshold")


def edit_in_console(client, name=EDITED, threshold=95.0):
    """What the console does: PutMetricAlarm with the alarm's own fields and a new threshold; tags stay."""
    alarm = dict(alarms(client)[name])
    keys = ("AlarmName", "AlarmDescription", "ActionsEnabled", "AlarmActions", "OKActions", "ComparisonOperator",
            "EvaluationPeriods", "DatapointsToAlarm", "TreatMissingData", "Metrics")
    request = {k: alarm[k] for k in keys if k in alarm}
    request["Metrics"] = [{k: m[k] for k in ("Id", "Expression", "Period", "ReturnData", "Label") if k in m}
                          for m in request["Metrics"]]
    client.put_metric_alarm(**request, Threshold=threshold)


def taken_over(client, name, team="team-ml"):
    """What a person does to take an alarm over: its ManagedBy tag set to their team's (TagResource); fields stay."""
    client.tag_resource(ResourceARN=alarms(client)[name]["AlarmArn"], Tags=[{"Key": "ManagedBy", "Value": team}])


def threshold_lowered(name):
    """A DescribeAlarms rewrite reporting alarm `name` with a threshold one below the one it holds (a CloudWatch
    reporting it otherwise than sent)."""
    def lower(body: bytes) -> bytes:
        answer = json.loads(body)
        for alarm in answer.get("MetricAlarms", []):
            if alarm["AlarmName"] == name:
                alarm["Threshold"] = alarm["Threshold"] - 1
        return json.dumps(answer).encode()
    return lower


def snapshot(client):
    """Every alarm's fields and tags, and every dashboard body: what a test compares before and after."""
    live = {name: ({k: v for k, v in a.items() if not k.startswith(("StateUpdated", "StateTransitioned"))},
                   client.list_tags_for_resource(ResourceARN=a["AlarmArn"])["Tags"])
            for name, a in alarms(client).items()}
    dashboards = {d["DashboardName"]: client.get_dashboard(DashboardName=d["DashboardName"])["DashboardBody"]
                  for d in client.list_dashboards()["DashboardEntries"]}
    return live, dashboards


def default_desired():
    """What publishing the default settings writes: tests/support/built.default_desired (built once, copied for each
    call)."""
    from tests.support.built import default_desired as built_default_desired

    return built_default_desired()


def no_aws_credentials(monkeypatch, tmp_path):
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("GRAFANA_URL", raising=False)


TWO_CLUSTERS = PROJECT + "clusters:\n  - {name: gpu-cluster, region: us-east-1}\n  - {name: other, region: us-east-1}\n"
RETIRED_EDITED = "gpudash-other-gpu-temp-critical-critical"


def settled(apply, *args) -> None:
    """After publishing TWO_CLUSTERS: an apply (no --prune) of settings without cluster "other" records their
    objects as published with their one cluster (a changed cluster list is recorded), so that what a test's prune
    writes next is only its deletes."""
    code, report, stderr = apply(*args)
    assert code == 0 and report["failed"] == [], stderr


def other_cluster(name):
    return name.startswith("gpudash-other-")
