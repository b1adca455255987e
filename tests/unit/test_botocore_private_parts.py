"""The parts of botocore gpudash reads that botocore does not offer publicly (clients.cloudwatch._http_session): the
HTTP session a client sends through, and the `_content` of the answers it makes, by which an answer is read no further
than http.BODY_LIMIT. botocore has no public way to read an answer as it arrives (its before-send event gets the
request alone; it streams no JSON-protocol answer), so a botocore release that renames either must fail plainly,
before any request, never lose the bound silently nor fail as an internal error."""

from __future__ import annotations

import pytest

CLOSED = "http://127.0.0.1:9"  # nothing listens: a request sent would fail as "connection refused"


def _renamed(module: str, kind: str, attribute: str):
    """What makes each `kind` (a class of botocore's `module`) hold its `attribute` under another name, as a botocore
    release that renamed it would."""
    def rename(monkeypatch) -> None:
        import importlib

        cls = getattr(importlib.import_module(module), kind)
        made = cls.__init__

        def __init__(self, *args, **kwargs):
            made(self, *args, **kwargs)
            vars(self)[f"{attribute}_renamed"] = vars(self).pop(attribute)

        monkeypatch.setattr(cls, "__init__", __init__)
    return rename


@pytest.mark.parametrize("renamed, named", [
    (_renamed("botocore.endpoint", "Endpoint", "http_session"), "client._endpoint.http_session"),
    (_renamed("botocore.awsrequest", "AWSResponse", "_content"), "AWSResponse._content"),
], ids=["http_session", "_content"])
def test_a_botocore_without_the_parts_the_answer_bound_reads_fails_plainly_before_any_request(
        tmp_path, monkeypatch, cli, renamed, named):
    """botocore renames the private attribute gpudash sends through (or the answer's `_content` it fills): `plan` said
    "internal error: AttributeError: 'Endpoint' object has no attribute 'http_session'" (the bound on CloudWatch's
    answers lost with it, as any run). Now the client is refused when it is made: one message naming botocore's
    version, the part and what to install, exit 4 (gpudash cannot run as installed), no traceback, nothing sent."""
    from botocore import __version__ as botocore_version

    monkeypatch.chdir(tmp_path)
    for key, value in {"AWS_ENDPOINT_URL": CLOSED, "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
                       "AWS_SECRET_ACCESS_KEY": "secret", "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("GPUDASH_CONFIG", raising=False)
    renamed(monkeypatch)
    code, stdout, stderr = cli("plan", "--no-grafana")
    assert code == 4 and "Traceback" not in stderr and "internal error" not in stderr, stderr
    assert f"error: the installed botocore: botocore {botocore_version} has no {named}, which gpudash reads to stop " \
           "reading a CloudWatch answer at 64 MiB" in stderr, stderr
    assert f"fix: install an earlier botocore and boto3 (pip install 'botocore<{botocore_version}'" in stderr
    assert "refused" not in stderr and "reach" not in stderr  # nothing was sent to the closed port


def test_a_botocore_that_reads_an_answer_whole_though_asked_to_stream_it_fails_plainly(monkeypatch):
    """The bound works only where botocore's send leaves the answer unread when the request says stream_output (its
    URLLib3Session.send reads it at once otherwise). A release that read every answer whole (that flag renamed or
    ignored) lost the bound without a word: an answer without end took the machine's memory again. The first answer
    found read already is refused: one message naming botocore's version and what to install, exit 4."""
    from botocore import __version__ as botocore_version
    from botocore import httpsession

    from generator.clients.cloudwatch import BotocoreUnsupported, CloudWatch
    from tests.support.moto_server import FAKE_CREDENTIALS, shared_server

    server = shared_server()
    sends = httpsession.URLLib3Session.send

    def reads_whole(self, request):  # a botocore whose send no longer reads the flag
        request.stream_output = False
        return sends(self, request)

    monkeypatch.setattr(httpsession.URLLib3Session, "send", reads_whole)
    for key, value in FAKE_CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(BotocoreUnsupported) as refused:
        CloudWatch(endpoint_url=server.url, max_attempts=1).metric_alarms("us-east-1", prefix="gpudash-")
    said = str(refused.value)
    assert f"botocore {botocore_version} read a CloudWatch answer whole" in said, said
    assert refused.value.exit_code == 4 and "pip install 'botocore<" in (refused.value.hint or ""), refused.value.hint
