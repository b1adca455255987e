"""A path holding a newline or another control character (`--out $'build\\n...'`, a file a person saved in the build)
was printed raw: its newline split one line of gpudash's output in two (the rest read as another message), an ESC
started a terminal escape sequence. Every path gpudash prints (the build folder, a settings file, a file in the build,
an error's where) is printed as it is when it prints as itself, else quoted with those characters escaped; a lint
finding and a verify check quoting such a name or what a server answered escape those characters in place."""

from __future__ import annotations

from pathlib import Path

import pytest

ODD = "bu\nild\x1b[31m\u202e"  # a newline, an ESC starting a colour, a right-to-left override
SHOWN = repr(ODD)  # 'bu\nild\x1b[31m\u202e'


def _raw(text: str) -> bool:
    return any(c in text for c in "\x1b\u202e") or "bu\nild" in text


def test_a_build_folder_named_with_control_characters_is_printed_escaped(tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)
    code, stdout, stderr = cli("generate", "--out", ODD)
    assert code == 0 and (tmp_path / ODD / "manifest.json").is_file(), stderr
    assert f"wrote 17 files to {SHOWN} (" in stdout and not _raw(stdout + stderr), stdout
    (tmp_path / ODD / f"kept{ODD}").write_text("a person's file\n")
    code, stdout, stderr = cli("generate", "--check", "--out", ODD)
    assert code == 1 and not _raw(stdout + stderr), stdout
    assert f"{SHOWN} is not what gpudash would generate:" in stdout and f"  extra    {repr('kept' + ODD)}" in stdout
    assert f"run `gpudash generate --out {SHOWN}`" in stdout
    code, stdout, stderr = cli("generate", "--out", ODD)  # refused: the file would be lost
    assert code == 2 and not _raw(stdout + stderr), stderr
    assert f"error: {repr(str(tmp_path / ODD))}: the build folder holds 1 file(s) gpudash did not write " \
           f"({repr('kept' + ODD)})" in stderr


def test_a_settings_file_named_with_control_characters_is_printed_escaped(tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)
    code, stdout, stderr = cli("init-config", ODD)
    assert code == 0 and Path(tmp_path / ODD).is_file()
    assert stdout.startswith(f"wrote {SHOWN}\ncommands read ./gpudash.yaml by default: pass --config {SHOWN} ")
    assert not _raw(stdout + stderr), stdout
    code, stdout, stderr = cli("generate", "--config", ODD, "--out", "build")
    assert code == 0 and f"settings: {SHOWN} (--config)" in stderr, stderr
    assert not _raw(stdout + stderr)


def test_a_build_read_from_a_folder_named_with_control_characters_is_printed_escaped(tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)
    code, stdout, stderr = cli("lint", "--from", ODD)
    assert code == 2 and not _raw(stdout + stderr), stderr
    assert f"error: {SHOWN}: the build folder does not exist\n  fix: run `gpudash generate --out {SHOWN}` first" \
        in stderr, stderr


ODD_DEFINITION = '''
from generator.model import Dashboard, Row
from generator.panels import per_gpu


def dashboards(ctx):
    panels = ctx.available([per_gpu("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "Double-bit ECC errors", aggregation="max"),
                            per_gpu("DCGM_FI_DEV_GPU_TEMP", "Temperature")])
    yield Dashboard(id="odd", title="Odd", rows=[Row("GPUs", panels)])
'''


def test_a_definition_file_named_with_control_characters_is_named_escaped_in_findings(project_dir, monkeypatch, cli):
    """A lint finding names the definition file it is about (`folder/file.py:line`): a file named with a newline
    split the finding over two lines, the second reading as another finding's start."""
    config = project_dir(dashboards={f"gpu{ODD}.py": ODD_DEFINITION})
    monkeypatch.chdir(config.parent)
    code, stdout, stderr = cli("lint")
    assert not _raw(stdout + stderr), stdout
    assert f"DF001 note: {repr('dashboards/gpu' + ODD + '.py')}:7: panel 'Double-bit ECC errors' left out" in stdout


