"""gpudash generate: deterministic files, a manifest, atomic replacement, --check for CI."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json

import pytest
import yaml

from generator.cli import main


def _tree(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_two_runs_are_byte_identical(tmp_path, cli):
    assert cli("generate", "--out", str(tmp_path / "a"))[0] == 0
    assert cli("generate", "--out", str(tmp_path / "b"))[0] == 0
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")


def test_layout_and_manifest(tmp_path, cli):
    out = tmp_path / "build"
    cli("generate", "--out", str(out))
    files = _tree(out)
    assert {"grafana/gpudash-overview.json", "grafana/gpudash-by-pod.json", "grafana/gpudash-health.json",
            "grafana/gpudash-all-metrics.json", "grafana/provisioning/gpudash-dashboards.yaml",
            "k8s/grafana-dashboards.yaml", "manifest.json"} <= set(files)
    manifest = json.loads(files["manifest.json"])
    assert set(manifest["files"]) == set(files) - {"manifest.json"}
    for path, digest in manifest["files"].items():
        assert hashlib.sha256(files[path]).hexdigest() == digest


def test_a_rebuild_lists_the_sums_of_the_bytes_it_holds(tmp_path, cli):
    """Rebuilt over the previous build, whose files' sums are worked out while it is read: the manifest still
    lists each file's own sum, and a file edited to another content of the same size is still found edited."""
    out = tmp_path / "build"
    cli("generate", "--out", str(out))
    assert cli("generate", "--out", str(out))[0] == 0
    files = _tree(out)
    listed = json.loads(files["manifest.json"])["files"]
    assert listed == {path: hashlib.sha256(data).hexdigest() for path, data in files.items() if path != "manifest.json"}
    edited = out / "grafana" / "gpudash-health.json"
    edited.write_bytes(edited.read_bytes().replace(b'"uid"', b'"uiD"', 1))
    code, _, error = cli("generate", "--out", str(out))
    assert code != 0 and "changed since gpudash wrote them (grafana/gpudash-health.json)" in error


def test_sidecar_configmaps_hold_the_same_dashboards(tmp_path, cli):
    out = tmp_path / "build"
    cli("generate", "--out", str(out))
    configmaps = list(yaml.safe_load_all((out / "k8s/grafana-dashboards.yaml").read_text()))
    assert len(configmaps) == 4
    for configmap in configmaps:
        assert configmap["kind"] == "ConfigMap"
        assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
        (key, body), = configmap["data"].items()
        # the file's dashboard on one line (client-side kubectl apply's annotation cap: GF011)
        assert json.loads(body) == json.loads((out / "grafana" / key).read_text()) and body.count("\n") == 1


def test_provisioning_points_grafana_at_the_folder(tmp_path, cli):
    out = tmp_path / "build"
    cli("generate", "--out", str(out))
    provider = yaml.safe_load((out / "grafana/provisioning/gpudash-dashboards.yaml").read_text())["providers"][0]
    assert (provider["type"], provider["folder"], provider["folderUid"]) == ("file", "GPU monitoring", "gpudash")


def test_check_reports_differences_and_exits_1(tmp_path, cli):
    out = tmp_path / "build"
    cli("generate", "--out", str(out))
    code, stdout, _ = cli("generate", "--check", "--out", str(out))
    assert code == 0 and "up to date" in stdout
    (out / "grafana/gpudash-health.json").write_text("{}")
    (out / "grafana/gpudash-overview.json").unlink()
    (out / "grafana/stray.json").write_text("{}")
    code, stdout, _ = cli("generate", "--check", "--out", str(out))
    assert code == 1
    assert "changed  grafana/gpudash-health.json" in stdout
    assert "missing  grafana/gpudash-overview.json" in stdout
    assert "extra    grafana/stray.json" in stdout
    assert (out / "grafana/stray.json").exists()  # --check writes nothing


def test_check_json_output(tmp_path, cli):
    code, stdout, _ = cli("generate", "--check", "--output", "json", "--out", str(tmp_path / "none"))
    assert code == 1
    assert {"path": "manifest.json", "change": "missing"} in json.loads(stdout)["differences"]


def test_regenerating_replaces_stale_files(tmp_path, cli):
    """Files an earlier build wrote that this one does not (a cluster removed) go with the earlier build."""
    out = tmp_path / "build"
    config = tmp_path / "gpudash.yaml"
    config.write_text("clusters: [{name: a, region: eu-west-1}, {name: old, region: eu-west-1}]\n")
    assert cli("generate", "--config", str(config), "--out", str(out))[0] == 0
    stale = out / "cloudwatch/dashboards/gpudash-old-overview.json"
    assert stale.is_file()
    config.write_text("clusters: [{name: a, region: eu-west-1}]\n")
    assert cli("generate", "--config", str(config), "--out", str(out))[0] == 0
    assert not stale.exists() and (out / "cloudwatch/dashboards/gpudash-a-overview.json").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".build.")]  # no staging left behind


