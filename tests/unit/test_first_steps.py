"""What a new user meets first: which settings file is read, the first definitions, init-config,
lint of what ships, the --check hint, and the words the product uses."""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from pathlib import Path

import pytest

from generator.settings import discover
from tests.conftest import REPO
from tests.support import documentation

BROKEN = "labels:\n  pod: nobody\n"  # a distinctive error: whoever reads this file fails on line 2

COMMANDS = [
    ("generate", "--out", "build"),
    ("generate", "--check"),
    ("lint",),
    ("metrics",),
    ("cost", "--pods", "10"),
    ("plan", "--no-grafana", "--no-cloudwatch"),
    ("push", "--skip-verify"),
    ("apply", "--skip-verify"),
    ("verify",),
]


@pytest.fixture
def in_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GPUDASH_CONFIG", raising=False)
    return tmp_path


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a))
def test_every_command_reads_the_local_gpudash_yaml(in_folder, cli, args):
    (in_folder / "gpudash.yaml").write_text(BROKEN)
    code, _, stderr = cli(*args)
    assert code == 2 and "error: gpudash.yaml:2: labels.pod" in stderr, stderr


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a))
def test_every_command_prefers_gpudash_config_then_the_flag(in_folder, cli, args):
    (in_folder / "gpudash.yaml").write_text("")
    (in_folder / "team.yaml").write_text(BROKEN)
    (in_folder / "flag.yaml").write_text("\n" + BROKEN)
    code, _, stderr = cli(*args, env={"GPUDASH_CONFIG": "team.yaml"})
    assert code == 2 and "error: team.yaml:2: labels.pod" in stderr, stderr
    code, _, stderr = cli(*args, "--config", "flag.yaml", env={"GPUDASH_CONFIG": "team.yaml"})
    assert code == 2 and "error: flag.yaml:3: labels.pod" in stderr, stderr


def test_the_command_says_which_settings_it_used(in_folder, cli):
    code, _, stderr = cli("generate", "--out", "build")
    assert code == 0 and "settings: the bundled defaults (no --config, no GPUDASH_CONFIG, no ./gpudash.yaml)" in stderr
    code, _, stderr = cli("init-config")
    assert code == 0
    (in_folder / "gpudash.yaml").write_text((in_folder / "gpudash.yaml").read_text().replace(
        "name: gpu-cluster", "name: renamed"))
    code, stdout, stderr = cli("generate", "--out", "build")
    assert code == 0 and "settings: gpudash.yaml (found in the current folder)" in stderr
    assert any("renamed" in p.name for p in (in_folder / "build" / "cloudwatch" / "dashboards").iterdir())
    code, _, stderr = cli("lint", env={"GPUDASH_CONFIG": "gpudash.yaml"})
    assert "settings: gpudash.yaml (GPUDASH_CONFIG)" in stderr


def test_a_command_run_in_a_subfolder_says_the_settings_above_are_not_read(in_folder, cli, monkeypatch):
    """From a project's definitions folder, `gpudash generate` reads the bundled defaults (another fleet's: a cluster
    named gpu-cluster), and `apply` would publish them: the settings line names the file above and how to read it."""
    (in_folder / "gpudash.yaml").write_text("clusters:\n  - name: train-east\n    region: us-east-1\n")
    (in_folder / "mine" / "deeper").mkdir(parents=True)
    for folder, above in (("mine", "../gpudash.yaml"), ("mine/deeper", "../../gpudash.yaml")):
        monkeypatch.chdir(in_folder / folder)
        code, _, stderr = cli("metrics", "--output", "json")
        assert code == 0
        assert (f"settings: the bundled defaults (no --config, no GPUDASH_CONFIG, no ./gpudash.yaml; {above}, in a "
                f"folder above, is not read: pass --config {above} or run from its folder)") in stderr, stderr


def test_discovery_order(tmp_path):
    assert discover(None, {}, tmp_path).path is None
    (tmp_path / "gpudash.yaml").write_text("")
    assert discover(None, {}, tmp_path).path == tmp_path / "gpudash.yaml"
    assert discover(None, {"GPUDASH_CONFIG": "env.yaml"}, tmp_path).path == Path("env.yaml")
    assert discover(Path("flag.yaml"), {"GPUDASH_CONFIG": "env.yaml"}, tmp_path).path == Path("flag.yaml")


