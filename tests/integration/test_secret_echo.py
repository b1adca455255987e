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
def test_grafana_echoing_the_token_or_password_does_not_print_them(cli, status, args):
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
def test_an_aws_endpoint_echoing_the_secret_key_does_not_print_it(cli, args):
    with CannedServer(_echo(AWS_SECRET), status=400, content_type="application/x-amz-json-1.0") as aws:
        env = {"AWS_ENDPOINT_URL": aws.url, "AWS_ACCESS_KEY_ID": "AKIAMARKER", "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
               "AWS_REGION": "us-east-1"}
        code, stdout, stderr = cli(*args, env=env)
        assert code == 3 and "rejected" in stderr, stderr
        assert AWS_SECRET not in stdout + stderr, stdout + stderr