def test_metrics_command(cli):
    code, stdout, _ = cli("metrics")
    assert code == 0 and "DCGM_FI_DEV_GPU_UTIL" in stdout and "26 fields" in stdout
    code, stdout, _ = cli("metrics", "--output", "json")
    rows = {r["name"]: r for r in json.loads(stdout)}
    assert rows["DCGM_FI_PROF_DRAM_ACTIVE"]["grafana_unit"] == "percentunit"
    assert rows["DCGM_FI_DEV_FB_USED"]["family"] == "memory"


def test_every_command_has_help(cli):
    import click

    names = main.list_commands(click.Context(main))
    assert {"generate", "plan", "push", "apply", "verify", "preview"} <= set(names)
    for command in [[], *[[name] for name in names]]:
        code, stdout, _ = cli(*command, "--help")
        assert code == 0 and "Usage:" in stdout


def test_the_commands_imported_on_demand_are_those_their_modules_register():
    """`gpudash` lists (and imports when asked) exactly the commands cli_publish and cli_preview define."""
    import subprocess
    import sys

    code = ("import generator.cli as cli, generator.cli_base as base\n"
            "before = set(cli.main.commands)\n"
            "import generator.cli_publish, generator.cli_preview\n"
            "added = {n: cli.main.commands[n].callback.__module__.rsplit('.', 1)[1] for n in set(cli.main.commands) - before}\n"
            "print(added == base.LAZY_COMMANDS, sorted(added), sorted(base.LAZY_COMMANDS))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.startswith("True"), result.stdout


def test_the_command_ends_with_its_exit_handlers_run_and_its_output_whole(tmp_path):
    """`gpudash` ends without the interpreter's teardown: exit handlers still run, what they and the command
    printed reaches the pipe, and the command's own exit code is the process's."""
    import subprocess
    import sys

    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('handler ran', end=''))\n"
            "sys.argv = ['gpudash'] + sys.argv[1:]\n"
            "from generator.cli import run\n"
            "run()\n")
    done = subprocess.run([sys.executable, "-c", code, "metrics", "--output", "json"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.endswith("]\nhandler ran"), done.stdout[-200:]
    assert len(json.loads(done.stdout[:-len("handler ran")])) == 26
    checked = subprocess.run([sys.executable, "-c", code, "generate", "--check", "--out", str(tmp_path / "none")],
                             capture_output=True, text=True)
    assert checked.returncode == 1 and checked.stdout.endswith("handler ran"), checked.stdout


def test_a_generate_process_leaves_its_artifact_set_to_its_end_and_a_caller_of_main_frees_it(tmp_path):
    """Freeing 1,000 clusters' artifact set object by object took about 0.1 s of CPU: `gpudash generate` as a process
    of its own (`run`) still holds it while the files are written, and leaves it to the process's end; a caller of
    `main` whose process goes on (a test, a tool) has it freed before the files are written, as it did."""
    import subprocess
    import sys

    code = ("import atexit, sys, weakref\n"
            "import generator.limits as limits, generator.output as output\n"
            "made, held = [], []\n"
            "build, write = limits.checked_build, output.write_files\n"
            "def checked_build(*args, **kwargs):\n"
            "    artifacts = build(*args, **kwargs)\n"
            "    made.append(weakref.ref(artifacts))\n"
            "    return artifacts\n"
            "def write_files(*args, **kwargs):\n"
            "    held.append(made[-1]() is not None)\n"
            "    return write(*args, **kwargs)\n"
            "limits.checked_build, output.write_files = checked_build, write_files\n"
            "from generator.cli import main, run\n"
            "try:\n"
            "    main(['generate', '--out', sys.argv[1]])\n"
            "except SystemExit as exc:\n"
            "    assert not exc.code, exc.code\n"
            "atexit.register(lambda: print(held, made[-1]() is not None))\n"
            "sys.argv = ['gpudash', 'generate', '--out', sys.argv[2]]\n"
            "run()\n")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "a"), str(tmp_path / "b")],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    # main: freed before the writes; run: held through them, and still there when the process ends
    assert done.stdout.strip().splitlines()[-1] == "[False, True] True", done.stdout[-500:]
    assert (tmp_path / "a" / "manifest.json").read_bytes() == (tmp_path / "b" / "manifest.json").read_bytes()


def test_init_config_writes_the_commented_default_once(tmp_path, cli):
    target = tmp_path / "gpudash.yaml"
    assert cli("init-config", str(target))[0] == 0
    assert "# gpudash settings" in target.read_text()
    assert cli("generate", "--config", str(target), "--out", str(tmp_path / "b"))[0] == 0
    code, _, stderr = cli("init-config", str(target))
    assert code == 2 and "exists" in stderr