def test_init_config_in_a_new_folder_creates_it_and_says_how_to_use_it(in_folder, cli):
    code, stdout, stderr = cli("init-config", "sub/dir/x.yaml")
    assert code == 0, stderr
    assert (in_folder / "sub/dir/x.yaml").read_text().startswith("# gpudash settings")
    # the variable outlives a cd, so it names the file wherever the user goes next
    assert "--config sub/dir/x.yaml" in stdout and f"GPUDASH_CONFIG={in_folder / 'sub/dir/x.yaml'}" in stdout
    code, _, stderr = cli("generate", "--out", "build", "--config", "sub/dir/x.yaml")
    assert code == 0, stderr


@pytest.mark.parametrize("given", ["conf", "conf/", "new/"])
def test_init_config_into_a_folder_writes_gpudash_yaml_there(in_folder, cli, given):
    (in_folder / "conf").mkdir()
    code, stdout, stderr = cli("init-config", given)
    assert code == 0, stderr
    written = in_folder / given.rstrip("/") / "gpudash.yaml"
    assert written.read_text().startswith("# gpudash settings")
    assert f"--config {given.rstrip('/')}/gpudash.yaml" in stdout


def test_init_config_dash_prints_the_default_and_writes_nothing(in_folder, cli):
    code, stdout, _ = cli("init-config", "-")
    assert code == 0 and stdout.startswith("# gpudash settings")
    assert list(in_folder.iterdir()) == []


def test_a_single_definitions_folder_is_accepted(in_folder, cli):
    (in_folder / "boards").mkdir()
    (in_folder / "boards" / "mine.py").write_text(
        "from generator.model import Dashboard, Row\nfrom generator.panels import per_pod\n\n"
        "dashboard = Dashboard('mine', 'Mine', [Row('r', [per_pod('DCGM_FI_DEV_GPU_UTIL', 'Util')])])\n")
    (in_folder / "gpudash.yaml").write_text("definitions: {dashboards: boards}\n")
    code, stdout, stderr = cli("generate", "--out", "build")
    assert code == 0, stderr
    assert sorted(p.name for p in (in_folder / "build" / "grafana").glob("*.json")) == ["gpudash-mine.json"]
    assert stdout.rstrip().endswith("files to build (1 Grafana dashboard)"), stdout


@pytest.mark.parametrize("text, fix", [
    ("definitions: {dashboards: 5}\n", "write a list ([a, b]) or text or null, e.g. dashboards"),
    ("clusters:\n  - {name: a}\n", "add `region:`"),
    ("labels: {pod: p}\n", "write one of: pod, exported_pod"),
    ("grafana: {refresh: soon}\n", "write a whole number above 0 and one unit (s, m, h or d), such as 30s, 1m or 1h"),
    ("thresholds: {idle_minutes: 1}\n", "write a number at least 5 and at most 180, a multiple of 5, e.g. 30"),
    ("thresholds: {idle_minutes: 7}\n", "write a multiple of 5, e.g. 30"),
    ("scrape: {interval: 30}\n", "write text, e.g. 30s"),
    ("grafan: {}\n", "did you mean 'grafana'? remove 'grafan'"),
    # a value where a mapping or list goes: the fix shows the form, not only its kind
    ("thresholds:\n  gpu_temp_celsius: 85\n", "write a mapping (key: value lines), e.g. {warning: 80, critical: 90}"),
    ("clusters:\n  - train-east\n", "write a mapping (key: value lines), e.g. {name: train-east, region: us-east-1}"),
    ("grafana:\n  folder: GPUs\n", "write a mapping (key: value lines), e.g. {uid: gpudash, title: GPU monitoring}"),
    ("clusters: []\n", "write a list of at least 1 item, e.g. [{name: gpu-cluster, region: us-east-1}]"),
])
def test_schema_errors_say_what_to_write_instead(in_folder, cli, text, fix):
    (in_folder / "gpudash.yaml").write_text(text)
    code, _, stderr = cli("generate", "--out", "build")
    assert code == 2 and f"\n  fix: {fix}" in stderr, stderr


