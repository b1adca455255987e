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


def test_a_context_that_is_not_there_points_at_context(cli, tmp_path):
    check = _kube_check(cli, tmp_path, GOOD, "--context", "nope")
    assert "Expected object with name nope" in check["detail"] and check["fix"].startswith("give --context one of")