def test_help_and_generate_do_not_import_the_remote_clients(tmp_path):
    """`gpudash --help` and `gpudash generate` start without boto3, kubernetes, requests or jsonschema, and
    generate without the Grafana SDK's v2 dashboard schemas (its panel builders import them; gpudash
    assembles panels from the SDK's models), nor the standard modules that only errors need (nor importlib.abc, which
    imports importlib.resources); generate also without the publishing and preview commands' modules; --help also
    without the build's encoders (generator.output, yaml, orjson: ~0.03 s a start)."""
    import subprocess
    import sys

    heavy = ["boto3", "botocore", "kubernetes", "requests", "jsonschema", "grafana_foundation_sdk.models.dashboardv2",
             "grafana_foundation_sdk.models.dashboardv2beta1", "grafana_foundation_sdk.builders",
             "difflib", "decimal", "traceback",  # needed only for suggestions, for --debug, or not at all
             "importlib.abc", "importlib.resources"]  # a base class of the definitions' helper finder: ~8 ms a start
    commands = ["generator.cli_publish", "generator.cli_preview"]  # imported when one of their commands is asked for
    writing = ["generator.output", "yaml", "orjson"]  # the build's encoders: --help imported them for the name "build"
    for args, unused in ((["--help"], heavy + writing), (["generate", "--out", str(tmp_path / "build")],
                                                         heavy + commands)):
        code = ("import sys; from generator.cli import main\n"
                f"try:\n    main({args!r})\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
                f"print(sorted(m for m in {unused!r} if m in sys.modules))")
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                cwd=tmp_path)
        assert result.stdout.strip().splitlines()[-1] == "[]", (args, result.stdout)
    assert (tmp_path / "build" / "manifest.json").is_file()


@pytest.mark.parametrize("odd", ["", ", exporter: {deployment: helm, namespace: dcgm-exporter}"],
                         ids=["one deployment", "every other cluster the Helm chart's"])
def test_the_artifact_set_grows_linearly_with_the_clusters(project_dir, odd):
    """Twelve times the clusters make under six times the function calls to build (about 3-3.6 times: the fleet's
    fixed part): a question about the whole fleet asked again for each alarm of each cluster made it grow with the
    square (13.7 times the calls here; 1,000 clusters took 2,000,000 readings of the clusters' DaemonSet settings, 2.1 s
    of a 2.6 s build). So with every other cluster's exporter deployed otherwise (clusters[].exporter.deployment,
    .namespace). Calls, counted by cProfile, not CPU time: the same on a loaded machine as on an idle one."""
    import cProfile
    import pstats

    from generator.artifacts import build
    from generator.project import load_project

    def calls(count: int) -> int:
        clusters = "".join(f"  - {{name: c{i:04}, region: us-east-1{odd if i % 2 else ''}}}\n" for i in range(count))
        project = load_project(project_dir(f"clusters:\n{clusters}"))
        profile = cProfile.Profile()
        profile.runcall(build, project)
        return pstats.Stats(profile).total_calls

    small, large = calls(30), calls(360)
    assert large < 6 * small, (small, large)


def test_the_rules_grow_linearly_with_the_clusters_of_a_shared_prometheus(project_dir):
    """On a shared Prometheus (clusters[].prometheus_label) the data-missing rule joins each cluster's named exporter
    DaemonSet to that cluster's "no exporter DaemonSet" branch alone: joined to every cluster's, the rule grew with
    the square of the clusters (7 MB at 100 clusters; 44 s and 3.5 GiB to generate 1,000). Sizes, not times: twelve
    times the clusters, under thirteen times the rules' text."""
    import json

    from generator.project import load_project
    from generator.render.alarms import prometheus_rules

    def size(count: int) -> int:
        clusters = "".join(f"  - {{name: c{i:04}, region: us-east-1, prometheus_label: c{i:04}}}\n" for i in range(count))
        project = load_project(project_dir(f"clusters:\n{clusters}"))
        return len(json.dumps(prometheus_rules(project.alarms, project.catalog, project.settings), default=str))

    small, large = size(10), size(120)
    assert large < 13 * small, (small, large)