def test_the_settings_read_are_said_before_a_definition_or_csv_mistake(in_folder, cli):
    """Which settings were read (and so which definitions folder and CSV) is said also when what they name fails."""
    (in_folder / "dashboards").mkdir()
    (in_folder / "dashboards" / "mine.py").write_text("def dashboards(ctx):\n    return {}['x']\n")
    (in_folder / "gpudash.yaml").write_text("definitions:\n  dashboards: dashboards\n")
    code, _, stderr = cli("generate", "--out", "build")
    assert code == 2 and stderr.startswith("settings: gpudash.yaml (found in the current folder)\nerror: "), stderr
    (in_folder / "gpudash.yaml").write_text("counters: nowhere.csv\n")
    code, _, stderr = cli("lint")
    assert code == 2 and stderr.startswith("settings: gpudash.yaml (found in the current folder)\nerror: "), stderr


def test_a_region_typo_is_warned_of_with_its_line_and_the_region_meant(in_folder, cli):
    """`us-wst-2` has the shape of a Region, so the schema takes it: generate warns (publishing could not reach it)
    and names the Region meant; a Region boto3 knows is not warned of."""
    (in_folder / "gpudash.yaml").write_text("clusters:\n  - name: a\n    region: us-east-1\n"
                                            "  - name: b\n    region: us-wst-2\n")
    code, _, stderr = cli("generate", "--out", "build")
    assert code == 0, stderr
    assert ("warning: gpudash.yaml:5: clusters.1.region: 'us-wst-2' is no AWS Region the installed boto3 knows: "
            "publishing cannot reach it\n  fix: did you mean us-west-2?") in stderr, stderr
    assert "clusters.0.region" not in stderr


def test_a_former_region_typo_is_warned_of_as_a_settings_region_is(in_folder, cli):
    """`--former-region us-eats-1` has a Region's shape: it was read, and the run ended in the endpoint's failure
    (exit 3) without a word of the typo; now warned of, naming the Region meant."""
    code, _, stderr = cli("plan", "--no-grafana", "--no-cloudwatch", "--former-region", "us-eats-1",
                          "--former-region", "us-west-2")
    assert ("warning: --former-region us-eats-1: no AWS Region the installed boto3 knows: reading it will fail\n"
            "  fix: did you mean us-east-1?") in stderr, stderr
    assert "us-west-2:" not in stderr


TYPO_PANEL = """from generator.model import Dashboard, Row
from generator.panels import per_pod


def dashboards(ctx):
    panels = ctx.available([
        per_pod("DCGM_FI_DEV_GPU_UTIL", "Utilization"),
        per_pod("DCGM_FI_DEV_GPU_TEMP", "Temperature"),
    ])
    return [Dashboard("training", "Training", [Row("GPU", panels)])]
"""


def _typo_project(in_folder, folder: str = "dashboards") -> None:
    """TYPO_PANEL's dashboard in `folder`, with a counters CSV that collects GPU_UTIL only."""
    (in_folder / folder).mkdir(parents=True)
    (in_folder / folder / "training.py").write_text(TYPO_PANEL)
    (in_folder / "counters.csv").write_text("DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).\n")
    (in_folder / "gpudash.yaml").write_text(f"counters: counters.csv\ndefinitions: {{dashboards: '{folder}'}}\n")


