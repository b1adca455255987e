"""A server that echoes the credentials it was sent (a proxy's error page, a hostile endpoint) cannot
make gpudash print them: every secret gpudash holds is masked in whatever it prints."""

from __future__ import annotations

import base64
import json

import pytest

from tests.support.canned_server import CannedServer

TOKEN, PASSWORD, AWS_SECRET = "glsa_marker_token_7731", "marker-password-7731", "markerAwsSecret7731"


def _echo(*secrets: str) -> str:
    return json.dumps({"message": "rejected: " + " ".join(secrets), "__type": "AccessDenied",
                       "status": "version-mismatch"})


@pytest.mark.parametrize("status", [400, 403, 404, 412, 422])
@pytest.mark.parametrize("args", [("push", "--skip-verify"), ("--debug", "push", "--skip-verify"),
                                  ("push", "--skip-verify", "--output", "json"), ("plan", "--no-cloudwatch"),
                                  ("plan", "--no-cloudwatch", "--output", "json")])
def test_grafana_echoing_the_token_or_password_does_not_print_them(cli, status, args, defaults_built_once):
    basic = base64.b64encode(f"admin:{PASSWORD}".encode()).decode()
    with CannedServer(_echo(TOKEN, PASSWORD, basic), status=status) as server:
        for env, secrets in (({"GRAFANA_URL": server.url, "GRAFANA_TOKEN": TOKEN}, (TOKEN,)),
                             ({"GRAFANA_URL": server.url, "GRAFANA_TOKEN": "", "GRAFANA_USER": "admin",
                               "GRAFANA_PASSWORD": PASSWORD}, (PASSWORD, basic))):
            code, stdout, stderr = cli(*args, env=env)
            assert code == 3 and "rejected" in stdout + stderr, stderr
            for secret in secrets:
                assert secret not in stdout + stderr, (args, secret, stdout + stderr)


@pytest.mark.parametrize("args", [("apply", "--skip-verify"), ("--debug", "apply", "--skip-verify"),
                                  ("plan", "--no-grafana", "--output", "json")])
def test_an_aws_endpoint_echoing_the_secret_key_does_not_print_it(cli, args, defaults_built_once):
    with CannedServer(_echo(AWS_SECRET), status=400, content_type="application/x-amz-json-1.0") as aws:
        env = {"AWS_ENDPOINT_URL": aws.url, "AWS_ACCESS_KEY_ID": "AKIAMARKER", "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
               "AWS_REGION": "us-east-1"}
        code, stdout, stderr = cli(*args, env=env)
        assert code == 3 and "rejected" in stderr, stderr
        assert AWS_SECRET not in stdout + stderr, stdout + stderr


def test_the_aws_access_key_id_an_endpoint_echoes_is_not_printed(cli, defaults_built_once):
    """The access key id is half of a credential: an endpoint echoing it (a signature error quotes it) does
    not get it printed."""
    key_id = "AKIAMARKER7731EXAMPLE"
    echo = json.dumps({"__type": "SignatureDoesNotMatch",
                       "message": f"Credential={key_id}/20261130/us-east-1/monitoring/aws4_request"})
    with CannedServer(echo, status=400, content_type="application/x-amz-json-1.0") as aws:
        env = {"AWS_ENDPOINT_URL": aws.url, "AWS_ACCESS_KEY_ID": key_id, "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
               "AWS_REGION": "us-east-1"}
        code, stdout, stderr = cli("apply", "--skip-verify", env=env)
        assert code == 3 and "Credential=***" in stderr, stderr
        assert key_id not in stdout + stderr


