"""Projects the test modules load (the bundled one, one whose counters CSV is the bundled CSV with lines added, or one
a module writes into a folder of its own), and the bundled panels as settings render them."""

from __future__ import annotations

import copy
import re
import tempfile
from pathlib import Path
from typing import Callable

import pytest

from generator.artifacts import grafana_dashboards
from generator.project import load_project
from generator.resources import default_counters


def counters_with(folder: Path, added: str = "") -> Path:
    """The bundled counters CSV with the lines `added` after it, written as `folder`/counters.csv."""
    csv = folder / "counters.csv"
    csv.write_text(default_counters().read_text() + added)
    return csv


def counters_retyped(folder: Path, lines: dict[str, str]) -> Path:
    """The bundled counters CSV with the line of each field in `lines` replaced by its "type, help" text, written as
    `folder`/counters.csv beside a gpudash.yaml naming it; the settings' path."""
    rows = []
    for row in default_counters().read_text().splitlines():
        name = row.split(",")[0].strip()
        rows.append(f"{name}, {lines[name]}" if name in lines else row)
    (folder / "counters.csv").write_text("\n".join(rows) + "\n")
    (folder / "gpudash.yaml").write_text("counters: counters.csv\n")
    return folder / "gpudash.yaml"


def defined_project(folder: Path, settings: str = "", **definitions: str):
    """The project of `folder`: its gpudash.yaml of `settings` naming a definitions folder per keyword
    (dashboards=..., alarms=...), each holding one file of the keyword's name and the given text."""
    names = []
    for kind, text in definitions.items():
        (folder / kind).mkdir()
        (folder / kind / f"{kind}.py").write_text(text)
        names.append(f"  {kind}: [{kind}]\n")
    (folder / "gpudash.yaml").write_text(settings + ("definitions:\n" + "".join(names) if names else ""))
    return load_project(folder / "gpudash.yaml")


def project_fixture(added_counters: str | None = None, write: Callable[[Path], Path] | None = None):
    """A module fixture (assign it to the module-level name `project`), the project loaded once for the module: the
    bundled one; with `added_counters`, the bundled settings over the bundled CSV with those lines added; with `write`,
    the gpudash.yaml that `write(folder)` writes into a new folder."""
    @pytest.fixture(scope="module")
    def project(tmp_path_factory):
        if write is not None:
            return load_project(write(tmp_path_factory.mktemp("project")))
        if added_counters is not None:
            return load_project(None, counters_with(tmp_path_factory.mktemp("counters"), added_counters))
        return load_project()
    return project


_PANELS: dict[str, dict[str, dict]] = {}  # settings text -> {panel title: panel} of the bundled dashboards


def bundled_project(settings: str = ""):
    """The bundled project as settings of the text `settings` (naming no file of their own) load it; once per text."""
    if settings not in _PROJECTS:
        with tempfile.TemporaryDirectory() as scratch:
            (Path(scratch) / "gpudash.yaml").write_text(settings)
            _PROJECTS[settings] = load_project(Path(scratch) / "gpudash.yaml")
    return _PROJECTS[settings]


_PROJECTS: dict = {}


def _rendered(settings: str) -> dict[str, dict]:
    """The bundled dashboards' panels by title (the first of a title) as settings of the text `settings` (naming no
    file of their own) render them: rendered once per settings text in a test process. A render of every dashboard
    was most of the CPU of a test reading one panel's answers call after call; it gives the same panels every time."""
    if settings not in _PANELS:
        panels: dict[str, dict] = {}
        for dashboard in grafana_dashboards(bundled_project(settings)):
            for panel in dashboard.model["panels"]:
                panels.setdefault(panel.get("title"), panel)
        _PANELS[settings] = panels
    return _PANELS[settings]


def bundled_panels(settings: str = "") -> dict[str, dict]:
    """Every bundled panel by title as `settings` render them (_rendered); a copy: what a test does to it is not seen
    by the next."""
    return copy.deepcopy(_rendered(settings))


def panels_of(dashboards, uid: str) -> list[dict]:
    """Every panel (a collapsed row's too) of the dashboard `uid` among rendered `dashboards`, with those of its parts
    where it was cut into dashboards that each fit a ConfigMap (dashboard_parts: `<uid>-2`, `<uid>-3`, ...)."""
    part = re.compile(rf"{re.escape(uid)}(-[0-9]+)?")
    return [panel for dashboard in dashboards if part.fullmatch(dashboard.uid)
            for row in dashboard.model["panels"] for panel in (row, *row.get("panels", []))]


def bundled_panel(title: str, settings: str = "") -> dict:
    """The bundled panel `title` as `settings` render it (_rendered); a copy."""
    return copy.deepcopy(_rendered(settings)[title])