def test_a_file_of_a_build_read_with_from_named_with_control_characters_is_printed_escaped(tmp_path, monkeypatch,
                                                                                           cli):
    """A build read with --from names the file it refuses: one a person saved in it that its manifest does not list,
    or one its manifest lists that is missing (a manifest edited by hand). A name with a newline split that refusal
    over two lines."""
    import json

    monkeypatch.chdir(tmp_path)
    assert cli("generate", "--out", "build")[0] == 0
    saved = tmp_path / "build" / "grafana" / f"kept{ODD}.json"
    saved.write_text("{}\n")
    code, stdout, stderr = cli("lint", "--from", "build")
    assert code == 2 and not _raw(stdout + stderr), stderr
    assert f"error: build: {repr('grafana/kept' + ODD + '.json')} is in the build but not in its manifest" in stderr
    saved.unlink()
    manifest = tmp_path / "build" / "manifest.json"
    record = json.loads(manifest.read_text())
    record["files"][f"grafana/listed{ODD}.json"] = "0" * 64
    manifest.write_text(json.dumps(record))
    code, stdout, stderr = cli("lint", "--from", "build")
    assert code == 2 and not _raw(stdout + stderr), stderr
    assert f"error: build: {repr('grafana/listed' + ODD + '.json')} is missing: the build was changed" in stderr


UNKNOWN_METRIC = '''
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    raw = Panel("Raw", (Query("x", raw_promql="sum(no_such_field)"),))
    yield Dashboard(id="odd", title="Odd", rows=[Row("GPUs", [raw])])
'''


def test_lint_findings_quoting_a_name_with_control_characters_are_printed_escaped(project_dir, monkeypatch, cli):
    """A lint finding quotes what it is about (a definition's query, the counters CSV it was judged by): its text was
    printed raw, so a newline split the finding over two lines and an ESC reached the terminal. Text output escapes
    it in place; --output json keeps the raw value."""
    import json
    import shutil

    from generator.resources import default_counters

    config = project_dir(dashboards={"gpu.py": UNKNOWN_METRIC})
    monkeypatch.chdir(config.parent)
    shutil.copy(default_counters(), ODD)
    code, stdout, stderr = cli("lint", "--csv", ODD)
    assert code == 1 and not _raw(stdout + stderr), stdout
    assert "GF002 error: grafana/gpudash-odd.json panel 'Raw': no_such_field is not in the counters CSV " \
           "(bu\\nild\\x1b[31m\\u202e)\n" in stdout, stdout
    code, stdout, _ = cli("lint", "--csv", ODD, "--output", "json")
    assert f"no_such_field is not in the counters CSV ({ODD})" in [f["message"] for f in json.loads(stdout)["findings"]]


@pytest.mark.parametrize("content_type", ["text/plain; version=0.0.4; charset=utf-8", "text/plain; version=0.0.4"],
                         ids=["charset named", "no charset (UTF-8 by the exposition format, not Latin-1)"])
def test_verify_prints_what_a_server_answered_escaped(tmp_path, monkeypatch, cli, content_type):
    """A verify check quotes what a server answered (here an exporter's gpu label value, in a check's detail): its
    table printed it raw, so a newline split a row in two (the rest read as another check's row) and an ESC reached
    the terminal. The table escapes each cell in place; --output json keeps the raw value."""
    import json

    from tests.support.canned_server import CannedServer

    monkeypatch.chdir(tmp_path)
    label = ODD.replace("\n", "\\n")  # (the exposition format's escape of a newline in a label value)
    body = f'DCGM_FI_DEV_GPU_UTIL{{gpu="{label}",UUID="GPU-1",Hostname="n"}} 50\n'
    skipped = ("--skip", "kube", "--skip", "prometheus", "--skip", "cloudwatch")
    with CannedServer(body, content_type=content_type) as exporter:
        url = f"http://{exporter.address}/metrics"
        code, stdout, stderr = cli("verify", *skipped, "--exporter-url", url)
        assert code == 1 and not _raw(stdout + stderr), stdout
        assert "busy GPUs without a pod label: gpu bu\\nild\\x1b[31m\\u202e " in stdout, stdout
        code, stdout, _ = cli("verify", *skipped, "--exporter-url", url, "--output", "json")
    assert f"busy GPUs without a pod label: gpu {ODD}" in [c["detail"] for c in json.loads(stdout)["checks"]]


