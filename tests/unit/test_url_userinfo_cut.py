"""An address whose password holds `#` or `?` as typed (not percent-encoded): a URL parser reads the address as
ending there, so the part of the password before it looked like a port or a host. No part of the password may be
printed, and the message says what to write."""

from __future__ import annotations

import pytest

CASES = [
    ("GRAFANA_URL", "https://admin:1234#et99@grafana.example", ("plan", "--no-cloudwatch"), ("1234", "et99")),
    ("GRAFANA_URL", "https://admin:s3cr#et99@grafana.example/grafana", ("plan", "--no-cloudwatch"), ("s3cr", "et99")),
    ("PROMETHEUS_URL", "http://u:9876?zz@prom:9090", ("verify",), ("9876", "zz@")),
    ("AWS_ENDPOINT_URL", "http://k:5555#zz@localhost:4566", ("apply", "--dry-run", "--skip-verify"), ("5555", "zz@")),
]


@pytest.mark.parametrize("name, url, args, parts", CASES, ids=[f"{c[0]} {c[1]}" for c in CASES])
def test_a_password_cut_at_hash_or_question_mark_is_not_shown(name, url, args, parts, tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)
    env = {"GRAFANA_URL": "http://127.0.0.1:9", "GRAFANA_TOKEN": "glsa_abcdefghijkl", "PROMETHEUS_URL": None,
           "AWS_ENDPOINT_URL": None, name: url}
    code, stdout, stderr = cli(*args, env=env)
    said = stdout + stderr
    assert code == 2, said
    assert "Traceback" not in said
    for part in parts:
        assert part not in said
    assert f"{name}: " in said and "'#' or '?'" in said and "%23" in said and "%3F" in said