_BUILDS: list = []  # [project by value, its Grafana models as built, artifacts, the settings' folder it was built in,
# whether the build names that folder (None: not looked yet)]: this worker's latest used builds
# test_grafana_claims builds 33 projects, some again after eight others: with 8 kept it built 45 times, with 32 33 (a
# kept build of the bundled definitions holds a few MB)
KEPT_BUILDS = 32


def _as_built(artifacts) -> bytes:
    """The build's Grafana models as text, to tell whether a command changed them (anything JSON does not write by
    its repr): orjson's where it writes them (a reuse of a kept build of the bundled definitions compared them in 3 ms
    with json, 0.5 ms so), else json's."""
    import json

    models = [d.model for d in artifacts.grafana]
    try:
        import orjson

        return orjson.dumps(models, default=repr, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS
                            | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS)
    except (ImportError, TypeError):  # no orjson; or what it cannot write (integers beyond 64 bits, deep nesting)
        return json.dumps(models, default=repr).encode()


def by_value(project) -> str:
    """A project's settings, counters and definitions compared by value: its repr, in which the settings' folder is
    written as one placeholder (the same project in another folder reads the same)."""
    return repr(project).replace(str(project.settings.base_dir), "<the settings' folder>")


def builds_kept(monkeypatch) -> None:
    """Commands build the settings they are given at every run (limits.checked_build), here many times over for the
    same few settings files, and again in each test for settings alike but for the test's own folder: a project equal
    to one built before (settings, counters and definitions compared by value: their repr, in which the settings'
    folder is written as one placeholder) gets that build back, as building it again gives (a build depends on the
    project alone, but for where a cluster split over several CloudFormation templates puts its resources, which
    depends on the build before in generate's folder: such a build is never kept). The project itself is loaded at
    every run, as the command loads it. Only a build that names no folder of its settings anywhere is handed back
    (built in another folder, it is the same build; looked for when the build is first asked for again: most never
    are, and the text of a whole build took 10 ms to write). Anything else is built as the command does; a build
    that is refused raises every time (nothing is kept). The Grafana models a command was handed must come back
    unchanged."""
    from generator import limits

    check = limits.checked_build

    def checked_build(project, grafana=True, placed=None, ahead=False):
        key = (by_value(project), grafana)
        for index, kept in enumerate(_BUILDS):
            known, models, artifacts, folder, named = kept
            if known == key:
                del _BUILDS[index]
                if named is None:  # looked for once, when first asked for again (most builds never are)
                    named = kept[4] = folder in repr(artifacts)
                if named:  # it names the folder it was built in: built again, as the command does
                    break
                assert _as_built(artifacts) == models, "a command changed the build it was handed"
                _BUILDS.append(kept)  # the latest used is the last to go
                return artifacts
        artifacts = check(project, grafana=grafana, placed=placed, ahead=ahead)
        if not any("Part" in template["Metadata"]["gpudash"] for template in artifacts.cloudformation.values()):
            _BUILDS.append([key, _as_built(artifacts), artifacts, str(project.settings.base_dir), None])
            del _BUILDS[:-KEPT_BUILDS]
        return artifacts

    monkeypatch.setattr(limits, "checked_build", checked_build)
    _uids_kept(monkeypatch)
    catalogs_shared(monkeypatch)


_UIDS: dict[str, list[str]] = {}  # a project by value -> the uids of its Grafana dashboards


def _uids_kept(monkeypatch) -> None:
    """verify's dashboard ConfigMaps check renders every Grafana dashboard of the project to know their uids
    (artifacts.grafana_uids: how many parts a dashboard is cut into only its size tells) at every run where no build
    of these settings is in the default folder: a fifth of test_verify's own CPU. The uids depend on the project
    alone: one equal by value to one rendered before gets its uids back, but where they name its settings' folder."""
    from generator import artifacts

    render = artifacts.grafana_uids

    def grafana_uids(project) -> list[str]:
        key = by_value(project)
        if key not in _UIDS:
            uids = render(project)
            if any(str(project.settings.base_dir) in uid for uid in uids):
                return uids
            if len(_UIDS) >= KEPT_BUILDS:
                _UIDS.clear()
            _UIDS[key] = uids
        return list(_UIDS[key])

    monkeypatch.setattr(artifacts, "grafana_uids", grafana_uids)


_LOADED: list = []  # (what a project was loaded from, the project): this worker's latest loaded projects
_PARSED: dict = {}  # (settings text, source, folder, origin) -> the settings parsed from them
KEPT_PROJECTS = 8


