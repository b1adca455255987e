"""What a command says when it fails: to a machine reading `--output json`, and to a person."""

from __future__ import annotations

import json

import pytest

from generator.cli_base import main

JSON_COMMANDS = sorted(name for name in main.list_commands(None)
                       if any(p.name == "output" for p in main.get_command(None, name).params))
EXTRA = {"cost": ("--pods", "1"), "preview": ("--sample",)}


def test_every_command_with_json_output_is_checked():
    assert JSON_COMMANDS == ["apply", "cost", "generate", "lint", "metrics", "plan", "preview", "push", "verify"]


@pytest.mark.parametrize("name", JSON_COMMANDS)
def test_an_input_error_prints_one_json_object_with_what_where_and_fix(tmp_path, monkeypatch, cli, name):
    monkeypatch.chdir(tmp_path)
    code, stdout, stderr = cli(name, "--config", "missing.yaml", *EXTRA.get(name, ()), "--output", "json",
                               env={"GPUDASH_CONFIG": None})
    assert code == 2
    error = json.loads(stdout)["error"]  # the whole of stdout is one JSON document
    assert error["exit_code"] == 2 and "missing.yaml" in f"{error['where']} {error['what']}" and error["fix"]
    assert stderr.count("error: ") == 1 and "missing.yaml" in stderr  # still said to a person


@pytest.mark.parametrize("args, option", [(("cost", "--output=json"), "--pods"),
                                          (("cost", "--pods", "3", "--nodes", "9", "--output", "json"), "--nodes"),
                                          (("lint", "--output", "json", "--disable", "XX9"), "--disable")])
def test_a_usage_error_prints_one_json_object_naming_the_option(tmp_path, monkeypatch, cli, args, option):
    monkeypatch.chdir(tmp_path)
    code, stdout, stderr = cli(*args)
    assert code == 2
    assert json.loads(stdout)["error"]["where"] == option and "Usage:" in stderr


def test_the_last_output_option_decides(tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)
    code, stdout, stderr = cli("metrics", "--config", "missing.yaml", "--output", "json", "--output", "table")
    assert code == 2 and stdout == "" and "missing.yaml" in stderr
