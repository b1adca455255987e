"""What a command says when it fails: to a machine reading `--output json`, and to a person."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from generator.cli_base import main
from tests.support import documentation

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


# --- pattern-checked settings say what they take in words ------------------------------------------------------

def _patterns(node, path=()):
    """(setting path, schema node) of every pattern-checked value in the settings schema."""
    if isinstance(node, dict):
        if "pattern" in node:
            yield ".".join(path), node
        for key, child in node.items():
            yield from _patterns(child, path if key == "properties" else (*path, key))


SCHEMA = json.loads((Path(__file__).parents[2] / "schemas/config.schema.json").read_text())
PATTERNS = dict(_patterns(SCHEMA))
BAD = "Bad Value!"
BAD_FOR = {"clusters.items.prometheus_label": 'Bad "Value"'}  # settings whose pattern takes BAD: a value it refuses


def _document(path: str, full: str = "") -> dict:
    """A settings document whose value at `path` is BAD, or BAD_FOR's value (lists and the $defs reached through
    their settings)."""
    special = {"clusters.items.name": {"clusters": [{"name": BAD, "region": "us-east-1"}]},
               "clusters.items.region": {"clusters": [{"name": "a", "region": BAD}]},
               "$defs.daemonset": {"exporter": {"daemonset": BAD}},
               "$defs.more_daemonsets.items": {"exporter": {"more_daemonsets": [BAD]}}}
    if path in special:
        return special[path]
    if path.startswith("clusters.items."):  # a cluster's own setting: in a cluster that has a name and Region
        return {"clusters": [{"name": "a", "region": "us-east-1", **_document(path.removeprefix("clusters.items."), path)}]}
    value = BAD_FOR.get(full or path, BAD)
    for part in reversed(path.split(".")):
        value = [value] if part == "items" else {part: value}
    return value


def test_every_pattern_checked_setting_has_words_its_examples_fit():
    assert len(PATTERNS) >= 27  # one added later needs its words too
    for path, node in PATTERNS.items():
        words = node.get("patternErrorMessage")
        assert words and node["pattern"] not in words, path
        for example in [e for e in (*node.get("examples", ()), node.get("default")) if isinstance(e, str)][:1]:
            assert re.search(node["pattern"], example) and example in words, (path, example, words)


@pytest.mark.parametrize("path", sorted(set(PATTERNS) - {"cloudwatch.namespace"}))  # that one has its own words
def test_a_value_a_pattern_refuses_is_told_in_words_not_as_the_regex(tmp_path, path):
    import yaml

    from generator.errors import InputError
    from generator.settings import parse_settings

    with pytest.raises(InputError) as refused:
        parse_settings(yaml.safe_dump(_document(path)), "s.yaml", tmp_path)
    words, pattern = PATTERNS[path]["patternErrorMessage"], PATTERNS[path]["pattern"]
    bad = BAD_FOR.get(path, BAD)
    assert f"{bad!r} is not {words}" in refused.value.what and refused.value.hint == f"write {words}"
    assert pattern not in str(refused.value)


# --- Ctrl-C before the command runs ------------------------------------------------------------------------------

INTERRUPT_WHEN_IMPORTED = """
import importlib.abc, os, signal, sys

# Ctrl-C as a terminal delivers it: a suite started as a background job hands its children SIGINT ignored
signal.signal(signal.SIGINT, signal.default_int_handler)

class Interrupt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while this module is being imported
        return None

sys.meta_path.insert(0, Interrupt())
sys.argv = ["gpudash", "generate", "--out", "build"]
from {entry_module} import {entry_function}
sys.exit({entry_function}())
"""


@pytest.mark.parametrize("module", ["click", "generator.cli_base", "generator.output"])
def test_ctrl_c_while_the_command_is_imported_exits_130_without_a_traceback(tmp_path, module):
    """The console script as pyproject.toml declares it, Ctrl-C arriving while the command's modules are imported
    (the first ~0.1-0.35 s of every run): one line and exit 130, as Ctrl-C anywhere else."""
    import os
    import subprocess
    import sys
    import tomllib

    root = Path(__file__).parents[2]
    entry = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]["gpudash"]
    entry_module, entry_function = entry.split(":")
    code = INTERRUPT_WHEN_IMPORTED.format(module=module, entry_module=entry_module, entry_function=entry_function)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 130 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == "error: interrupted (Ctrl-C); nothing after this point was done"
    assert not (tmp_path / "build").exists()


def test_ctrl_c_while_click_reads_the_command_line_exits_130_not_aborted_1(monkeypatch, capsys):
    import click

    from generator.cli_base import main

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(click.Group, "parse_args", interrupted)
    with pytest.raises(SystemExit) as stopped:
        main.main(["metrics"], prog_name="gpudash")
    assert stopped.value.code == 130 and "Aborted!" not in capsys.readouterr().err


def test_gpudash_alone_prints_the_help_on_stderr_and_exits_2_as_the_documentation_says(cli):
    commands = " ".join(documentation.text("commands.md").split())
    assert "`gpudash` with no command, which prints the help on stderr" in commands
    code, stdout, stderr = cli()
    assert code == 2 and stdout == "" and "Usage:" in stderr and "Commands:" in stderr
    code, stdout, stderr = cli("--help")
    assert code == 0 and "Commands:" in stdout


def test_a_bug_says_how_to_run_the_same_command_with_its_traceback(tmp_path, monkeypatch, cli):
    """`--debug` goes before the command: the fix of an internal error writes it so, and written after the command it
    is a usage error saying where it goes (a user reads "run again with --debug" and types `gpudash metrics --debug`)."""
    import generator.catalog

    def broken(*_):
        raise ValueError("a bug")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(generator.catalog, "load_counters", broken)
    code, _, stderr = cli("metrics", env={"GPUDASH_CONFIG": None})
    assert code == 4 and "internal error: ValueError: a bug" in stderr
    assert "run again as `gpudash --debug metrics ...` and report it" in stderr, stderr
    code, _, stderr = cli("metrics", "--debug", env={"GPUDASH_CONFIG": None})
    assert code == 2 and "--debug after the command; it belongs before it: gpudash --debug metrics ..." in stderr
    code, _, stderr = cli("--debug", "metrics", env={"GPUDASH_CONFIG": None})
    assert code == 4 and "Traceback" in stderr and "ValueError: a bug" in stderr


def test_plan_s_help_says_its_build_is_compared_not_published(cli):
    """plan writes nothing: its --from is the build it compares with what is live (the help said it published it,
    the words push's and apply's --from share)."""
    code, stdout, _ = cli("plan", "--help")
    said = " ".join(stdout.split())
    assert code == 0 and "--from DIR Compare this build (its manifest is checked) with what is live" in said
    assert "Publish this build" not in said
    for command in ("push", "apply"):
        assert "--from DIR Publish this build" in " ".join(cli(command, "--help")[1].split())