@pytest.mark.parametrize("args", [("push", "--skip-verify"), ("plan", "--no-cloudwatch", "--output", "json")])
def test_a_short_password_is_masked_where_it_stands_alone(cli, args, defaults_built_once):
    """A 5-character password echoed by Grafana is masked; the words around it are not garbled."""
    with CannedServer(json.dumps({"message": "user admin password hu7!x lacks permission"}), status=403) as server:
        env = {"GRAFANA_URL": server.url, "GRAFANA_TOKEN": "", "GRAFANA_USER": "admin", "GRAFANA_PASSWORD": "hu7!x"}
        code, stdout, stderr = cli(*args, env=env)
        assert code == 3 and "password *** lacks permission" in stdout + stderr, stdout + stderr
        assert "hu7!x" not in stdout + stderr


def test_a_token_in_what_grafana_reports_is_not_printed_by_plan(cli, reference, defaults_built_once):
    """Text taken from valid answers (who saved a version) is printed in plan's details: a credential in it
    is masked in the table and in JSON."""
    from tests.support.grafana_server import ADMIN, GrafanaTestServer

    with GrafanaTestServer(reference / "grafana" / "grafana-http-api.openapi.json") as grafana:
        env = {"GRAFANA_URL": grafana.url, "GRAFANA_TOKEN": ADMIN}
        assert cli("push", "--skip-verify", env=env)[0] == 0
        grafana.edit_in_ui("gpudash-overview", lambda d: d.update(description="x"), user=f"proxy token={ADMIN}")
        for output in ("table", "json"):
            code, stdout, stderr = cli("plan", "--no-cloudwatch", "--output", output, env=env)
            assert code == 1 and "changed in Grafana by proxy token=***" in stdout, stdout
            assert ADMIN not in stdout + stderr


def test_a_secret_with_quotes_and_backslashes_is_masked_in_plans_json(cli, reference, defaults_built_once):
    """JSON escapes `"`, `\\` and non-ASCII: masking must happen before, or the escaped secret prints whole;
    and a short password that is also a key name must not turn the report's keys into ***."""
    from tests.support.grafana_server import ADMIN, GrafanaTestServer

    secret = 'p\u00e4"ss\\word1'
    with GrafanaTestServer(reference / "grafana" / "grafana-http-api.openapi.json") as grafana:
        env = {"GRAFANA_URL": grafana.url, "GRAFANA_TOKEN": ADMIN}
        assert cli("push", "--skip-verify", env=env)[0] == 0
        grafana.edit_in_ui("gpudash-overview", lambda d: d.update(description="x"), user=f"proxy {secret}")
        code, stdout, _ = cli("plan", "--no-cloudwatch", "--output", "json",
                              env={**env, "GRAFANA_PASSWORD": secret, "GRAFANA_USER": "name"})
        report = json.loads(stdout)
        assert code == 1 and secret not in stdout and json.dumps(secret)[1:-1] not in stdout
        assert set(report) == {"changes", "summary", "skipped", "notes"} and all("name" in c for c in report["changes"])
        assert any("changed in Grafana by proxy ***" in d for c in report["changes"] for d in c["details"])


def test_a_secret_key_echoed_in_a_2xx_answer_that_is_not_json_is_not_printed_in_part(cli, defaults_built_once):
    """A 2xx answer that is not JSON is quoted by its first 40 bytes, and a secret cut there was masked nowhere: an
    endpoint echoing the 40-character secret key had 37 of its characters printed. The body is masked, then cut."""
    from tests.support.canned_server import CannedServer

    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # 40 characters, as AWS secret keys are
    with CannedServer(f"<p>{secret}</p>", status=200, content_type="text/html") as aws:
        env = {"AWS_ENDPOINT_URL": aws.url, "AWS_ACCESS_KEY_ID": "AKIAMARKER", "AWS_SECRET_ACCESS_KEY": secret,
               "AWS_REGION": "us-east-1"}
        code, stdout, stderr = cli("plan", "--no-grafana", env=env)
    assert code == 3 and "not JSON: '<p>***</p>'" in stderr, stderr
    assert secret[:20] not in stdout + stderr, stderr