def test_an_error_quoting_what_a_server_answered_is_printed_escaped(tmp_path, monkeypatch, cli):
    """A command's error quotes what a server answered (here Grafana's message of a 403, which a proxy in front of
    it writes too): `error: ...` printed it raw, so its newline added a line that read as another error of gpudash's
    (or as a `fix:`) and an ESC reached the terminal. The error escapes it in place, its own fix on the line after;
    --output json keeps the raw message."""
    import json

    from tests.support.canned_server import CannedServer

    monkeypatch.chdir(tmp_path)
    with CannedServer(json.dumps({"message": f"{ODD}\n  fix: run rm -rf"}), status=403) as grafana:
        env = {"GRAFANA_URL": f"http://{grafana.address}", "GRAFANA_TOKEN": "glsa_odd"}
        code, stdout, stderr = cli("plan", "--no-cloudwatch", env=env)
        assert code == 3 and not _raw(stdout + stderr), stderr
        assert "the service account may not do this (403): bu\\nild\\x1b[31m\\u202e\\n  fix: run rm -rf\n  fix: give " \
               "the service account the Editor role" in stderr, stderr
        code, stdout, _ = cli("plan", "--no-cloudwatch", "--output", "json", env=env)
    assert code == 3 and json.loads(stdout)["error"]["what"].endswith(f"(403): {ODD}\n  fix: run rm -rf"), stdout


def test_a_note_of_a_publish_naming_what_a_server_holds_is_printed_escaped(capsys):
    """A publish's notes name what the servers hold (a dashboard's uid, an alarm's clusters tag): printed raw, a
    newline split a note and an ESC reached the terminal. Each note prints on one line, escaped in place."""
    from types import SimpleNamespace

    from generator.cli_publish import _Noted

    with _Noted(SimpleNamespace(notes=[f"dashboard {ODD}: deleted in Grafana since the plan"])):
        pass
    shown = capsys.readouterr().err
    assert shown == "note: dashboard bu\\nild\\x1b[31m\\u202e: deleted in Grafana since the plan\n", shown


def test_a_preflight_warning_quoting_what_a_server_answered_is_printed_escaped(monkeypatch, capsys):
    """A publish goes ahead with a warning when its preflight finds no data yet, quoting the checks' details (what
    Prometheus or an exporter answered): printed raw, a newline split the warning. It prints on one line, escaped."""
    from generator import verify
    from generator.cli_publish import _preflight
    from generator.clients.deadline import Deadline

    monkeypatch.setattr(verify, "preflight", lambda *args: [f"no data yet in prometheus ({ODD}), but published"])
    _preflight(None, ("prometheus",), False, Deadline(10), prometheus_url="http://prometheus:9090")
    shown = capsys.readouterr().err
    assert shown == "warning: no data yet in prometheus (bu\\nild\\x1b[31m\\u202e), but published\n", shown


HELP = "\tcore\x1b[31m\u202e"  # (a CSV record is a line: no newline in it)


def test_the_metric_catalog_prints_a_help_text_and_a_csv_path_escaped(tmp_path, monkeypatch, cli):
    """`gpudash metrics` prints each field's help text as the counters CSV holds it (a line of its own: no newline, but
    an ESC, a tab or a right-to-left override), and the CSV's path: both printed raw, so an ESC reached the terminal,
    an override showed the row reversed and a path's newline split the last line. Each is escaped in place;
    --output json keeps the raw help text."""
    import json

    from generator.resources import default_counters

    monkeypatch.chdir(tmp_path)
    text = Path(default_counters()).read_text()
    Path(ODD).write_text(text.replace("Streaming multiprocessor clock (in MHz).", f"SM clock {HELP}", 1))
    code, stdout, stderr = cli("metrics", "--csv", ODD)
    assert code == 0 and not _raw(stdout + stderr), stdout
    assert "SM clock \\tcore\\x1b[31m\\u202e\n" in stdout and stdout.endswith(f" fields from {SHOWN}\n"), stdout
    code, stdout, _ = cli("metrics", "--csv", ODD, "--output", "json")
    assert f"SM clock {HELP}" in [m["help"] for m in json.loads(stdout)], stdout


