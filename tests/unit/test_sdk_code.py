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
import threading
import time
from pathlib import Path

import pytest

from generator import kept_code, sdk_code

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
    other_source = {name: ((size, digest[::-1]), code) for name, ((size, digest), code) in codes.items()}
    damaged = {name: (key, code[:len(code) // 2]) for name, (key, code) in codes.items()}
    for text in (kept_code.sealed(marshal.dumps((version, other_source, ages))),
                 kept_code.sealed(marshal.dumps((version, damaged, ages))),
                 kept_code.sealed(marshal.dumps(((0, b""), codes, ages))), b"not marshal"):
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


# A stand-in SDK of one module, first on the path: what a run imports from it, and where its code says it is from.
FAKE = '''
import json, sys
from generator import sdk_code

if sys.argv[2] == "own finder first":  # a finder of the program's own, ahead of the path finder, serving a module
    import importlib.util

    class Loader:
        def create_module(self, spec):
            return None

        def exec_module(self, module):
            module.VALUE, module.where = "the own finder's", lambda: None

    class Finder:
        def find_spec(self, name, path=None, target=None):
            if name == "grafana_foundation_sdk.models.version":
                return importlib.util.spec_from_loader(name, Loader())
            return None

    sys.meta_path.insert(0, Finder())
finder = sdk_code.install(sys.argv[1])
from grafana_foundation_sdk.models import version
print(json.dumps({"value": version.VALUE, "file": version.where.__code__.co_filename, "compiled": finder.compiled}))
'''


def _fake_sdk(site: Path, value: str) -> Path:
    package = site / "grafana_foundation_sdk"
    (package / "models").mkdir(parents=True, exist_ok=True)
    module = package / "models" / "version.py"
    for path, text in ((package / "__init__.py", ""), (package / "models" / "__init__.py", ""),
                       (module, f"VALUE = {value!r}\n\n\ndef where(): pass\n")):
        path.write_text(text)
        os.utime(path, ns=(315532800 * 10**9, 315532800 * 10**9))  # the time a wheel's archive holds for it
    return module


def _run_fake(site: Path, cache: Path, how: str = "") -> dict:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join((str(site), str(ROOT)))}
    environment.pop("PYTHONDONTWRITEBYTECODE", None)  # this machine's shells set it; the cache is written as bytecode
    result = subprocess.run([sys.executable, "-c", FAKE, str(cache), how], capture_output=True, text=True,
                            env=environment, cwd=site, check=True)
    return json.loads(result.stdout)


def test_a_source_changed_in_place_with_its_size_and_time_kept_is_compiled_again(tmp_path):
    """An installer that keeps the times a package's archive holds (a fixed time for reproducible builds) leaves an
    upgraded module with the size and modification time of the one it replaced; its code is not the old one's."""
    cache, site = tmp_path / "sdk-code.marshal", tmp_path / "site"
    _fake_sdk(site, "1.0.0")
    assert _run_fake(site, cache)["value"] == "1.0.0"
    assert _run_fake(site, cache)["compiled"] == 0
    _fake_sdk(site, "2.0.0")
    assert _run_fake(site, cache)["value"] == "2.0.0"


def test_the_same_sdk_at_another_path_is_taken_from_the_cache_and_says_where_it_is(tmp_path):
    """Another environment's copy of the same SDK (same source) needs no compiling; its code names its own file."""
    cache = tmp_path / "sdk-code.marshal"
    _fake_sdk(tmp_path / "one", "1.0.0")
    _run_fake(tmp_path / "one", cache)
    module = _fake_sdk(tmp_path / "other", "1.0.0")
    run = _run_fake(tmp_path / "other", cache)
    assert (run["value"], run["compiled"], run["file"]) == ("1.0.0", 0, str(module))


def test_a_finder_ahead_of_the_path_finder_is_asked_first_as_before(tmp_path):
    """The SDK finder takes the path finder's place alone: a finder the program put ahead of it still serves."""
    site = tmp_path / "site"
    _fake_sdk(site, "1.0.0")
    assert _run_fake(site, tmp_path / "sdk-code.marshal", "own finder first")["value"] == "the own finder's"


def test_importing_gpudash_as_a_library_changes_no_import():
    """Only the command installs the caches (generator/entry.py), never a program importing gpudash's modules."""
    program = ("import dataclasses, re, sys\nfrom re import _compiler\nreal = _compiler.compile\n"
               "import generator.cli, generator.render.grafana, generator.sdk_code\n"
               "print(any(type(f).__module__ == 'generator.sdk_code' for f in sys.meta_path),\n"
               "      'exec' in vars(dataclasses), _compiler.compile is not real)")
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.stdout.split() == ["False", "False", "False"]


def test_two_threads_importing_two_modules_at_once_keep_both(tmp_path, monkeypatch):
    """The file is read at the first SDK module; a second thread importing another module meanwhile shares what the
    first read, so what each compiles is written."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # this machine's shells set it; written as bytecode is
    read = kept_code.read

    def slow_read(path):
        time.sleep(0.3)  # both threads are importing while the file is read
        return read(path)

    monkeypatch.setattr(kept_code, "read", slow_read)
    finder = sdk_code._Finder(str(tmp_path / "sdk-code.marshal"))
    names = {f"grafana_foundation_sdk.models.m{n}": tmp_path / f"m{n}.py" for n in range(2)}
    codes = {}
    for name, source in names.items():
        source.write_text(f"VALUE = {name!r}\n")

    def load(name, source):
        codes[name] = finder.code(name, str(source), lambda path: Path(path).read_bytes())

    threads = [threading.Thread(target=load, args=item) for item in names.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    finder.save()
    assert set(codes) == set(names) and all(code is not None for code in codes.values())
    assert set(marshal.loads((tmp_path / "sdk-code.marshal").read_bytes())[1]) == set(names)


@pytest.mark.xfail(strict=True, reason="the cache holds one code per module name: two environments with different SDK "
                   "versions sharing gpudash's folder (one checkout installed in both) each replace the other's entry, "
                   "so runs alternating between them compile the SDK's modules from source at every run (slower than "
                   "its own bytecode) and rewrite the file each time")
def test_two_environments_with_two_sdk_versions_alternating_compile_nothing_once_both_ran(tmp_path):
    cache = tmp_path / "sdk-code.marshal"
    _fake_sdk(tmp_path / "one", "1.0.0")
    _fake_sdk(tmp_path / "two", "2.0.0")
    _run_fake(tmp_path / "one", cache)
    _run_fake(tmp_path / "two", cache)
    runs = [_run_fake(tmp_path / site, cache) for site in ("one", "two")]
    assert [(run["value"], run["compiled"]) for run in runs] == [("1.0.0", 0), ("2.0.0", 0)]