def test_a_prometheus_password_echoed_in_an_answer_that_is_not_json_is_not_printed_in_part(cli):
    """verify quoted the first 40 characters of a Prometheus answer that is not JSON, cut before masking: a login
    page echoing the URL's password had its first 16 characters printed ('Pr0m-basic-auth-...'). Masked, then cut."""
    from tests.integration.test_verify_answers import ONLY
    from tests.support.verify_deadline import verify_json

    password = "Pr0m-basic-auth-passw0rd-7731"
    with CannedServer(f"<p>login failed for {password}</p>", status=200, content_type="text/html") as server:
        url = server.url.replace("http://", f"http://admin:{password}@")
        code, checks = verify_json(cli, *ONLY["prometheus"], "--prometheus-url", url)
    detail = checks[("prometheus", "DCGM targets")]["detail"]
    assert code == 1 and "login failed for ***" in detail, detail
    assert password[:8] not in json.dumps(list(checks.values())), detail


def test_a_kubeconfig_token_echoed_in_an_answer_that_is_not_json_is_not_printed_in_part(cli, tmp_path, monkeypatch):
    """verify quoted the first 40 characters of a Kubernetes API answer that is not JSON, cut before masking: an API
    server echoing the kubeconfig's token had its first 26 characters printed. Masked, then cut."""
    import yaml

    from tests.integration.test_verify_answers import ONLY
    from tests.support.verify_deadline import verify_json

    token = "kube-Bearer-token-7731-abcdefghijklmnop"
    with CannedServer(f"<p>denied {token}</p>", status=200, content_type="text/html") as server:
        config = {"apiVersion": "v1", "kind": "Config", "current-context": "t",
                  "clusters": [{"name": "c", "cluster": {"server": server.url}}],
                  "contexts": [{"name": "t", "context": {"cluster": "c", "user": "u"}}],
                  "users": [{"name": "u", "user": {"token": token}}]}
        (tmp_path / "kubeconfig").write_text(yaml.safe_dump(config))
        monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
        code, checks = verify_json(cli, *ONLY["kube"])
    details = json.dumps([c["detail"] for c in checks.values()])
    assert "<p>denied ***</p>" in details, details
    assert token[:10] not in details, details


def test_an_exporter_password_echoed_in_an_answer_that_is_not_exposition_is_not_printed_in_part(cli):
    """verify quoted the exposition parser's error (which quotes the line) cut at 300 characters before masking: an
    exporter page echoing the password of --exporter-url's user-info, where the cut fell inside it, had part of it
    printed. Masked, then cut."""
    from tests.integration.test_verify_answers import ONLY
    from tests.support.verify_deadline import verify_json

    password = "Exp0rter-basic-auth-passw0rd-7731"
    with CannedServer(" ".join(f"p{i}={password}" for i in range(12)) + "\n", status=200,
                      content_type="text/plain") as server:
        url = server.url.replace("http://", f"http://admin:{password}@") + "/metrics"
        code, checks = verify_json(cli, *ONLY["exporter"], "--exporter-url", url)
    detail = checks[("exporter", "metrics endpoint")]["detail"]
    assert "is not Prometheus exposition" in detail, detail
    assert password[:6] not in detail, detail


def test_a_password_echoed_in_a_json_string_where_an_object_is_due_is_not_printed_in_part(cli):
    """An odd JSON answer's value is quoted by its first 37 characters, cut before masking: Prometheus answering
    `data` with a text that echoes PROMETHEUS_URL's password had 17 of its characters printed. Masked, then cut."""
    from tests.integration.test_verify_answers import ONLY
    from tests.support.verify_deadline import verify_json

    password = "Pr0m-basic-auth-passw0rd-7731"
    body = json.dumps({"status": "success", "data": f"login failed for {password}"})
    with CannedServer(body, status=200) as server:
        url = server.url.replace("http://", f"http://admin:{password}@")
        code, checks = verify_json(cli, *ONLY["prometheus"], "--prometheus-url", url)
    details = json.dumps([c["detail"] for c in checks.values()])
    assert "data is 'login failed for ***', expected an object" in details, details
    assert password[:8] not in details, details


PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                   "NO_PROXY")


@pytest.mark.parametrize("target, variable, scheme", [("grafana", "HTTP_PROXY", "http://"),
                                                      ("grafana", "all_proxy", "http://"), ("aws", "HTTP_PROXY", "")])
def test_a_proxy_echoing_its_own_credentials_does_not_get_them_printed(cli, monkeypatch, defaults_built_once, target,
                                                                       variable, scheme):
    """The password of a proxy variable's user-info (HTTP_PROXY=http://user:password@proxy:3128; requests and botocore
    send it as a Proxy-Authorization header) was masked nowhere: a proxy answering 403 with a message quoting it and the
    header had both printed whole ("rejected: proxysecret7731 Basic cHVz..."). Every `*_proxy` variable's credentials
    are masked as GRAFANA_PASSWORD is, in either case of its name, and without its scheme (botocore reads it as
    http://)."""
    password = "proxysecret7731"
    header = base64.b64encode(f"puser:{password}".encode()).decode()
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    with CannedServer(_echo(password, "Basic", header), status=403,
                      content_type="application/json" if target == "grafana" else "application/x-amz-json-1.0") as proxy:
        env = {variable: f"{scheme}puser:{password}@{proxy.address}"}
        if target == "grafana":
            env.update(GRAFANA_URL="http://grafana.example:3000", GRAFANA_TOKEN=TOKEN)
            args = ("push", "--skip-verify")
        else:
            env.update(AWS_ENDPOINT_URL="http://monitoring.example:4566", AWS_ACCESS_KEY_ID="AKIAMARKER",
                       AWS_SECRET_ACCESS_KEY=AWS_SECRET, AWS_REGION="us-east-1")
            args = ("apply", "--skip-verify")
        code, stdout, stderr = cli(*args, env=env)
        sent = [headers.get("Proxy-Authorization") for _, _, headers in proxy.requests]
    assert f"Basic {header}" in sent, sent  # the request went through the proxy, with its credentials
    assert code == 3 and "rejected: *** Basic ***" in stdout + stderr, stdout + stderr
    assert password not in stdout + stderr and header not in stdout + stderr


@pytest.mark.parametrize("scheme", ["", "http://"])
def test_a_service_endpoint_variables_password_is_not_printed(cli, monkeypatch, defaults_built_once, scheme, tmp_path):
    """A service's own endpoint variable (AWS_ENDPOINT_URL_<SERVICE>, which botocore reads beside AWS_ENDPOINT_URL)
    with user-info: botocore refuses one without a scheme, or with a space in its host, while it makes the client
    ('Invalid endpoint: user:password@host'), and apply printed the value whole in 'the AWS configuration cannot be
    used'. Its password is masked as AWS_ENDPOINT_URL's is."""
    monkeypatch.chdir(tmp_path)
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_CLOUDWATCH", "AWS_ENDPOINT_URL_RESOURCE_GROUPS_TAGGING_API"):
        monkeypatch.delenv(name, raising=False)
    password = "endpointsecret7731"
    env = {"AWS_ENDPOINT_URL_CLOUDWATCH": f"{scheme}euser:{password}@local host:4566", "AWS_ACCESS_KEY_ID": "AKIAMARKER",
           "AWS_SECRET_ACCESS_KEY": AWS_SECRET, "AWS_REGION": "us-east-1", "AWS_CONFIG_FILE": "absent",
           "AWS_SHARED_CREDENTIALS_FILE": "absent"}
    code, stdout, stderr = cli("apply", "--dry-run", "--skip-verify", env=env)
    assert code == 2 and "Traceback" not in stderr, stdout + stderr
    assert "the AWS configuration cannot be used" in stdout + stderr, stdout + stderr
    assert password not in stdout + stderr, stdout + stderr