ODD_TITLE = '''
from generator.model import Dashboard, Row
from generator.panels import per_gpu


def dashboards(ctx):
    yield Dashboard(id="odd", title="Odd\\nboard\\x1b[31m\\u202e", rows=[Row("GPUs", [per_gpu("DCGM_FI_DEV_GPU_TEMP",
                                                                                            "Temperature")])])
'''


def test_preview_prints_a_dashboard_title_escaped(project_dir, monkeypatch, cli):
    """preview lists each dashboard it drew by its title, as a definition (or the --from build) holds it: printed
    raw, a title's newline split the line and an ESC reached the terminal. Escaped in place; JSON keeps it raw."""
    import json

    from tests.support.canned_server import CannedServer

    config = project_dir(dashboards={"odd.py": ODD_TITLE})
    monkeypatch.chdir(config.parent)
    empty = '{"status": "success", "data": {"resultType": "matrix", "result": []}}'
    with CannedServer(empty) as prometheus:
        url = f"http://{prometheus.address}"
        code, stdout, stderr = cli("preview", "--prometheus-url", url, "--out", "site")
        assert code == 0 and not any(c in stdout + stderr for c in "\x1b\u202e"), stdout
        assert "gpudash-odd.html: Odd\\nboard\\x1b[31m\\u202e, 1 panels (1 with no data)\n" in stdout, stdout
        code, stdout, _ = cli("preview", "--prometheus-url", url, "--out", "site", "--output", "json")
    assert "Odd\nboard\x1b[31m\u202e" in [d["title"] for d in json.loads(stdout)["dashboards"]], stdout


def test_generate_names_a_counters_csv_repeating_a_field_escaped(tmp_path, monkeypatch, cli):
    """generate warns of a field the counters CSV repeats, naming the CSV where it does (`path:line`): a --csv path
    holding a newline split the warning in two (lint's CSV001 finding was escaped, generate's warning raw)."""
    from generator.resources import default_counters

    monkeypatch.chdir(tmp_path)
    text = Path(default_counters()).read_text()
    repeated = next(line for line in text.splitlines() if line.startswith("DCGM_FI_DEV_GPU_TEMP,"))
    Path(ODD).write_text(f"{text.rstrip()}\n{repeated}\n")
    code, stdout, stderr = cli("generate", "--csv", ODD, "--out", str(tmp_path / "out"))
    assert code == 0 and not _raw(stdout + stderr), stderr
    assert "warning: bu\\nild\\x1b[31m\\u202e:" in stderr and "DCGM_FI_DEV_GPU_TEMP repeats line" in stderr, stderr


def test_cost_prints_what_a_prices_file_says_and_its_path_escaped(tmp_path, monkeypatch, cli):
    """`gpudash cost --prices FILE` prints the file's as_of and source as it gives them, and its path: all raw, so a
    source's newline split the line, an ESC reached the terminal, a path's newline split "overridden from". Escaped in
    place; --output json keeps the raw values."""
    import json

    monkeypatch.chdir(tmp_path)
    Path(ODD).write_text(json.dumps({"as_of": "2026-12\x1b[31m", "source": f"sheet {ODD}",
                                     "rates": {"dashboard_month": {"price": 3.5}}}))
    code, stdout, stderr = cli("cost", "--pods", "10", "--prices", ODD)
    assert code == 0 and not _raw(stdout + stderr), stdout
    assert "prices as of 2026-12\\x1b[31m: sheet bu\\nild\\x1b[31m\\u202e\n" in stdout, stdout
    assert f"overridden from {SHOWN}: dashboard_month\n" in stdout, stdout
    code, stdout, _ = cli("cost", "--pods", "10", "--prices", ODD, "--output", "json")
    assert json.loads(stdout)["source"] == f"sheet {ODD}", stdout
