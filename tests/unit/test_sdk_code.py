"""The Grafana SDK's modules compiled with their annotations left as text and kept between runs
(generator/sdk_code.py): the models make the same JSON; a run that finds a module's code in the cache compiles none;
anything it cannot trust (another source, a damaged entry or file) is compiled again. Each check runs in a fresh
interpreter (the finder is installed once a process, before the SDK is imported)."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# A panel and a dashboard made from the SDK's models as generator/render/grafana.py makes them (enums, nested models,
# a kind's own options), written as JSON; with what the run compiled and how an annotation reads.
PROGRAM = '''
import json, sys
from generator import sdk_code

finder = sdk_code.install(sys.argv[1]) if sys.argv[2] == "hooked" else None
from grafana_foundation_sdk.models import common, dashboard as dm, prometheus as pm, timeseries

panel = dm.Panel(type_val="timeseries", title="GPU utilization", options=timeseries.Options(),
                 targets=[pm.Dataquery(ref_id="A", expr="avg(x)", legend_format="{{pod}}",
                                       datasource=common.DataSourceRef(type_val="prometheus", uid="${datasource}"))],
                 field_config=dm.FieldConfigSource())
panel.field_config.defaults.custom = timeseries.FieldConfig()
panel.options.legend = common.VizLegendOptions(display_mode=common.LegendDisplayMode.TABLE, calcs=["mean"])
board = dm.Dashboard(title="t", uid="u", panels=[panel], graph_tooltip=dm.DashboardCursorSync.CROSSHAIR)
print(json.dumps({"json": json.dumps(board, default=lambda model: model.to_json(), sort_keys=True),
                  "annotation": repr(dm.Panel.__init__.__annotations__["title"]),
                  "compiled": finder.compiled if finder else None}))
'''


def _run(tmp_path: Path, cache: Path, hooked: bool = True, writes: bool = True) -> dict:
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    environment.pop("PYTHONDONTWRITEBYTECODE", None)  # this machine's shells set it; the cache is written as bytecode
    if not writes:
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
    result = subprocess.run([sys.executable, "-c", PROGRAM, str(cache), "hooked" if hooked else "plain"],
                            capture_output=True, text=True, env=environment, cwd=tmp_path, check=True)
    return json.loads(result.stdout)


def test_the_models_make_the_same_json_and_a_second_run_compiles_nothing(tmp_path):
    cache = tmp_path / "sdk-code.marshal"
    plain = _run(tmp_path, cache, hooked=False)
    first, second = (_run(tmp_path, cache) for _ in range(2))
    assert (first["compiled"] > 0, second["compiled"]) == (True, 0)
    assert {first["json"], second["json"]} == {plain["json"]}
    # what changed: the annotation is its text, no typing object made
    assert (plain["annotation"], first["annotation"], second["annotation"]) == (
        "typing.Optional[str]", "'typing.Optional[str]'", "'typing.Optional[str]'")


def test_a_changed_source_a_damaged_entry_or_file_is_compiled_again(tmp_path):
    cache = tmp_path / "sdk-code.marshal"
    expected = _run(tmp_path, cache, hooked=False)["json"]
    _run(tmp_path, cache)
    version, codes, ages = marshal.loads(cache.read_bytes())
    assert "grafana_foundation_sdk.models.dashboard" in codes
    other_source = {name: ((size + 1, mtime), code) for name, ((size, mtime), code) in codes.items()}
    damaged = {name: (key, code[:len(code) // 2]) for name, (key, code) in codes.items()}
    for text in (marshal.dumps((version, other_source, ages)), marshal.dumps((version, damaged, ages)),
                 marshal.dumps(((0, b""), codes, ages)), b"not marshal"):
        cache.write_bytes(text)
        run = _run(tmp_path, cache)
        assert run["json"] == expected and run["compiled"] > 0


def test_where_no_code_can_be_kept_the_sdk_is_imported_from_its_own_bytecode(tmp_path):
    """Compiled from its source at every run, the SDK would cost a generate far more than its annotations do."""
    cache = tmp_path / "sdk-code.marshal"
    plain = _run(tmp_path, cache, hooked=False)
    run = _run(tmp_path, cache, writes=False)
    assert (run["compiled"], run["json"], run["annotation"]) == (0, plain["json"], plain["annotation"])
    assert not cache.exists()
    _run(tmp_path, cache)  # kept by a run that writes bytecode: then read by one that does not
    assert _run(tmp_path, cache, writes=False)["annotation"] == "'typing.Optional[str]'"


def test_not_installed_once_the_sdk_is_imported():
    """An SDK imported before would leave the process with modules of two compilations."""
    program = ("import sys, grafana_foundation_sdk.models.common\nfrom generator import sdk_code\n"
               "print(sdk_code.install(sys.argv[1]) is None)")
    result = subprocess.run([sys.executable, "-c", program, os.devnull], capture_output=True, text=True, check=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.stdout.strip() == "True"
