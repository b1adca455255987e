"""verify with a kubeconfig it cannot use: one line in the table's cell, and the fix that fits the mistake."""

from __future__ import annotations

import json

import pytest

KUBE_ONLY = ("verify", "--skip", "prometheus", "--skip", "exporter", "--skip", "cloudwatch", "--timeout", "5",
             "--output", "json")
GOOD = ('apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]\n'
        "contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {token: x}}]\n"
        "current-context: c\n")


def _kube_check(cli, tmp_path, text: str, *args: str) -> dict:
    (tmp_path / "kubeconfig").write_text(text)
    code, stdout, stderr = cli(*KUBE_ONLY, *args, env={"KUBECONFIG": str(tmp_path / "kubeconfig")})
    assert code == 1, stderr
    (check,) = json.loads(stdout)["checks"]
    return check


def test_a_kubeconfig_that_is_not_yaml_is_one_line_naming_file_and_line_and_no_context_fix(cli, tmp_path):
    check = _kube_check(cli, tmp_path, 'apiVersion: v1\nclusters:\n- name: c\n  cluster: {server: "http://x"\n'
                                       "contexts: []\n")
    assert check["detail"] == (f"the kubeconfig {tmp_path / 'kubeconfig'} is not valid YAML: expected ',' or '}}', "
                               f"but got '<scalar>' at line 5, column 1 (while parsing a flow mapping at line 4)")
    assert "\n" not in check["detail"] + check["fix"] and "--context" not in check["fix"]
    assert check["fix"].startswith("fix the file there")


@pytest.mark.parametrize("text, says", [("apiVersion: v1\nclusters: 5\n", "('int' object is not iterable)")])
def test_a_kubeconfig_shaped_wrong_is_one_line_and_points_at_the_file(cli, tmp_path, text, says):
    check = _kube_check(cli, tmp_path, text)
    assert check["detail"] == f"no usable kubeconfig {says}" and "--context" not in check["fix"]


@pytest.mark.parametrize("skipped", [("--skip", "exporter"), ("--skip", "kube")], ids=["kube", "exporter"])
def test_a_context_the_kubeconfig_does_not_name_is_a_usage_error_as_an_unknown_cluster_is(cli, tmp_path, skipped):
    """--context names what the command is to read, as --cluster does: one the kubeconfig (both files of KUBECONFIG,
    merged) does not name is exit 2 before anything is asked, naming the contexts there, whichever of the groups
    reading the cluster runs; it was a failed check, exit 1, where --cluster's mistake was exit 2."""
    (tmp_path / "kubeconfig").write_text(GOOD)
    (tmp_path / "other").write_text(GOOD.replace("name: c, context", "name: train-east, context"))
    kubeconfig = f"{tmp_path / 'kubeconfig'}:{tmp_path / 'other'}"
    code, stdout, stderr = cli("verify", "--skip", "prometheus", "--skip", "cloudwatch", *skipped, "--context",
                               "train-eats", env={"KUBECONFIG": kubeconfig})
    assert code == 2, stderr
    assert (f"error: --context train-eats: no such context in the kubeconfig "
            f"({tmp_path / 'kubeconfig'}, {tmp_path / 'other'}): c, train-east") in stderr
    assert "fix: did you mean 'train-east'? give --context one of the contexts `kubectl config get-contexts`" in stderr
    assert "Traceback" not in stderr and stdout == ""
    code, stdout, stderr = cli(*KUBE_ONLY, "--context", "train-east", env={"KUBECONFIG": kubeconfig})
    assert code == 1 and json.loads(stdout)["checks"][0]["name"] == "reachable", stderr  # named: the check runs


def test_an_expired_oidc_token_is_refreshed_through_its_issuer_and_the_cluster_read(reference, tmp_path):
    """A kubeconfig user of the oidc auth-provider whose id-token has expired: the client asks the issuer's token
    endpoint for a new one (requests-oauthlib's OAuth2Session) and reads the cluster with it. Run as the command
    runs, in a fresh process: the OAuth packages are imported only on this path."""
    import base64
    import os
    import subprocess
    import sys
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import yaml

    from tests.support.kube_server import TOKEN, KubeCluster, KubeTestServer

    asked = []

    class Issuer(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _answer(self, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802
            self._answer({"issuer": issuer_url, "token_endpoint": f"{issuer_url}/token"})

        def do_POST(self):  # noqa: N802
            asked.append(self.rfile.read(int(self.headers["Content-Length"])).decode())
            self._answer({"access_token": "a", "token_type": "Bearer", "expires_in": 3600, "id_token": TOKEN,
                          "refresh_token": "r2"})

    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    expired = ".".join([part({"alg": "none"}), part({"exp": 1_000_000, "sub": "me"}), "sig"])
    with ThreadingHTTPServer(("127.0.0.1", 0), Issuer) as issuer, KubeTestServer(KubeCluster(reference)) as kube:
        issuer_url = f"http://127.0.0.1:{issuer.server_address[1]}"
        threading.Thread(target=issuer.serve_forever, daemon=True).start()
        config = yaml.safe_load(kube.kubeconfig(tmp_path / "kubeconfig").read_text())
        config["users"][0]["user"] = {"auth-provider": {"name": "oidc", "config": {
            "client-id": "gpudash", "client-secret": "s", "id-token": expired, "refresh-token": "r1",
            "idp-issuer-url": issuer_url}}}
        (tmp_path / "kubeconfig").write_text(yaml.safe_dump(config))
        result = subprocess.run([sys.executable, "-c", "from generator.cli import run; run()", *KUBE_ONLY[:-3],
                                 "30", "--output", "json"],
                                env={**os.environ, "KUBECONFIG": str(tmp_path / "kubeconfig"),
                                     "OAUTHLIB_INSECURE_TRANSPORT": "1"},  # the test issuer speaks plain HTTP
                                capture_output=True, text=True, timeout=120)
        issuer.shutdown()
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert "refresh_token=r1" in asked[0] and "grant_type=refresh_token" in asked[0]
    assert checks["exporter DaemonSet"]["status"] == "ok", checks


@pytest.mark.parametrize("kubeconfig", ["", "missing-a:missing-b"], ids=["unset", "names-missing-files"])
def test_a_context_with_no_kubeconfig_at_all_is_a_usage_error_naming_where_it_was_looked_for(cli, tmp_path,
                                                                                              kubeconfig):
    """--context names a context of a kubeconfig; with no kubeconfig file there at all, no context can be it: exit 2
    before anything is asked, saying which files were looked for and how to get one (it was a failed check, exit 1)."""
    env = {"KUBECONFIG": ":".join(str(tmp_path / name) for name in kubeconfig.split(":") if name),
           "HOME": str(tmp_path)}
    code, stdout, stderr = cli("verify", "--skip", "prometheus", "--skip", "cloudwatch", "--context", "train-east",
                               env=env)
    assert code == 2, stderr
    said = (f"KUBECONFIG names {tmp_path / 'missing-a'}, {tmp_path / 'missing-b'}, which do not exist" if kubeconfig
            else f"KUBECONFIG is not set and {tmp_path / '.kube' / 'config'} does not exist")
    assert f"error: --context train-east: no kubeconfig to name it: {said}\n" in stderr
    assert "fix: " in stderr and "aws eks update-kubeconfig" in stderr
    assert "Traceback" not in stderr and stdout == ""