def test_a_query_repeated_on_many_panels_is_not_worked_out_again_for_each(project_dir, monkeypatch):
    """A project's dashboards repeat the same few queries (a field per pod on each team's or cluster's dashboard): 80
    panels of the bundled per-pod framebuffer share (a 38 KB query) work its PromQL out as often as one such panel
    does. Worked out again for each panel they cost 46 times one (the query's text is built from hundreds of smaller
    ones), and 200 dashboards of 20 panels took 2.7 times a plain grafana-foundation-sdk script writing the same
    dashboards. Counted in PromQL texts built, not timed (a shared machine makes CPU time a poor witness)."""
    from generator import promql
    from generator.model import Dashboard, Row
    from generator.panels import per_pod
    from generator.project import load_project
    from generator.render.grafana import render

    project = load_project(project_dir(""))
    # a catalog of its own: no answer an earlier test worked out is kept for it (tests/unit/conftest.py shares one
    # catalog per CSV within a module, and promql keeps its answers per catalog object)
    project = dataclasses.replace(project, catalog=copy.copy(project.catalog))
    FB_USED, FB_FREE = "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"
    built = []
    work = promql._expression
    monkeypatch.setattr(promql, "_expression", lambda *a, **k: built.append(1) or work(*a, **k))

    def worked_out(count: int) -> int:
        panels = [per_pod(FB_USED, f"Framebuffer used share by pod {number}", over=(FB_USED, FB_FREE), min=0, max=1)
                  for number in range(count)]
        dashboard = Dashboard(f"shares-{count}", "Shares", [Row("Pods", panels)])
        built.clear()
        model = render(dashboard, project.catalog, project.settings)
        assert len({panel["targets"][0]["expr"] for panel in model["panels"][1:]}) == 1
        assert len(model["panels"][1]["targets"][0]["expr"]) > 30_000
        return len(built)

    one, many = worked_out(1), worked_out(80)
    assert one >= 1 and many <= one, (one, many)


def test_json_output_holds_every_warning_and_note_the_text_shows(tmp_path, cli):
    """A machine reader of `generate --output json` gets what a person reading stderr gets: each warning with its fix
    and lint rule, each note (every panel left out, which the text counts in one line). The JSON held the files
    alone, and the notes were not said at all."""
    config = tmp_path / "gpudash.yaml"
    config.write_text("clusters: [{name: a, region: us-east-1}]\nscrape:\n  interval: 5m\n")
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(tmp_path / "text"))
    assert code == 0
    shown = [line for line in stderr.splitlines() if line.startswith(("warning: ", "note: ", "  fix: "))]
    code, stdout, _ = cli("generate", "--config", str(config), "--out", str(tmp_path / "json"), "--output", "json")
    assert code == 0
    answer = json.loads(stdout)
    said = []
    for level in ("warning", "note"):
        for notice in answer[f"{level}s"]:
            assert set(notice) == {"message", "where", "fix", "rule"}
            said.append(f"{level}: {notice['message']}" + (f" (lint {notice['rule']})" if notice["rule"] else ""))
            said += [f"  fix: {notice['fix']}"] if notice["fix"] else []
    panels = [n for n in answer["notes"] if n["rule"] == "DF001" and n["message"].startswith("panel ")]
    assert len(panels) == 8 and all(n["where"].startswith("dashboards/") for n in panels)
    counted = (f"note: {len(panels)} panel(s) left out because the counters CSV does not collect their fields; "
               f"`gpudash lint` lists them (DF001)")
    assert counted in shown
    assert sorted(line for line in shown if line != counted) == sorted(
        line for line in said if not line.startswith("note: panel "))
    # the data-missing rule's agent alarm, which can never fire at 5m, is said once, with the rule's short period
    (missing,) = [n for n in answer["warnings"] if "'gpu-data-missing'" in n["message"]]
    assert missing["rule"] == "AL029" and "so it can never fire" in missing["message"] and missing["fix"].startswith(
        "give scrape.interval one of 10s, 12s, 15s, 20s, 25s, 30s, 50s, 60s, 75s, 100s (100 s or less") and not any(n["rule"] == "AL028" for n in answer["warnings"])
    assert not any(n["rule"] == "AL027" for n in answer["notes"])  # the OTel pipeline judges every rule


def test_what_a_definition_prints_goes_to_stderr_and_the_json_stays_json(tmp_path, cli, project_dir):
    """A definition that prints (a user's debugging line, at import and inside dashboards(ctx)) wrote into stdout,
    ahead of `--output json`'s document: a machine reader could not parse it."""
    config = project_dir("clusters: [{name: a, region: us-east-1}]\n", dashboards={"t.py": (
        "print('loading t')\n"
        "from generator.model import Dashboard, Row\nfrom generator.panels import per_pod\n\n"
        "def dashboards(ctx):\n    print('making t')\n"
        "    yield Dashboard(id='t', title='T', rows=[Row('G', [per_pod('DCGM_FI_DEV_GPU_UTIL', 'Util')])])\n")})
    for command in (("generate", "--out", str(tmp_path / "build")), ("lint",)):
        code, stdout, stderr = cli(*command, "--config", str(config), "--output", "json")
        assert code == 0, stderr
        json.loads(stdout)
        assert "loading t\n" in stderr and "making t\n" in stderr