def _loaded_from(settings, counters: Path | None) -> tuple:
    """What a project is loaded from, by value: the settings (their repr), the counters CSV's path and bytes, and the
    path and bytes of every file under each definitions folder. A folder or file that cannot be read: None."""
    def files(folder: Path) -> tuple:
        return tuple(sorted((str(p), p.read_bytes()) for p in folder.rglob("*")
                            if p.is_file() and "__pycache__" not in p.parts))
    csv = counters or settings.counters_path
    try:
        return (repr(settings), str(csv), csv.read_bytes(),
                *(files(folder) for kind in ("dashboards", "alarms") for folder in settings.definition_dirs(kind)))
    except OSError:
        return None


def projects_kept(monkeypatch) -> None:
    """Commands load the project at every run (cli_base.load_project_for): here hundreds of runs of the same few
    settings. A run whose settings read the same (read anew at every run, where the command finds them, with their
    errors; the line naming them printed) and whose counters CSV and definition files hold the same bytes gets the
    project loaded from them before: loading them again runs the same definitions on the same input (the bundled
    and the tests' definitions read nothing else). A project that fails to load fails every time (nothing is kept);
    a project is frozen (its notes, which commands print at each run, included). The settings found are parsed once
    per text, file, folder and origin (settings.parse_settings reads nothing else; one that fails, every time)."""
    from generator import project as projects
    from generator import settings as settings_module

    load, parse = projects.load_project, settings_module.parse_settings

    def parse_settings(text, source, base_dir, origin="given"):
        key = (text, source, str(base_dir), origin)
        if key not in _PARSED:
            if len(_PARSED) >= KEPT_PROJECTS:
                _PARSED.clear()
            _PARSED[key] = parse(text, source, base_dir, origin)
        return _PARSED[key]

    def load_project(config=None, counters=None, read=None):
        settings = projects.load_settings(config)
        key = _loaded_from(settings, counters)
        for known, project in _LOADED if key is not None else ():
            if known == key:
                if read:
                    read(settings)  # this run's: where it found them
                return project
        project = load(config, counters, read)
        if key is not None:
            _LOADED.append((key, project))
            del _LOADED[:-KEPT_PROJECTS]
        return project

    monkeypatch.setattr(projects, "load_project", load_project)
    monkeypatch.setattr(settings_module, "parse_settings", parse_settings)
    catalogs_shared(monkeypatch)


_CATALOGS: dict = {}  # a counters CSV's catalog -> the first catalog equal to it (by value) this process loaded


def catalogs_shared(monkeypatch) -> None:
    """A counters CSV loaded again (each project loads its own: hundreds of projects of different settings over the
    bundled CSV here) gives the catalog loaded before that is equal to it by value (its source, sha256 and fields:
    everything a catalog holds). promql.expression keeps its answers per catalog object (promql._ANSWERS, a
    BuildMemo), and every answer is worked out from its arguments and the catalog alone (promql reads no settings):
    projects of different settings over one CSV then share the answers their renders both ask for, as one build's
    dashboards share them, instead of each render working every PromQL expression out again (most of the CPU of
    rendering the Grafana dashboards of a project never rendered before)."""
    from generator import catalog as catalogs
    from generator import project as projects

    load = catalogs.load_counters

    def load_counters(path):
        loaded = load(path)
        if loaded not in _CATALOGS and len(_CATALOGS) >= KEPT_PROJECTS:
            _CATALOGS.clear()
        return _CATALOGS.setdefault(loaded, loaded)

    load_counters.unshared = load  # what loads each CSV into a catalog of its own (tests undo the sharing with it)
    monkeypatch.setattr(catalogs, "load_counters", load_counters)
    monkeypatch.setattr(projects, "load_counters", load_counters)


def fleet_settings(folder: Path, clusters: list[tuple[str, str, str]], settings: str = "") -> Path:
    """`folder`/gpudash.yaml: `settings`, then the clusters, each (name, Region, more of its keys after a comma)."""
    import json

    lines = "".join(f"  - {{name: {json.dumps(name)}, region: {region}{more}}}\n" for name, region, more in clusters)
    path = folder / "gpudash.yaml"
    path.write_text(f"{settings}clusters:\n{lines}")
    return path


def fleet_build(folder: Path, clusters: list[tuple[str, str, str]], settings: str = ""):
    """The build of the bundled definitions for `clusters` under `settings` (fleet_settings) without its Grafana
    dashboards: build() renders them apart from what the tests of the CloudWatch alarms, the CloudFormation templates
    and the agents' ConfigMaps read, and they were half of each build's CPU there."""
    from generator.artifacts import build

    return build(load_project(fleet_settings(folder, clusters, settings)), grafana=False)