def test_a_field_the_csv_does_not_collect_is_left_out_with_a_note_counted_by_lint(in_folder, cli):
    _typo_project(in_folder)
    code, _, stderr = cli("generate", "--out", "build")
    assert code == 0, stderr
    assert "note: 1 panel(s) left out" in stderr
    model = json.loads((in_folder / "build/grafana/gpudash-training.json").read_text())
    assert [p["title"] for p in model["panels"] if p["type"] != "row"] == ["Utilization"]
    code, stdout, _ = cli("lint", "--output", "json")
    report = json.loads(stdout)
    notes = [f for f in report["findings"] if f["rule"] == "DF001" and f["message"].startswith("panel ")]
    blanks = [f for f in report["findings"] if f["rule"] == "AL010"]  # the default alarms, each noted once
    # the default alarms on fields this CSV lacks are noted too (DF001, `alarm ...`), one each
    alarms = [f for f in report["findings"] if f["rule"] == "DF001" and f["message"].startswith("alarm ")]
    assert len(alarms) == 7 and all(f["where"].startswith("alarms/gpu_alarms.py:") for f in alarms)
    # no rule without a CloudWatch alarm (AL027): on the OTel pipeline the GPU stopped reporting rule's counts a node's
    # GPUs by the first presence field the CSV collects
    prometheus_only = [f for f in report["findings"] if f["rule"] == "AL027"]
    assert not prometheus_only
    assert report["notes"] == 1 + len(alarms) + len(blanks) + len(prometheus_only) and len(notes) == 1 and \
        notes[0]["where"].endswith("training.py:8")
    assert "DCGM_FI_DEV_GPU_TEMP" in notes[0]["message"]
    # the JSON counts what the table's last line counts ("0 errors, 0 warnings, 12 notes")
    assert report["errors"] + report["warnings"] + report["notes"] == len(report["findings"])


def test_a_definition_error_names_its_file_as_lint_s_df001_does(in_folder, cli):
    """One form for a definition file in every message: `folder/file.py:line`, whether a panel left out (DF001)
    or a definition that fails (it was the absolute path there), wherever gpudash is run from."""
    _typo_project(in_folder, "config/boards")
    code, stdout, _ = cli("lint", "--output", "json")
    (note,) = [f for f in json.loads(stdout)["findings"] if f["rule"] == "DF001" and f["message"].startswith("panel ")]
    (in_folder / "config/boards/training.py").write_text(TYPO_PANEL + "raise ValueError('broken')\n")
    code, _, stderr = cli("generate", "--out", "build")
    assert code == 2 and note["where"] == "boards/training.py:8", note
    assert f"error: boards/training.py:{len(TYPO_PANEL.splitlines()) + 1}: the definition raised ValueError" in stderr
    assert str(in_folder) not in stderr, stderr


def test_lint_from_judges_the_build_not_the_definitions_or_csv_changed_since(in_folder, cli):
    """What a build left out travels in its manifest: once the definition no longer asks for the field,
    `lint` finds nothing left out, while `lint --from` still notes the panel the build was made without.
    A counters CSV changed since the build is refused: the build's fields would be judged by another CSV."""
    _typo_project(in_folder)
    assert cli("generate", "--out", "build")[0] == 0
    (in_folder / "dashboards" / "training.py").write_text(
        TYPO_PANEL.replace('        per_pod("DCGM_FI_DEV_GPU_TEMP", "Temperature"),\n', ""))

    def left_out(*args):
        code, stdout, stderr = cli("lint", *args, "--output", "json")
        assert code == 0, stderr
        return [(f["where"], f["message"]) for f in json.loads(stdout)["findings"]
                if f["rule"] == "DF001" and f["message"].startswith("panel ")]

    assert left_out() == []
    assert left_out("--from", "build") == [
        ("dashboards/training.py:8", "panel 'Temperature' left out: the counters CSV does not collect "
                                     "DCGM_FI_DEV_GPU_TEMP")]
    with (in_folder / "counters.csv").open("a") as csv:
        csv.write("DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n")
    code, stdout, stderr = cli("lint", "--from", "build")
    assert code == 2 and stdout == "", stdout
    assert "error: build: this build was made from another counters CSV than " in stderr, stderr
    assert "counters.csv (sha256 " in stderr
    assert "fix: pass --csv with the CSV the build was made from, or generate the build again" in stderr


def test_a_typo_inside_ctx_available_is_an_error_lint_reports_too(in_folder, cli):
    (in_folder / "dashboards").mkdir()
    (in_folder / "dashboards" / "training.py").write_text(TYPO_PANEL.replace("GPU_TEMP", "GPU_UTILISATION"))
    (in_folder / "gpudash.yaml").write_text("definitions: {dashboards: dashboards}\n")
    for command in (("generate", "--out", "build"), ("lint",)):
        code, _, stderr = cli(*command)
        assert code == 2, stderr
        assert "training.py:8: unknown metric DCGM_FI_DEV_GPU_UTILISATION" in stderr


def test_lint_disable_takes_known_rules_only(in_folder, cli):
    code, _, stderr = cli("lint", "--disable", "GF999")
    assert code == 2 and "no rule GF999" in stderr
    code, stdout, _ = cli("lint", "--disable", "gf003", "--disable", "DF001")
    assert code == 0, stdout


def _rewrite(build: Path, relative: str, change) -> None:
    path = build / relative
    path.write_bytes(change(path.read_bytes()))
    manifest = json.loads((build / "manifest.json").read_text())
    manifest["files"][relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    (build / "manifest.json").write_text(json.dumps(manifest))


def test_lint_from_lints_what_ships(in_folder, cli):
    assert cli("generate", "--out", "build")[0] == 0
    code, stdout, _ = cli("lint", "--from", "build")
    assert code == 0, stdout
    # the file on disk is what counts: an edit that keeps the manifest in step is linted as it is
    _rewrite(in_folder / "build", "grafana/gpudash-overview.json",
             lambda data: data.replace(b"$__rate_interval", b"5m").replace(b'"${datasource}"', b'"prom-1"'))
    code, stdout, _ = cli("lint", "--from", "build")
    assert code == 1, stdout
    assert "GF005 error: grafana/gpudash-overview.json" in stdout
    assert cli("lint")[0] == 0  # re-rendering would have missed it
    # a damaged file that no longer matches the manifest fails outright
    (in_folder / "build/grafana/gpudash-by-pod.json").write_text("{")
    code, _, stderr = cli("lint", "--from", "build")
    assert code == 2 and "gpudash-by-pod.json differs from the manifest" in stderr


def test_generate_check_suggests_the_users_own_command(in_folder, cli):
    (in_folder / "conf").mkdir()
    (in_folder / "conf" / "my settings.yaml").write_text("")
    code, stdout, _ = cli("generate", "--check", "--config", "conf/my settings.yaml", "--out", "site/out")
    assert code == 1
    assert "run `gpudash generate --config 'conf/my settings.yaml' --out site/out` and commit the result" in stdout
    code, stdout, _ = cli("generate", "--check")
    assert "run `gpudash generate` and commit the result" in stdout


def test_cost_speaks_to_its_user(in_folder, cli):
    for output in ("table", "json"):
        code, stdout, _ = cli("cost", "--pods", "100", "--output", output)
        assert code == 0
        assert "brief" not in stdout.lower() and "product" not in stdout.lower()


def test_the_license_is_an_spdx_string():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"


def test_every_reliability_promise_names_tests_that_exist():
    section = documentation.text("reliability.md")
    rows = [line for line in section.splitlines() if line.startswith("| ") and "`tests/" in line]
    assert len(rows) >= 10
    for row in rows:
        path = None
        for reference in re.findall(r"`([^`]+)`", row.rsplit("|", 2)[1]):
            file_part, _, name = reference.partition("::")
            if file_part:
                path = REPO / file_part
                assert path.is_file(), reference
            if name:
                assert re.search(rf"^def {re.escape(name)}\(", path.read_text(), re.M), reference


def test_lint_from_judges_a_build_by_the_settings_it_was_made_with(in_folder, cli):
    (in_folder / "exported.yaml").write_text("labels:\n  pod: exported_pod\n  namespace: exported_namespace\n")
    assert cli("generate", "--config", "exported.yaml", "--out", "build")[0] == 0
    manifest = json.loads((in_folder / "build/manifest.json").read_text())
    assert manifest["settings"]["bundled"] is False and len(manifest["settings"]["sha256"]) == 64
    # other settings (here the defaults: another label mapping) would find false errors: one clear message
    code, stdout, stderr = cli("lint", "--from", "build")
    assert code == 2 and stdout == "" and "PR001" not in stdout + stderr
    assert "this build was made with other settings" in stderr and "pass --config" in stderr
    code, stdout, _ = cli("lint", "--config", "exported.yaml", "--from", "build")
    assert code == 0, stdout
    # a build of the defaults, linted with the defaults
    assert cli("generate", "--out", "defaults")[0] == 0
    assert cli("lint", "--from", "defaults")[0] == 0
    code, _, stderr = cli("lint", "--config", "exported.yaml", "--from", "defaults")
    assert code == 2 and "made with other settings (the bundled defaults)" in stderr
    assert "without --config" in stderr


def test_the_same_settings_named_another_way_make_the_same_build(in_folder, cli):
    """The manifest records what the settings say, not the path they were read by: CI's
    `generate --check` must pass on a build a person made with another spelling of the same file."""
    (in_folder / "gpudash.yaml").write_text("clusters:\n  - {name: train, region: eu-west-1}\n")
    assert cli("generate", "--out", "build")[0] == 0  # found as ./gpudash.yaml
    for spelling in ("./gpudash.yaml", str(in_folder / "gpudash.yaml")):
        code, stdout, stderr = cli("generate", "--check", "--config", spelling, "--out", "build")
        assert code == 0, stdout + stderr


def test_a_panel_left_out_is_noted_at_its_definition_even_in_a_folder_whose_name_holds_a_colon(in_folder, cli):
    """The note keeps the definition's place and the reason apart: a ': ' in the folder's name stays in the place."""
    _typo_project(in_folder, "team: gpus")
    code, stdout, stderr = cli("lint", "--output", "json")
    assert code == 0, stderr
    assert [(f["where"], f["message"]) for f in json.loads(stdout)["findings"]
            if f["rule"] == "DF001" and f["message"].startswith("panel ")] == [
        ("team: gpus/training.py:8", "panel 'Temperature' left out: the counters CSV does not collect "
                                     "DCGM_FI_DEV_GPU_TEMP")]


def test_linting_a_bundled_csv_build_with_another_csv_says_drop_it(in_folder, cli):
    """A build made from the bundled CSV, linted with --csv naming another one: the fix is to drop --csv."""
    from generator.resources import default_counters

    assert cli("generate")[0] == 0
    other = in_folder / "other.csv"
    other.write_text(default_counters().read_text() + "DCGM_FI_DEV_VGPU_LICENSE_STATUS, gauge, vGPU License status\n")
    code, stdout, stderr = cli("lint", "--from", "build", "--csv", str(other))
    assert code == 2 and stdout == "", stdout
    assert "this build was made from another counters CSV than " in stderr
    assert "fix: drop --csv: the build was made from the bundled CSV" in stderr, stderr


def test_every_alarm_expression_the_documentation_quotes_is_one_gpudash_generates():
    """README and docs/ quote alarm expressions (`FILL(…)`, `IF(…)`): each must be, or be part of, one a golden build
    holds, so the text cannot keep an expression the generator no longer writes. Placeholders (…, floor) are
    illustrations, not quotes."""
    quoted = {re.sub(r" [<>]=? [\d.]+$", "", text)  # the threshold the text writes after it
              for text in re.findall(r"`((?:FILL|IF)\([^`]+)`", documentation.text())
              if not any(placeholder in text for placeholder in ("…", "...", "floor"))}
    assert quoted, "the documentation quotes no alarm expression"
    generated = set()
    for alarms in (REPO / "tests/golden/builds").glob("*/cloudwatch/alarms.json"):
        generated |= set(re.findall(r'"Expression": "([^"]+)"', alarms.read_text()))
    assert all(any(text in expression for expression in generated) for text in quoted), \
        sorted(text for text in quoted if not any(text in expression for expression in generated))


def test_the_command_table_names_every_option_of_each_command():
    """A newcomer reads the options in the Commands table (docs/commands.md): each command's row names every option
    its --help
    has (--config and --csv apply to all and are said once above the table; generate's --check has its own row)."""
    import click

    from generator.cli import main

    table = documentation.text("commands.md")
    context = click.Context(main)
    for name in main.list_commands(context):
        command = main.get_command(context, name)
        row = next(line for line in table.splitlines() if line.startswith(f"| `gpudash {name}"))
        options = [param.opts[0] for param in command.params if isinstance(param, click.Option)
                   and param.opts[0].startswith("--") and param.opts[0] not in ("--config", "--csv", "--help")]
        missing = [option for option in options if option not in row and (name, option) != ("generate", "--check")]
        assert not missing, (name, missing)



def test_the_readme_examples_of_a_dashboard_and_an_alarm_generate(in_folder, cli):
    """The README's two examples ("Add a dashboard and an alarm"), copied as they are into dashboards/ and alarms/,
    generate."""
    readme = documentation.text("README.md")
    section = readme.split("\n## Add a dashboard and an alarm\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    kinds = {"dashboards" if "def dashboards(ctx)" in block else "alarms": block for block in blocks}
    assert sorted(kinds) == ["alarms", "dashboards"]
    for kind, block in kinds.items():
        (in_folder / kind).mkdir()
        (in_folder / kind / "example.py").write_text(block)
    (in_folder / "gpudash.yaml").write_text("definitions:\n  dashboards: dashboards\n  alarms: alarms\n")
    code, _, stderr = cli("generate", "--out", "build")
    assert code == 0, stderr
    assert (in_folder / "build" / "grafana" / "gpudash-training.json").is_file()
    assert "power-high" in (in_folder / "build" / "prometheus" / "rules.yaml").read_text()


def test_a_folder_of_ones_own_replaces_the_bundled_definitions_as_the_readme_says(in_folder, cli):
    """README: folders named by `definitions.dashboards` replace the bundled ones; listing both keeps them."""
    import shutil

    section = documentation.text("README.md").split("\n## Add a dashboard and an alarm\n", 1)[1].split("\n## ", 1)[0]
    listed = re.search(r"`(dashboards: \[dashboards, mine\])`", " ".join(section.split())).group(1)
    example = next(b for b in re.findall(r"```python\n(.*?)```", section, re.S) if "def dashboards(ctx)" in b)
    shutil.copytree(REPO / "dashboards", in_folder / "dashboards")
    (in_folder / "mine").mkdir()
    (in_folder / "mine" / "training.py").write_text(example)
    built = {}
    for folders in ("dashboards: mine", listed):
        (in_folder / "gpudash.yaml").write_text(f"definitions:\n  {folders}\n")
        code, _, stderr = cli("generate", "--out", "build", "--force")
        assert code == 0, stderr
        built[folders] = sorted(p.name for p in (in_folder / "build" / "grafana").glob("*.json"))
    assert built == {"dashboards: mine": ["gpudash-training.json"],
                     listed: ["gpudash-all-metrics.json", "gpudash-by-pod.json", "gpudash-health.json",
                              "gpudash-overview.json", "gpudash-training.json"]}


def test_the_warning_of_readme_step_two_is_the_one_it_announces(in_folder, cli):
    """README step 2: the bundled build, then the README's clusters and `make generate` again: generate warns of the
    build it replaces, as the README says it will, and once."""
    readme = documentation.text("README.md")
    step = readme.split("**2. Describe your fleet.**", 1)[1].split("**3.", 1)[0]
    settings = re.search(r"```yaml\n(.*?)```", step, re.S).group(1)
    assert "warns once that the build it replaces was made for other settings" in " ".join(step.split())
    code, _, stderr = cli("generate", "--out", "build")
    assert code == 0, stderr
    (in_folder / "gpudash.yaml").write_text(settings)
    code, _, stderr = cli("generate", "--out", "build")
    assert code == 0 and stderr.count("warning: build: the build it held was made for other settings") == 1, stderr
    assert "gpudash-cluster-gpu-cluster" in stderr
    code, _, stderr = cli("generate", "--out", "build")
    assert code == 0 and "made for other settings" not in stderr, stderr


def test_a_command_run_at_a_repository_root_or_in_the_home_folder_reads_no_settings_above(tmp_path, monkeypatch):
    """The repository root and the home folder end a project where a command runs in them too, not only above: a
    gpudash.yaml above the repository, or above the home folder, is no project's."""
    from generator.settings import settings_above

    home = tmp_path / "home"
    repository = home / "src" / "repo"
    (repository / ".git").mkdir(parents=True)
    (home / "src" / "gpudash.yaml").write_text("clusters: []\n")
    (tmp_path / "gpudash.yaml").write_text("clusters: []\n")
    monkeypatch.setenv("HOME", str(home))
    assert (settings_above(repository), settings_above(home)) == (None, None)
