"""Inputs that used to crash, hang or pass silently: folders that cannot be read, definitions that
exit or loop, standard output that is closed or full, build folders that are links or mount points."""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from generator.output import write_files
from generator.resources import default_config
from generator.settings import _schema, parse_settings
from generator.errors import InputError, OutputError
from tests.conftest import REPO

GPUDASH = [sys.executable, "-c", "from generator.cli import run; run()"]


def _unreadable_folder(tmp_path: Path) -> Path:
    """A folder that exists but cannot be listed by this user."""
    if os.geteuid() != 0:
        folder = tmp_path / "locked"
        folder.mkdir()
        folder.chmod(0)
        return folder
    for candidate in ("/proc/1/map_files",):  # root may list anything else
        try:
            os.listdir(candidate)
        except PermissionError:
            return Path(candidate)
        except OSError:
            continue
    pytest.skip("no folder here is unreadable for root")


def test_an_unreadable_definitions_folder_is_an_error_not_empty(tmp_path, cli):
    folder = _unreadable_folder(tmp_path)
    try:
        config = tmp_path / "gpudash.yaml"
        config.write_text(f"definitions:\n  dashboards: {folder}\n")
        code, stdout, stderr = cli("generate", "--config", str(config), "--out", str(tmp_path / "build"))
    finally:
        if folder.is_relative_to(tmp_path):
            folder.chmod(stat.S_IRWXU)
    assert code == 2, stdout + stderr
    assert f"{folder}: cannot read the dashboards folder" in stderr
    assert not (tmp_path / "build").exists()


@pytest.mark.parametrize("body, line, says", [
    ("import sys\n\nsys.exit(0)\n", 3, "the definition called sys.exit(0)"),
    ("def dashboards(ctx):\n    raise SystemExit(0)\n", 2, "dashboards(ctx) called sys.exit(0)"),
])
def test_sys_exit_in_a_definition_is_an_error(tmp_path, cli, body, line, says):
    (tmp_path / "dashboards").mkdir()
    (tmp_path / "dashboards" / "quit.py").write_text(body)
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  dashboards: dashboards\n")
    code, _, stderr = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "b"))
    assert code == 2
    assert f"quit.py:{line}: {says}" in stderr


def test_an_endless_definition_is_stopped_with_its_file_and_line(tmp_path):
    """A real process: stopping a definition leaves a watchdog that may end the process, which must not be the
    test worker's."""
    (tmp_path / "dashboards").mkdir()
    (tmp_path / "dashboards" / "spin.py").write_text("def dashboards(ctx):\n    n = 0\n    while True:\n"
                                                      "        n += 1\n")
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  dashboards: dashboards\n")
    env = {**os.environ, "GPUDASH_DEFINITION_TIME_LIMIT": "0.1", "PYTHONPATH": str(REPO)}
    result = subprocess.run([*GPUDASH, "generate", "--out", "b"], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert "spin.py:" in result.stderr and "did not finish within 0.1 s" in result.stderr
    assert "GPUDASH_DEFINITION_TIME_LIMIT" in result.stderr  # how to give it longer


def test_a_definition_that_swallows_every_exception_is_still_ended(tmp_path):
    """A real process: a definition that will not stop ends the process itself."""
    (tmp_path / "dashboards").mkdir()
    (tmp_path / "dashboards" / "spin.py").write_text("while True:\n    try:\n        while True:\n            pass\n"
                                                      "    except:\n        pass\n")
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  dashboards: dashboards\n")
    (tmp_path / "build").mkdir()
    env = {**os.environ, "GPUDASH_DEFINITION_TIME_LIMIT": "0.05", "PYTHONPATH": str(REPO)}  # 6 repeats as often
    result = subprocess.run([*GPUDASH, "generate", "--out", "build"], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert "spin.py:" in result.stderr and "would not stop" in result.stderr
    assert result.stderr.count("error:") == 1 and "Traceback" not in result.stderr
    assert list((tmp_path / "build").iterdir()) == []


def test_a_repeat_firing_inside_gpudash_still_names_the_definitions_line(tmp_path, monkeypatch, capfd):
    """On a busy machine the time limit's repeat can interrupt gpudash's own code (its handler, still running for
    the previous repeat): the message names the definition's line that called into it, not gpudash's."""
    import signal

    from generator import definitions

    spin = tmp_path / "dashboards" / "spin.py"
    inside_gpudash = {}
    exec(compile("import sys\ndef interrupted():\n    return sys._getframe()\n", definitions.__file__, "exec"),
         inside_gpudash)
    user = {"interrupted": inside_gpudash["interrupted"]}
    exec(compile("\n\nframe = interrupted()\n", str(spin), "exec"), user)  # the call on spin.py's line 3
    monkeypatch.chdir(tmp_path)

    def exit_(code):
        raise SystemExit(code)

    monkeypatch.setattr(os, "_exit", exit_)
    with definitions._deadline(3600):
        expired = signal.getsignal(signal.SIGALRM)
        for _ in range(definitions.STUBBORN_FIRINGS):
            with pytest.raises(definitions.TimeLimit):
                expired(signal.SIGALRM, user["frame"])
        with pytest.raises(SystemExit) as ended:
            expired(signal.SIGALRM, user["frame"])
    assert ended.value.code == 2
    err = capfd.readouterr().err
    assert "error: dashboards/spin.py:3: the definition did not finish" in err, err


def _gpudash(*args: str, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("GPUDASH_CONFIG", None)
    return subprocess.run([*GPUDASH, *args], cwd=cwd, env=env, capture_output=True, timeout=120, **kwargs)


def test_a_closed_pipe_is_not_a_crash_and_keeps_the_exit_code(tmp_path):
    # `gpudash metrics | head -1`: the reader goes away after one line
    reader = subprocess.Popen([*GPUDASH, "metrics"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    first = reader.stdout.readline()
    reader.stdout.close()
    stderr = reader.stderr.read().decode()
    assert reader.wait(timeout=60) == 0, stderr
    assert first.startswith(b"FIELD")
    assert "BrokenPipe" not in stderr and "internal error" not in stderr and "Exception ignored" not in stderr


def test_a_closed_pipe_keeps_a_failing_check_failing(tmp_path):
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "manifest.json").write_text("{}")
    reader = subprocess.Popen([*GPUDASH, "generate", "--check"], cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPO)})
    reader.stdout.close()
    stderr = reader.stderr.read().decode()
    assert reader.wait(timeout=60) == 1, stderr
    assert "internal error" not in stderr and "Traceback" not in stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
@pytest.mark.parametrize("args", [("metrics",), ("metrics", "--output", "json"), ("lint", "--rules")])
def test_standard_output_on_a_full_device_is_an_output_error(tmp_path, args):
    with open("/dev/full", "w") as full:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        result = subprocess.run([*GPUDASH, *args], cwd=tmp_path, stdout=full, stderr=subprocess.PIPE, env=env,
                                text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "error: cannot write to standard output (No space left on device)" in result.stderr
    assert result.stderr.count("error:") == 1 and "Traceback" not in result.stderr


def test_deep_yaml_is_an_input_error():
    with pytest.raises(InputError, match="nested too deeply"):
        parse_settings("labels: " + "[" * 50_000 + "]" * 50_000, "deep.yaml", Path("."))


def _pattern_paths(node, path=()):
    if isinstance(node, dict):
        if "pattern" in node:
            yield path, node
        for key, value in node.items():
            if key != "examples":
                yield from _pattern_paths(value, (*path, key))


@pytest.mark.parametrize("path, node", list(_pattern_paths(_schema())), ids=lambda v: "/".join(map(str, v))
                         if isinstance(v, tuple) else "")
def test_no_schema_pattern_accepts_a_trailing_newline(path, node):
    from generator.settings import _validator

    example = node["examples"][0] if "examples" in node else node.get("default")
    assert isinstance(example, str), f"{path}: give the pattern an example"
    assert not list(_validator().descend(example, node)), f"{path}: the example {example!r} must be valid"
    assert list(_validator().descend(example + "\n", node)), f"{path}: accepts {example!r} + newline"


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
def test_thresholds_are_finite(value):
    with pytest.raises(InputError, match="not a finite number"):
        parse_settings(f"thresholds:\n  gpu_util_percent: {{warning: {value}, critical: 98}}\n", "s.yaml", Path("."))
    with pytest.raises(InputError, match="s.yaml:2: alarms.framebuffer_free_mib"):
        parse_settings(f"alarms:\n  framebuffer_free_mib: {value}\n", "s.yaml", Path("."))


def test_warning_equal_to_critical_is_allowed_above_is_not():
    settings = parse_settings("thresholds:\n  gpu_util_percent: {warning: 95, critical: 95}\n", "s", Path("."))
    assert math.isclose(settings.levels("gpu_util_percent").warning, 95)
    with pytest.raises(InputError, match="above the critical level"):
        parse_settings("thresholds:\n  gpu_util_percent: {warning: 96, critical: 95}\n", "s", Path("."))


# --- the build folder -----------------------------------------------------------------------------

FILES = {"grafana/a.json": b"{}\n", "k8s/b.yaml": b"b: 1\n"}


def test_a_symlinked_build_stays_a_link_and_its_target_is_written(tmp_path):
    target = tmp_path / "elsewhere" / "build"
    target.mkdir(parents=True)
    link = tmp_path / "build"
    link.symlink_to(target)
    write_files(link, FILES)
    write_files(link, {"grafana/a.json": b"{}\n"})  # a second run replaces the target's content
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file()) == \
        ["grafana/a.json", "manifest.json"]
    assert [p.name for p in tmp_path.iterdir()] == ["elsewhere", "build"] or \
        sorted(p.name for p in tmp_path.iterdir()) == ["build", "elsewhere"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["build"]  # no staging folders left


def test_a_rebuild_carries_unchanged_files_over_and_shares_nothing_else(tmp_path):
    """Files the previous build holds unchanged are carried over (hard-linked, not created again); the new
    build still owns every file: one edited by hand, named from outside the build too, replaced by a symlink
    or given another mode is written afresh, and writing the new build reaches nothing outside it."""
    out = tmp_path / "build"
    files = {f"k8s/{name}.yaml": f"{name}: 1\n".encode() for name in ("a", "edited", "shared", "linked", "mode")}
    write_files(out, files)
    carried = (out / "k8s/a.yaml").stat().st_ino
    (out / "k8s/edited.yaml").write_bytes(b"edited: 2\n")  # same size, other bytes
    outside = tmp_path / "shared.yaml"
    os.link(out / "k8s/shared.yaml", outside)
    elsewhere = tmp_path / "linked.yaml"
    elsewhere.write_bytes(b"linked: 1\n")
    (out / "k8s/linked.yaml").unlink()
    (out / "k8s/linked.yaml").symlink_to(elsewhere)
    (out / "k8s/mode.yaml").chmod(0o600)
    write_files(out, files, force=True)  # the edited file is discarded on purpose
    fresh_mode = stat.S_IMODE((out / "k8s/a.yaml").stat().st_mode)
    for relative, data in files.items():
        path = out / relative
        assert path.read_bytes() == data and not path.is_symlink(), relative
        assert path.stat().st_nlink == 1 and stat.S_IMODE(path.stat().st_mode) == fresh_mode, relative
    assert (out / "k8s/a.yaml").stat().st_ino == carried
    for relative in files:
        (out / relative).write_bytes(b"changed\n")
    assert outside.read_bytes() == b"shared: 1\n" and elsewhere.read_bytes() == b"linked: 1\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build", "linked.yaml", "shared.yaml"]


def test_links_in_the_previous_build_are_named_as_files_whatever_they_lead_to(tmp_path):
    """A link in the previous build to nothing, to a folder, or to itself (a loop of links, whose target cannot be
    read) is a file gpudash did not write, named as such; a listed file replaced by any of them loses nothing."""
    from generator.output import not_as_written

    out = tmp_path / "build"
    write_files(out, {"k8s/a.yaml": b"a: 1\n", "k8s/b.yaml": b"b: 1\n", "k8s/c.yaml": b"c: 1\n"})
    (out / "k8s/a.yaml").unlink()
    (out / "k8s/a.yaml").symlink_to("a.yaml")  # listed, now a loop
    (out / "k8s/b.yaml").unlink()
    (out / "k8s/b.yaml").symlink_to(tmp_path)  # listed, now a link to a folder
    (out / "loop").symlink_to("loop")
    (out / "gone").symlink_to(tmp_path / "nothing")
    (out / "folder").symlink_to(tmp_path)
    assert not_as_written(out) == (["folder", "gone", "loop"], [])
    with pytest.raises(OutputError, match="3 file\\(s\\) gpudash did not write"):
        write_files(out, {"k8s/c.yaml": b"c: 1\n"})


def _bytes_read() -> int:
    with open("/proc/self/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("rchar:"))


def _settled_at_once(monkeypatch) -> None:
    """A file changed before it was read counts as settled, whatever stamps change times here."""
    import generator.output as output

    monkeypatch.setattr(output, "SETTLED_NS", 0)
    monkeypatch.setattr(output, "FINE_SETTLED_NS", 0)


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="needs Linux's per-process read count")
def test_a_rebuild_reads_the_previous_build_once(tmp_path, monkeypatch):
    """Rebuilding over a build whose files are unchanged reads each of them once (to find out that replacing them
    loses nothing), not a second time to share it: 1,000 clusters' 143 MB were read twice."""
    import generator.output as output

    out = tmp_path / "build"
    files = {f"k8s/{n}.yaml": bytes([97 + n % 26]) * 200_000 for n in range(20)}
    write_files(out, files)
    time.sleep(0.1)  # older than a tick of the clock that stamps change times
    _settled_at_once(monkeypatch)  # a file changed before the read counts as settled
    _rebuilt_reading_once(out, files)


def _rebuilt_reading_once(out: Path, files: dict[str, bytes]) -> None:
    """Rebuilding `out` with its own files reads each of them once, and shares none with the build before."""
    before = _bytes_read()
    write_files(out, files)
    read = _bytes_read() - before
    assert sum(map(len, files.values())) <= read < 1.2 * sum(map(len, files.values()))
    assert all((out / relative).stat().st_nlink == 1 and (out / relative).read_bytes() == data
               for relative, data in files.items())


def _statuses(top: Path) -> dict[str, tuple[int, ...]]:
    """The folder `top` and each entry below it: inode, mode, size, modification and change time."""
    return {str(path.relative_to(top)): (info.st_ino, info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
            for path in [top, *top.rglob("*")] for info in [path.lstat()]}


def test_a_rebuild_of_the_build_the_folder_holds_writes_nothing(tmp_path):
    """A rebuild whose files the folder holds already, as the swap would leave them, leaves the folder as it is: no
    folder made again, no file linked, nothing made beside it (each folder the swap removed waited for the disk)."""
    out = tmp_path / "build"
    files = {"k8s/a.yaml": b"a: 1\n", "grafana/provisioning/b.yaml": b"b: 1\n", "c.json": b"{}\n"}
    write_files(out, files)
    before = _statuses(out)
    write_files(out, files)
    assert _statuses(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build"]


def _other_mode(path: Path) -> None:
    path.chmod(0o700)


def _linked_from_outside(path: Path) -> None:
    os.link(path, path.parent.parent.parent / "outside.yaml")


@pytest.mark.parametrize("change", [
    lambda out: _other_mode(out),
    lambda out: _other_mode(out / "k8s"),
    lambda out: (out / "empty").mkdir(),
    lambda out: _linked_from_outside(out / "k8s/a.yaml"),
    lambda out: (out / "k8s/a.yaml").chmod(0o600),
], ids=["build folder's mode", "a folder's mode", "an empty folder", "a file named outside", "a file's mode"])
def test_a_folder_holding_the_build_otherwise_than_the_swap_leaves_it_is_written_as_before(tmp_path, change):
    """The same files, but the folder is not as the swap would leave it (a mode, an empty folder no build lists, a file
    another path names): the build is written as before, and the folder is then as a first build leaves it."""
    out = tmp_path / "build"
    files = {"k8s/a.yaml": b"a: 1\n", "k8s/b.yaml": b"b: 1\n"}
    write_files(out, files)
    fresh = {path: info[1:3] for path, info in _statuses(out).items()}  # modes and sizes of a first build
    change(out)
    write_files(out, files)
    assert {path: info[1:3] for path, info in _statuses(out).items()} == fresh
    assert all((out / relative).stat().st_nlink == 1 for relative in files)


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="needs Linux's per-process read count")
def test_a_rebuild_of_the_same_build_reads_again_where_change_times_are_not_the_kernels(tmp_path, monkeypatch):
    """Where the file system's change times are not stamped by this kernel (FAT, NFS), a file's status read again
    unchanged does not show its bytes unchanged: before the folder is left as it is, every file is read again."""
    import generator.output as output

    out = tmp_path / "build"
    files = {f"k8s/{n}.yaml": bytes([97 + n]) * 200_000 for n in range(5)}
    write_files(out, files)
    time.sleep(0.1)  # older than a tick of the clock that stamps change times
    _settled_at_once(monkeypatch)
    before_statuses = _statuses(out)
    monkeypatch.setattr(output, "file_system_kinds", lambda device: {"vfat"})
    monkeypatch.setattr(output, "_same_status", lambda info, held: True)  # a status that would not show an edit
    before = _bytes_read()
    write_files(out, files)
    assert _bytes_read() - before >= 2 * sum(map(len, files.values()))
    assert _statuses(out) == before_statuses


def _templates(count: int) -> tuple[dict[str, dict], dict[str, bytes]]:
    """`count` CloudFormation templates of one alarm each, and their files."""
    from generator.serialize import to_json

    templates = {f"s{n}": {"Resources": {f"Alarm{n}": {"Type": "AWS::CloudWatch::Alarm", "Properties": {
        "AlarmName": f"a{n}", "AlarmDescription": "x" * 200_000}}}} for n in range(count)}
    return templates, {f"cloudformation/{stack}.json": to_json(template) for stack, template in templates.items()}


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="needs Linux's per-process read count")
def test_a_rebuild_reads_the_previous_builds_templates_once(tmp_path, monkeypatch):
    """generate reads the previous build's templates to find resources renamed in them (renamed_resources), then its
    files to find edits (not_as_written): a template found holding its new bytes the first time is not read the second
    time while its status is the one it had (1,000 clusters' 71 MB of templates were read twice)."""
    import generator.output as output

    out = tmp_path / "build"
    templates, files = _templates(10)
    write_files(out, files)
    time.sleep(0.1)  # older than a tick of the clock that stamps change times
    _settled_at_once(monkeypatch)
    known = {}
    before = _bytes_read()
    assert output.renamed_resources(out, templates, files, list(templates), known) == []
    write_files(out, files, known=known)
    read = _bytes_read() - before
    assert sum(map(len, files.values())) <= read < 1.2 * sum(map(len, files.values()))
    assert all((out / relative).stat().st_nlink == 1 and (out / relative).read_bytes() == data
               for relative, data in files.items())


def test_a_template_edited_after_it_was_read_for_renamed_resources_is_read_again(tmp_path, monkeypatch):
    """A template found holding its new bytes, then edited (same size, other bytes) before the previous build is
    checked for edits: its change time tells, it is read again and the build is not written over the edit."""
    import generator.output as output

    out = tmp_path / "build"
    templates, files = _templates(2)
    write_files(out, files)
    time.sleep(0.1)
    _settled_at_once(monkeypatch)
    known = {}
    assert output.renamed_resources(out, templates, files, list(templates), known) == []
    assert sorted(known) == sorted(files) and all(held is not None for _, held in known.values())
    edited = files["cloudformation/s1.json"].replace(b"xxx", b"yyy", 1)
    (out / "cloudformation/s1.json").write_bytes(edited)
    with pytest.raises(OutputError, match=r"1 file\(s\) changed since gpudash wrote them \(cloudformation/s1.json\)"):
        write_files(out, files, known=known)
    assert (out / "cloudformation/s1.json").read_bytes() == edited


def _built_two_files(tmp_path: Path, monkeypatch, settled: bool) -> tuple[Path, dict[str, bytes]]:
    """A build of two small files, with every file read after it counted as settled (`settled`) or as changed just
    before it was read, whatever stamps change times here."""
    import generator.output as output

    out = tmp_path / "build"
    files = {f"k8s/{name}.yaml": f"{name}: 1\n".encode() for name in ("a", "b")}
    write_files(out, files)
    time.sleep(0.1)
    if settled:
        _settled_at_once(monkeypatch)
    else:
        monkeypatch.setattr(output, "SETTLED_NS", 60 * 10**9)
        monkeypatch.setattr(output, "FINE_SETTLED_NS", 60 * 10**9)
    return out, files


@pytest.mark.parametrize("settled", [True, False])
@pytest.mark.parametrize("force", [False, True])
def test_a_file_edited_after_the_previous_build_was_read_is_not_shared(tmp_path, monkeypatch, settled, force):
    """A file edited between the read that found it unchanged and the new build's writing (same size, other bytes):
    without --force the edit is kept and the build not written (it was written afresh, the edit lost); with --force
    the edit is discarded, and the file is written afresh, not linked into the new build (read again, a file changed
    in the seconds before it was read, or told by its change time)."""
    import generator.output as output

    out, files = _built_two_files(tmp_path, monkeypatch, settled)
    real_fill, real_refuse_losing = output._fill, output._refuse_losing

    def edit_then_fill(*args, **kwargs):
        (out / "k8s/b.yaml").write_bytes(b"b: 2\n")
        return real_fill(*args, **kwargs)

    def read_then_edit(*args, **kwargs):
        taken = real_refuse_losing(*args, **kwargs)
        (out / "k8s/b.yaml").write_bytes(b"b: 2\n")
        return taken

    # without --force, the edit comes just after the read, before the check that the folder holds this very build
    # (_holds_the_build: it then does not); with --force, nothing is read before the new build is staged
    if force:
        monkeypatch.setattr(output, "_fill", edit_then_fill)
    else:
        monkeypatch.setattr(output, "_refuse_losing", read_then_edit)
    carried = (out / "k8s/a.yaml").stat().st_ino
    if not force:
        with pytest.raises(OutputError, match=r"were added or changed \(k8s/b.yaml\)"):
            write_files(out, files)
        assert (out / "k8s/b.yaml").read_bytes() == b"b: 2\n" and (out / "k8s/a.yaml").stat().st_ino == carried
        return
    edited = (out / "k8s/b.yaml").stat().st_ino
    write_files(out, files, force=True)
    assert (out / "k8s/b.yaml").read_bytes() == b"b: 1\n" and (out / "k8s/b.yaml").stat().st_ino != edited
    assert (out / "k8s/a.yaml").stat().st_ino == carried


@pytest.mark.parametrize("mount", [False, True], ids=["build folder", "mount point"])
def test_a_file_a_person_adds_while_the_build_is_written_is_not_lost(tmp_path, monkeypatch, mount):
    """A person saves a kustomization.yaml into the build folder while the new build is staged (after the check
    that the previous build holds nothing gpudash did not write): the previous build was replaced with it inside,
    deleted, exit 0. The previous build is read again once moved aside: the file is there, so the previous build
    goes back as it is, and the write fails saying what it would have lost. (A mount point's entries are moved
    aside one by one: the same.)"""
    import generator.output as output

    out = tmp_path / "build"
    files = {"k8s/a.yaml": b"a: 1\n", "dashboards/x.json": b"{}\n"}
    write_files(out, files)
    real_fill = output._fill

    def fill_then_person(*args, **kwargs):
        linked = real_fill(*args, **kwargs)
        (out / "kustomization.yaml").write_text("resources: []\n")
        return linked

    monkeypatch.setattr(output, "_fill", fill_then_person)
    if mount:
        monkeypatch.setattr(output.os.path, "ismount", lambda path: Path(path) == out)
    with pytest.raises(OutputError, match=r"were added or changed \(kustomization.yaml\)"):
        write_files(out, {**files, "k8s/a.yaml": b"a: 2\n"})
    assert (out / "kustomization.yaml").read_text() == "resources: []\n"
    assert (out / "k8s/a.yaml").read_bytes() == b"a: 1\n"
    assert sorted(p.name for p in out.iterdir()) == ["dashboards", "k8s", "kustomization.yaml", "manifest.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build"]


def test_a_rebuild_links_nothing_a_symlinked_folder_leads_to(tmp_path):
    """A folder of the previous build replaced by a symlink: the same bytes found through it are a file
    outside the build, written afresh in the new build and left as they were."""
    out = tmp_path / "build"
    files = {"k8s/a.yaml": b"a: 1\n", "grafana/provisioning/b.yaml": b"b: 1\n"}
    write_files(out, files)
    outside = tmp_path / "outside"
    outside.mkdir()
    for folder in ("k8s", "grafana"):
        (out / folder).rename(outside / folder)
        (out / folder).symlink_to(outside / folder)
    write_files(out, files)
    for relative, data in files.items():
        assert not (out / relative).parent.is_symlink() and (out / relative).stat().st_nlink == 1, relative
        (out / relative).write_bytes(b"changed\n")
        assert (outside / relative).read_bytes() == data and (outside / relative).stat().st_nlink == 1, relative


def test_a_folder_with_another_tools_manifest_is_not_replaced(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "manifest.json").write_text('{"name": "app", "files": {}}')
    (site / "index.html").write_text("x")
    with pytest.raises(OutputError, match="did not write"):
        write_files(site, FILES)
    assert sorted(p.name for p in site.iterdir()) == ["index.html", "manifest.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


def _mount(folder: Path, size: str) -> bool:
    if os.geteuid() != 0:
        return False
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                            capture_output=True)
    return result.returncode == 0


def test_a_mount_point_is_written_inside(tmp_path):
    mount = tmp_path / "build"
    mount.mkdir()
    if not _mount(mount, "1m"):
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        write_files(mount, FILES)
        write_files(mount, {"grafana/c.json": b"{}\n"})
        assert os.path.ismount(mount)
        assert sorted(str(p.relative_to(mount)) for p in mount.rglob("*") if p.is_file()) == \
            ["grafana/c.json", "manifest.json"]
        assert sorted(p.name for p in tmp_path.iterdir()) == ["build"]
        # a build too large for the mount fails and leaves the previous one as it was
        before = {p: p.read_bytes() for p in mount.rglob("*") if p.is_file()}
        with pytest.raises(OutputError, match="cannot write the build"):
            write_files(mount, {"big.bin": b"x" * 2_000_000})
        assert {p: p.read_bytes() for p in mount.rglob("*") if p.is_file()} == before
        assert sorted(p.name for p in mount.iterdir()) == ["grafana", "manifest.json"]
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_a_failed_swap_puts_the_previous_build_back_and_leaves_nothing(tmp_path, monkeypatch):
    out = tmp_path / "build"
    write_files(out, FILES)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    real_replace = os.replace

    def refuse_the_second_rename(source, destination):
        if Path(source).name.startswith(".build.new-"):
            raise OSError(28, "No space left on device", str(destination))
        return real_replace(source, destination)

    monkeypatch.setattr(os, "replace", refuse_the_second_rename)
    with pytest.raises(OutputError):
        write_files(out, {"grafana/z.json": b"{}\n"})
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build"]  # no empty .build.old-* folder


def test_a_failed_move_into_a_mount_point_leaves_it_as_it_was(tmp_path, monkeypatch):
    """A folder that cannot be renamed (a mount point) is filled entry by entry: a failure part way takes
    every entry moved in back out, the manifest too, so the empty folder stays empty."""
    out = tmp_path / "build"
    out.mkdir()
    real_replace, real_ismount = os.replace, os.path.ismount
    monkeypatch.setattr(os.path, "ismount", lambda path: Path(path) == out or real_ismount(path))

    def refuse_the_last_entry(source, destination):
        if Path(destination) == out / "prometheus":
            raise OSError(28, "No space left on device", str(destination))
        return real_replace(source, destination)

    monkeypatch.setattr(os, "replace", refuse_the_last_entry)
    with pytest.raises(OutputError):
        write_files(out, {**FILES, "prometheus/r.yaml": b"r: 1\n"})
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("failing", ["cloudwatch/dashboards/d39.json", "k8s/c9.yaml", "prometheus/r.yaml"])
def test_a_file_that_cannot_be_written_leaves_the_previous_build_and_no_folder(tmp_path, monkeypatch, failing):
    """Files are written from two threads, each holding whole folders: a file that cannot be created, in
    either one, fails the build, the previous build stays as it was, and no staging folder is left."""
    out = tmp_path / "build"
    files = {**{f"cloudwatch/dashboards/d{i}.json": b"{}\n" for i in range(40)},
             **{f"k8s/c{i}.yaml": b"c: 1\n" for i in range(10)}, "prometheus/r.yaml": b"r: 1\n"}
    write_files(out, files)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    real_open = os.open

    def no_space_for_one_file(path, flags, *args, **kwargs):
        if str(path).endswith(failing) and flags & os.O_CREAT:
            raise OSError(28, "No space left on device", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", no_space_for_one_file)
    changed = {relative: data + b"\n" for relative, data in files.items()}  # every file created anew
    with pytest.raises(OutputError, match="No space left on device"):
        write_files(out, changed)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    with pytest.raises(OutputError, match="No space left on device"):
        write_files(tmp_path / "first", changed)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build"]
    monkeypatch.undo()
    write_files(out, changed)
    written = {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert written.pop("manifest.json") and written == changed


def test_a_build_that_cannot_be_moved_aside_leaves_no_empty_folder(tmp_path, monkeypatch):
    out = tmp_path / "build"
    write_files(out, FILES)
    real_replace = os.replace

    def refuse_moving_the_build(source, destination):
        if Path(source) == out:
            raise OSError(13, "Permission denied", str(source))
        return real_replace(source, destination)

    monkeypatch.setattr(os, "replace", refuse_moving_the_build)
    with pytest.raises(OutputError):
        write_files(out, {"grafana/z.json": b"{}\n"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build"]


def test_the_bundled_settings_pass_the_strict_checks():
    settings = parse_settings(default_config().read_text(), "bundled", default_config().parent)
    assert settings.clusters and json.dumps(settings.raw)


def test_a_pipe_given_as_a_file_is_refused_not_waited_on(tmp_path, cli):
    fifo = tmp_path / "counters.csv"
    os.mkfifo(fifo)
    code, _, stderr = cli("generate", "--csv", str(fifo), "--out", str(tmp_path / "b"))
    assert code == 2 and f"{fifo}: counters CSV is a pipe or socket, not a file" in stderr


def _property_paths(node, root, path=()):
    from generator.settings import _resolve

    node = _resolve(node, root)
    for key, sub in node.get("properties", {}).items():
        yield (*path, key)
        yield from _property_paths(sub, root, (*path, key))


@pytest.mark.parametrize("path", list(_property_paths(_schema(), _schema())), ids="/".join)
def test_every_settings_key_says_what_to_write_instead(path):
    from generator.settings import SCHEMA_HINT

    document = {"zz_unknown": 1}  # wrong for every key: not a scalar, and an unknown key in a mapping
    for key in reversed(path):
        document = {key: document}
    text = json.dumps(document)
    with pytest.raises(InputError) as error:
        parse_settings(text, "s.yaml", Path("."))
    assert error.value.where == "s.yaml:1"
    assert error.value.hint != SCHEMA_HINT and error.value.hint.startswith(("write", "add", "remove", "did you mean")), \
        (path, str(error.value))


def test_settings_from_a_shell_pipe_are_read(tmp_path):
    result = subprocess.run(["bash", "-c", f'"{sys.executable}" -c "from generator.cli import run; run()" '
                             "generate --out b --config <(printf 'clusters: [{name: piped, region: eu-west-1}]\\n')"],
                            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "b" / "cloudwatch" / "dashboards" / "gpudash-piped-overview.json").is_file()


def test_a_dangling_link_to_a_definition_is_an_error(tmp_path, cli):
    (tmp_path / "dashboards").mkdir()
    (tmp_path / "dashboards" / "training.py").symlink_to(tmp_path / "moved" / "training.py")
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  dashboards: dashboards\n")
    code, _, stderr = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "b"))
    assert code == 2 and "training.py: a link to a definition that does not exist" in stderr


@pytest.mark.parametrize("args, code", [
    (("generate", "--out", "build"), 0),                      # stderr carries the notes, stdout the summary
    (("lint", "--disable", "GF999"), 2),                      # a usage error, told on stderr
    (("generate", "--check", "--out", "stale"), 1),           # a difference, listed on stdout
], ids=["generate", "usage-error", "check"])
def test_closed_output_and_error_streams_keep_the_exit_code(tmp_path, args, code):
    # `gpudash ... 2>&1 | head -0`: both streams end in a pipe nobody reads
    (tmp_path / "stale").mkdir()
    (tmp_path / "stale" / "manifest.json").write_text("{}")
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        env.pop("GPUDASH_CONFIG", None)
        result = subprocess.run([*GPUDASH, *args], cwd=tmp_path, stdout=write_end, stderr=write_end, env=env,
                                timeout=120)
    finally:
        os.close(write_end)
    assert result.returncode == code
    if code == 0:
        assert (tmp_path / "build" / "manifest.json").is_file()  # the work was done whole


@pytest.mark.parametrize("closed", [">&-", "2>&-", ">&- 2>&-"], ids=["output", "error", "both"])
@pytest.mark.parametrize("args, code", [
    (("generate", "--out", "build"), 0),
    (("lint", "--disable", "GF999"), 2),
    (("generate", "--check", "--out", "stale"), 1),
], ids=["generate", "usage-error", "check"])
def test_output_and_error_descriptors_closed_at_start_keep_the_exit_code(tmp_path, args, code, closed):
    """`gpudash generate --out build >&-` (a script, or a service started with its descriptors closed): Python starts
    with no sys.stdout (or sys.stderr), and generate wrote the build, then ended in a traceback, exit 1."""
    (tmp_path / "stale").mkdir()
    (tmp_path / "stale" / "manifest.json").write_text("{}")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("GPUDASH_CONFIG", None)
    result = subprocess.run(["sh", "-c", f'exec "$@" {closed}', "sh", *GPUDASH, *args], cwd=tmp_path, env=env,
                            capture_output=True, timeout=120)
    assert result.returncode == code, result
    if code == 0:
        assert (tmp_path / "build" / "manifest.json").is_file()


def _at_most_2_gib() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.mark.parametrize("path, kind, code", [
    ("manifest.json", "fifo", 2), ("manifest.json", "/dev/zero", 2),
    ("cloudformation/gpudash-cluster-gpu-cluster.json", "fifo", 2),
    ("cloudformation/gpudash-cluster-gpu-cluster.json", "/dev/zero", 0),
])
def test_a_pipe_or_device_in_the_previous_build_is_not_read_without_end(tmp_path, cli, path, kind, code):
    """The previous build's manifest.json or a CloudFormation template it wrote replaced by a named pipe nobody writes
    (generate waited for ever) or a link to /dev/zero (read until memory ran out: "internal error: MemoryError"). Each
    is read as the input files are (reading.read_bytes): a manifest so is no gpudash build's, a template a file
    changed since gpudash wrote it (exit 2, the folder as it was), or a link standing for it, which loses nothing
    (the build is written, the link replaced by the file)."""
    out = tmp_path / "build"
    assert cli("generate", "--out", str(out))[0] == 0
    (out / path).unlink()
    if kind == "fifo":
        os.mkfifo(out / path)
    else:
        (out / path).symlink_to(kind)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("GPUDASH_CONFIG", None)
    result = subprocess.run([*GPUDASH, "generate", "--out", str(out)], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=60, preexec_fn=_at_most_2_gib)
    assert result.returncode == code and "internal error" not in result.stderr, result.stderr
    if code == 0:
        assert stat.S_ISREG(os.lstat(out / path).st_mode)
        return
    assert f"error: {out}: " in result.stderr, result.stderr
    assert os.path.islink(out / path) if kind != "fifo" else stat.S_ISFIFO(os.lstat(out / path).st_mode)


@contextlib.contextmanager
def _flooding_server():
    """The URL of a server on 127.0.0.1 that answers every request 200 with a JSON body without end (chunk after
    chunk, as fast as the socket takes it), as a broken proxy or server in front of an API could."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stop = threading.Event()

    def flood(connection: socket.socket) -> None:
        with connection:
            connection.recv(65536)
            chunk = b"[" + b'{"uid": "x"},' * 5000
            try:
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                   b"Transfer-Encoding: chunked\r\n\r\n")
                while not stop.is_set():
                    connection.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except OSError:
                return

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=flood, args=(connection,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        listener.close()


@pytest.mark.parametrize("command, env", [
    (("push",), {"GRAFANA_TOKEN": "t", "GRAFANA_URL": "{url}"}),
    (("apply", "--dry-run"), {"AWS_ENDPOINT_URL": "{url}", "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
                              "AWS_SECRET_ACCESS_KEY": "secret"}),
], ids=["Grafana", "CloudWatch"])
def test_an_answer_without_end_is_a_failure_not_memory_without_end(tmp_path, command, env):
    """A proxy or server in front of Grafana or CloudWatch that answers a read with a body without end: push and apply
    read it whole, and ran out of memory ("internal error: MemoryError" under a 2 GiB address space; without a limit,
    the machine's memory). An answer past http.BODY_LIMIT is no API answer: the read fails as an answer cut short
    (retried, then exit 3), memory bounded."""
    with _flooding_server() as url:
        env = {**os.environ, "PYTHONPATH": str(REPO), **{k: v.format(url=url) for k, v in env.items()}}
        env.pop("GPUDASH_CONFIG", None)
        result = subprocess.run([*GPUDASH, *command, "--skip-verify", "--deadline", "120"], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=180, preexec_fn=_at_most_2_gib)
    assert result.returncode == 3 and "internal error" not in result.stderr, result.stderr
    assert "answered more than 64 MiB" in result.stderr, result.stderr


def test_a_named_pipe_as_the_token_file_is_refused_not_waited_on(tmp_path):
    """`push --token-file token` where token is a named pipe nobody writes (mkfifo): push waited on it for ever. It
    is refused as a pipe, exit 2; a pipe the shell hands over open (`--token-file <(vault read ...)`) is read as
    before (reading.INHERITED_PIPES)."""
    os.mkfifo(tmp_path / "token")
    env = {**os.environ, "PYTHONPATH": str(REPO), "GRAFANA_URL": "http://127.0.0.1:9"}
    result = subprocess.run([*GPUDASH, "push", "--skip-verify", "--token-file", "token"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert "error: token: Grafana token file is a pipe or socket, not a file" in result.stderr, result.stderr
    piped = subprocess.run(["bash", "-c", 'exec "$@" --token-file <(printf tok)', "bash", *GPUDASH, "push",
                            "--skip-verify"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert "cannot reach Grafana at http://127.0.0.1:9" in piped.stderr, piped.stderr  # the token was read


def test_a_build_folder_holding_what_gpudash_did_not_write_is_not_replaced(tmp_path, cli):
    """A file the manifest does not list (a kustomization.yaml, a .git folder) or a file edited since
    gpudash wrote it would be lost with the previous build: `generate` refuses (exit 2, both named, the
    folder as it was) until they are moved out or `--force` says to discard them."""
    out = tmp_path / "build"
    code, _, stderr = cli("generate", "--out", str(out))
    assert code == 0, stderr
    (out / "kustomization.yaml").write_text("resources: [k8s/grafana-dashboards.yaml]\n")
    (out / ".git" / "objects").mkdir(parents=True)
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    edited = out / "k8s" / "grafana-dashboards.yaml"
    edited.write_bytes(edited.read_bytes() + b"# tuned by hand\n")
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    code, _, stderr = cli("generate", "--out", str(out))
    assert code == 2, stderr
    assert "2 file(s) gpudash did not write (.git/HEAD, kustomization.yaml)" in stderr, stderr
    assert "1 file(s) changed since gpudash wrote them (k8s/grafana-dashboards.yaml)" in stderr, stderr
    assert "--force" in stderr and "Traceback" not in stderr
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build"]
    code, _, stderr = cli("generate", "--out", str(out), "--force")
    assert code == 0, stderr
    assert not (out / "kustomization.yaml").exists() and not (out / ".git").exists()
    assert b"tuned by hand" not in edited.read_bytes()
    code, _, stderr = cli("generate", "--out", str(out))  # its own build again: replaced without a word
    assert code == 0, stderr


def _without_override(command: list[str]) -> list[str]:
    """`command` run so that a folder's permissions hold for it: as it is for a user, under setpriv without the
    capabilities that let root write and read any folder (skipped where root cannot drop them)."""
    if os.geteuid() != 0:
        return command
    if not shutil.which("setpriv"):
        pytest.skip("root, and no setpriv to run without overriding permissions")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", *command]


def _one_file_gone(out: Path) -> None:
    """A file of the build in `out` removed (which loses nothing): a rebuild then has a build to write, where the same
    build over the one the folder holds writes nothing (output._holds_the_build)."""
    next(out.glob("grafana/*.json")).unlink()


def _generate_without_override(out: Path, cwd: Path) -> subprocess.CompletedProcess:
    """`gpudash generate --out out` run where permissions hold for it (`_without_override`)."""
    return subprocess.run(_without_override([*GPUDASH, "generate", "--out", str(out)]), cwd=cwd, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, timeout=120)


@pytest.mark.parametrize("args, said", [
    (("generate", "--out", "closed"), "closed: a folder this user may not enter"),
    (("generate", "--out", "closed/build"), "closed, on this path, is a folder this user may not enter"),
    (("lint", "--from", "closed"), "closed: a folder this user may not enter"),
    (("lint", "--from", "closed/build"), "closed, on this path, is a folder this user may not enter"),
    (("init-config", "closed/gpudash.yaml"), "closed, on this path, is a folder this user may not enter"),
], ids=["generate-into", "generate-under", "lint-from", "lint-from-under", "init-config-under"])
def test_a_folder_without_search_permission_on_the_path_is_one_clear_input_error(tmp_path, args, said):
    """A folder on the path that this user may not enter (no x in its mode: chmod 644, a folder copied as a file's
    mode): generate --out and --from readers stopped with 'internal error: PermissionError: [Errno 13] Permission
    denied: .../manifest.json' (exit 4). It is one input error naming the folder and what to do, exit 2, nothing
    made."""
    closed = tmp_path / "closed"
    closed.mkdir()
    closed.chmod(0o644)
    try:
        result = subprocess.run(_without_override([*GPUDASH, *args]), cwd=tmp_path, text=True, capture_output=True,
                                env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    finally:
        closed.chmod(0o755)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error")]
    assert result.returncode == 2 and "internal error" not in result.stderr, result.stderr
    assert len(errors) == 1 and said in errors[0] and "\n  fix: " in result.stderr, result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["closed"] and list(closed.iterdir()) == []


@pytest.mark.parametrize("command", [("lint",), ("plan", "--no-grafana", "--no-cloudwatch")])
def test_a_folder_of_a_build_read_with_from_that_cannot_be_entered_is_said_so(tmp_path, cli, command):
    """A folder inside the build this user may not enter (chmod 000 build/grafana): lint and plan --from stopped at the
    first file the manifest lists in it with 'internal error: PermissionError' (exit 4). It is said as any folder of the
    build that cannot be read is: exit 2, naming the folder, nothing else read."""
    out = tmp_path / "build"
    assert cli("generate", "--out", str(out))[0] == 0
    (out / "grafana").chmod(0)
    try:
        result = subprocess.run(_without_override([*GPUDASH, *command, "--from", "build"]), cwd=tmp_path, text=True,
                                capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    finally:
        (out / "grafana").chmod(0o755)
    assert result.returncode == 2 and "internal error" not in result.stderr, result.stderr
    assert ("error: build: a folder of the build cannot be read (Permission denied: grafana): what it holds would "
            "ship unchecked") in result.stderr, result.stderr


@pytest.mark.parametrize("locked, said", [("grafana/gpudash-overview.json", "grafana/gpudash-overview.json"),
                                           ("grafana", "grafana")], ids=["a-file", "a-folder"])
def test_generate_check_of_a_build_it_cannot_read_says_so(tmp_path, cli, locked, said):
    """generate --check compares the build in the folder with the one the settings make. A file of it nobody may read
    (chmod 000) stopped it with 'internal error: PermissionError' (exit 4); a folder of it that may not be entered was
    skipped, its files listed as 'missing' (exit 1, 'run gpudash generate and commit the result'), which they are not.
    Either is said as what it is: exit 2, naming it."""
    out = tmp_path / "build"
    assert cli("generate", "--out", str(out))[0] == 0
    (out / locked).chmod(0)
    try:
        result = subprocess.run(_without_override([*GPUDASH, "generate", "--check", "--out", "build"]), cwd=tmp_path,
                                text=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO)},
                                timeout=120)
    finally:
        (out / locked).chmod(0o755 if (out / locked).is_dir() else 0o644)
    assert result.returncode == 2 and "internal error" not in result.stderr, (result.stdout, result.stderr)
    assert "missing" not in result.stdout, result.stdout
    assert f"error: build: the build cannot be read to compare it (Permission denied: {said})" in result.stderr, \
        result.stderr


@pytest.mark.parametrize("option, given", [("--grafana-schema", "closed"), ("--cwagent-schema", "closed/schema.json")])
def test_a_lint_schema_behind_a_folder_that_cannot_be_entered_is_one_input_error(tmp_path, option, given):
    """lint's schema paths checked is_file(), which raises where a folder on the way may not be entered (chmod 644):
    'internal error: PermissionError' (exit 4). It is one input error naming the path and the reason, exit 2."""
    closed = tmp_path / "closed"
    closed.mkdir()
    closed.chmod(0o644)
    try:
        result = subprocess.run(_without_override([*GPUDASH, "lint", option, given]), cwd=tmp_path, text=True,
                                capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    finally:
        closed.chmod(0o755)
    assert result.returncode == 2 and "internal error" not in result.stderr, result.stderr
    assert f"error: {given}: cannot read " in result.stderr and "(Permission denied)" in result.stderr, result.stderr


@pytest.mark.parametrize("option, made, said", [
    ("--cwagent-schema", "schema.json", "error: schema.json: the CloudWatch agent schema file is a named pipe, not a "
                                        "file"),
    ("--grafana-schema", "schemas/dashboard.jsonschema.json",
     "error: schemas: its dashboard.jsonschema.json is a named pipe, not a file"),
    ("--cwagent-schema", "folder", "error: folder: the CloudWatch agent schema file is a folder, not a file"),
], ids=["cwagent-fifo", "grafana-fifo", "cwagent-folder"])
def test_a_lint_schema_that_is_not_a_regular_file_is_said_as_what_it_is(tmp_path, cli, monkeypatch, option, made,
                                                                       said):
    """A schema path that is there but is no file (a named pipe, a folder): lint said the schema "does not exist" (or
    that the folder holds none), sending the user looking for a path that is there. It says what the path is, exit 2."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GPUDASH_CONFIG", raising=False)
    (tmp_path / "schemas").mkdir()
    (tmp_path / "folder").mkdir()
    if made != "folder":
        os.mkfifo(tmp_path / made)
    code, stdout, stderr = cli("lint", option, made.split("/")[0])
    errors = [line for line in stderr.splitlines() if line.startswith("error")]
    assert code == 2 and errors == [said], stderr


def test_generate_over_a_build_whose_manifest_cannot_be_read_says_so(tmp_path, cli):
    """generate --out over a build whose manifest.json this user may not read (chmod 000): it said the folder "holds
    files gpudash did not write (no manifest.json of gpudash's)" and told the user to choose another --out or empty the
    folder, which may be gpudash's own build. It says the manifest cannot be read, exit 2, the build as it was."""
    out = tmp_path / "build"
    assert cli("generate", "--out", str(out))[0] == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    (out / "manifest.json").chmod(0)
    try:
        result = _generate_without_override(out, tmp_path)
    finally:
        (out / "manifest.json").chmod(0o644)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error")]
    assert result.returncode == 2 and "internal error" not in result.stderr, result.stderr
    assert errors == [f"error: {out}: its manifest.json cannot be read (Permission denied): whether gpudash wrote what "
                      "the folder holds cannot be told"], result.stderr
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_generate_over_a_build_whose_manifest_a_merge_left_conflicted_says_so(tmp_path, cli):
    """A committed build/ whose manifest.json a merge left with conflict markers: generate said the folder "holds files
    gpudash did not write (no manifest.json of gpudash's)", though the manifest is there, and neither where it breaks
    nor that the build can be made again. It names the line and what to do; exit 2, the build as it was."""
    out = tmp_path / "build"
    assert cli("generate", "--out", str(out))[0] == 0
    manifest = out / "manifest.json"
    lines = manifest.read_text().splitlines(keepends=True)
    manifest.write_text("".join([*lines[:3], "<<<<<<< HEAD\n", *lines[3:5], "=======\n", ">>>>>>> main\n", *lines[5:]]))
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}

    code, _, stderr = cli("generate", "--out", str(out), "--force")

    errors = [line for line in stderr.splitlines() if line.startswith("error")]
    assert code == 2 and errors == [f"error: {out}: its manifest.json is not JSON (line 4; a merge's conflict markers?): "
                                    "whether gpudash wrote what the folder holds cannot be told"], stderr
    assert "fix: if it is a gpudash build" in stderr and "delete the folder and run generate again" in stderr
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_a_file_of_the_previous_build_that_cannot_be_read_is_said_so_not_called_changed(tmp_path, cli):
    """A file of the build nobody may read (chmod 000): generate refused, rightly, but said the file was "changed since
    gpudash wrote" it, which nothing showed, and offered --force to discard it. It says the file cannot be read; exit
    2, the build as it was."""
    out = tmp_path / "build"
    assert cli("generate", "--out", str(out))[0] == 0
    locked = out / "grafana" / "gpudash-overview.json"
    locked.chmod(0)
    try:
        result = _generate_without_override(out, tmp_path)
    finally:
        locked.chmod(0o644)
    assert result.returncode == 2, result.stderr
    assert "changed since gpudash wrote" not in result.stderr, result.stderr
    assert (f"error: {out}: cannot read the previous build, so nothing shows what replacing it would lose "
            "(Permission denied: grafana/gpudash-overview.json)") in result.stderr, result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["build"]


def test_a_build_in_a_folder_gpudash_cannot_write_is_kept_and_the_failure_named(tmp_path, cli):
    """The build folder is there and writable, the folder holding it is not (a read-only parent): the new build is
    written beside the previous one, and that is what failed. generate said "cannot create the output directory" of
    a directory that exists. It now says what failed and what to do; exit 2, the previous build as it was."""
    parent = tmp_path / "shared"
    out = parent / "build"
    assert cli("generate", "--out", str(out))[0] == 0
    _one_file_gone(out)  # a build to write, not the one the folder holds
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    parent.chmod(0o555)
    try:
        result = _generate_without_override(out, tmp_path)
    finally:
        parent.chmod(0o755)
    assert result.returncode == 2, result.stderr
    assert f"error: {parent}: cannot make a folder beside the build for the new one (Permission denied): gpudash " \
           "writes the new build next to the previous one and swaps them\n  fix: let gpudash write into that folder " \
           "(its permissions), or pass --out a folder inside one you can write; the previous build is unchanged" \
           in result.stderr, result.stderr
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert [p.name for p in parent.iterdir()] == ["build"]


@pytest.mark.parametrize("locked", ["k8s", "grafana/provisioning"])
def test_a_folder_of_the_previous_build_made_read_only_leaves_nothing_beside_the_new_one(tmp_path, cli, locked):
    """A person made a folder of the build read-only (chmod 555 build/k8s): its files are gpudash's as written, so the
    new build replaces it, but the previous build moved aside could not be removed (a file in a read-only folder cannot
    be unlinked): `.build.old-<digits>/` stayed beside the build for good, holding the old build, found by no later
    write (its lock let go) and taken into a commit by `git add -A`. The folders of what gpudash moved aside are made
    writable to remove it."""
    parent = tmp_path / "repo"
    out = parent / "build"
    assert cli("generate", "--out", str(out))[0] == 0
    (out / locked).chmod(0o555)
    result = _generate_without_override(out, tmp_path)
    assert result.returncode == 0, result.stderr
    assert [p.name for p in parent.iterdir()] == ["build"]
    assert (out / locked).stat().st_mode & 0o777 == 0o755  # the new build's own folder


@pytest.mark.parametrize("number, fix", [
    (errno.ENOSPC, "free space on that disk, or pass --out a folder on another one"),
    (errno.EROFS, "that file system is mounted read-only: pass --out a folder on a writable one"),
    (errno.EPERM, "let gpudash write into that folder (its permissions), or pass --out a folder inside one you can write"),
])
def test_the_folder_beside_the_build_failing_says_what_to_do_for_its_cause(tmp_path, cli, monkeypatch, number, fix):
    """The folder beside the build could not be made because the disk is full or mounted read-only: the fix line spoke
    of permissions whatever the cause. (The system's refusal is made here, at the one call that makes that folder: a
    full or read-only disk cannot be made in a test.) Exit 2, the previous build as it was."""
    import generator.output as output

    out = tmp_path / "build"
    assert cli("generate", "--out", str(out))[0] == 0
    _one_file_gone(out)  # a build to write, not the one the folder holds
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    made = output._new_folder

    def refused(parent, prefix):
        if prefix.startswith(".build.new-"):
            raise OSError(number, os.strerror(number))
        return made(parent, prefix)

    monkeypatch.setattr(output, "_new_folder", refused)
    code, _, stderr = cli("generate", "--out", str(out))
    assert code == 2, stderr
    assert f"cannot make a folder beside the build for the new one ({os.strerror(number)})" in stderr, stderr
    assert f"  fix: {fix}; the previous build is unchanged" in stderr, stderr
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_a_build_folder_name_the_system_takes_but_too_long_for_the_folder_beside_it_is_said(tmp_path, cli):
    """A build folder of a 245-character name (the system takes up to 255): the folder gpudash writes beside it
    (`.NAME.new-...`) is past the limit. It said 'cannot create the output directory (File name too long)' and told
    to check the path's permissions. Exit 2, the fix names the cause."""
    out = tmp_path / ("b" * 245)
    code, _, stderr = cli("generate", "--out", str(out))
    assert code == 2, stderr
    assert "the build folder's name is too long for the folder gpudash writes beside it" in stderr, stderr
    assert "  fix: pass --out a folder with a shorter name (under 230 characters)" in stderr, stderr
    assert not out.exists()


def test_a_link_to_a_folder_in_the_build_folder_is_not_dropped_without_a_word(tmp_path, cli):
    """A link the user put in the build folder to a folder elsewhere (their own manifests, for kustomize) is
    an entry the manifest does not list, as a link to a file is: refused, not dropped with the previous build."""
    out = tmp_path / "build"
    code, _, stderr = cli("generate", "--out", str(out))
    assert code == 0, stderr
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "extra.yaml").write_text("kind: ConfigMap\n")
    (out / "k8s" / "mine").symlink_to(tmp_path / "mine")
    code, _, stderr = cli("generate", "--out", str(out))
    assert code == 2, stderr
    assert "1 file(s) gpudash did not write (k8s/mine)" in stderr, stderr
    assert (out / "k8s" / "mine").is_symlink()
    code, _, stderr = cli("generate", "--out", str(out), "--force")
    assert code == 0, stderr
    assert not (out / "k8s" / "mine").exists() and (tmp_path / "mine" / "extra.yaml").is_file()


def _too_deep(folder: Path, keep: str) -> list[str]:
    """Folders nested in `folder` until their path is longer than a call may name (PATH_MAX, 4096 bytes on
    Linux), made and filled through folder descriptors: listing the deepest ones by path fails
    (ENAMETOOLONG) for root too, whom permissions do not stop. The deepest holds the file `keep`; returns the
    folder names, outermost first."""
    names = [f"{index:02d}" + "d" * 248 for index in range(20)]
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in names:
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        with open(os.open(keep, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as stream:
            stream.write("kind: ConfigMap\n")
    finally:
        os.close(fd)
    with pytest.raises(OSError):
        os.listdir(os.path.join(folder, *names))
    return names


def _still_there(folder: Path, names: list[str], keep: str) -> bool:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in names:
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        return keep in os.listdir(fd)
    finally:
        os.close(fd)


def test_a_folder_in_the_build_that_cannot_be_read_stops_generate_and_lint_from(tmp_path, cli):
    """A folder inside build/ that cannot be listed (here: nested past the longest path a call may name, which
    stops root too) may hold a user's files: `generate` refuses to replace the build (exit 2, naming the error)
    instead of reading the folder as empty and dropping what it holds, and `--from` refuses to read the build
    (what it holds would ship unchecked)."""
    import shutil

    out = tmp_path / "build"
    code, _, stderr = cli("generate", "--out", str(out))
    assert code == 0, stderr
    names = _too_deep(out / "k8s", "mine.yaml")
    code, _, stderr = cli("generate", "--out", str(out))
    assert code == 2, stderr
    assert "cannot read the previous build" in stderr and "File name too long" in stderr, stderr
    assert "Traceback" not in stderr and _still_there(out / "k8s", names, "mine.yaml")
    code, _, stderr = cli("lint", "--from", str(out))
    assert code == 2 and "a folder of the build cannot be read (File name too long" in stderr, stderr
    shutil.rmtree(out / "k8s" / names[0])
    code, _, stderr = cli("generate", "--out", str(out))
    assert code == 0, stderr


def test_a_file_gone_or_linked_away_loses_nothing_and_is_written_again(tmp_path):
    out = tmp_path / "build"
    write_files(out, FILES)
    (gone, linked, *_) = sorted(FILES)
    (out / gone).unlink()
    (out / linked).unlink()
    (out / linked).symlink_to(tmp_path / "elsewhere.json")
    write_files(out, FILES)
    assert all((out / relative).read_bytes() == data for relative, data in FILES.items())


def _interrupt_while_writing(tmp_path, monkeypatch, number, at):
    """Run write_files with the signal `number` sent to this process when file `at` is created."""
    import signal

    real_open = os.open

    def signalled(path, flags, *args, **kwargs):
        if str(path).endswith(at) and flags & os.O_CREAT:
            os.kill(os.getpid(), number)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", signalled)
    return signal


@pytest.mark.parametrize("at", ["k8s/c3.yaml", "manifest.json"])
def test_ctrl_c_while_writing_leaves_the_previous_build_and_no_debris(tmp_path, monkeypatch, at):
    """SIGINT is held while the build is written: the writers stop at the next file, the staging folder
    goes, the previous build stays whole, and the interruption is then raised."""
    import signal

    from tests.support.ctrl_c import sigint_handled

    with sigint_handled():  # Ctrl-C's own handler, where a suite started as a background job ignores SIGINT
        out = tmp_path / "build"
        files = {f"k8s/c{i}.yaml": b"c: 1\n" for i in range(10)}
        write_files(out, files)
        before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
        _interrupt_while_writing(tmp_path, monkeypatch, signal.SIGINT, at)
        changed = {relative: data + b"\n" for relative, data in files.items()}
        with pytest.raises(KeyboardInterrupt):
            write_files(out, changed)
        monkeypatch.undo()
        after = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
        if at == "manifest.json":  # the last file: the swap had begun, the new build is whole
            assert {str(p.relative_to(out)) for p in after} == {*files, "manifest.json"}
            assert all(after[out / r] == d for r, d in changed.items())
        else:
            assert after == before
        assert sorted(p.name for p in tmp_path.iterdir()) == ["build"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_sigterm_during_generate_leaves_a_whole_build_and_ends_the_process(tmp_path, cli):
    """A real `generate` process sent SIGTERM while it writes: it ends by the signal, and the folder is
    either the previous build or the new one, whole (its manifest matches every file), with no debris."""
    import signal
    import time

    out = tmp_path / "build"
    code, _, stderr = cli("generate", "--out", str(out))
    assert code == 0, stderr
    config = tmp_path / "gpudash.yaml"
    config.write_text("clusters:\n" + "".join(f"  - {{name: c{i}, region: eu-west-1}}\n" for i in range(30)))
    process = subprocess.Popen([*GPUDASH, "generate", "--config", str(config), "--out", str(out)],
                               env={**os.environ, "PYTHONPATH": str(REPO)}, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not any(p.name.startswith(".build.new-") for p in tmp_path.iterdir()) and process.poll() is None \
            and time.monotonic() < deadline:
        time.sleep(0.001)
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=60)
    assert process.returncode in (-signal.SIGTERM, 0), process.stderr.read()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build", "gpudash.yaml"]
    from generator.output import not_as_written

    assert not_as_written(out) == ([], [])


@pytest.mark.parametrize("files, where, says", [
    ({}, "dashboards", "the dashboards folder holds no definition"),                  # a submodule not checked out
    ({"_shared.py": "PANELS = []\n"}, "dashboards", "the dashboards folder holds no definition"),
    ({"team.py": (REPO / "dashboards" / "gpu_overview.py").read_text().replace("def dashboards(", "def boards(")},
     "dashboards/team.py", "the file defines no dashboards"),                        # its function renamed
], ids=["empty-folder", "only-helpers", "defines-nothing"])
def test_a_definition_that_went_missing_is_an_error_not_fewer_dashboards(tmp_path, cli, files, where, says):
    """Definitions that silently stopped defining would turn into a prune of what they used to publish:
    an empty listed folder and a file that defines nothing are input errors naming it and what to do."""
    folder = tmp_path / "dashboards"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  dashboards: [dashboards]\n")
    code, _, stderr = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "b"))
    assert code == 2, stderr
    shown = where if where.endswith(".py") else tmp_path / where  # a file as DF001 names it: folder/file.py
    assert f"{shown}: {says}" in stderr, stderr
    assert "fix: " in stderr and "Traceback" not in stderr
    assert not (tmp_path / "b").exists()


def test_a_helper_a_definition_imports_is_read_as_edited_and_cached_nowhere_beside_it(tmp_path):
    """A definition that puts its folder on sys.path and imports a `_*.py` helper: gpudash writes no bytecode
    while definitions run, so no __pycache__ lands in the folder and a helper edited within the same second at the
    same size is built as edited by the next run (two real processes, bytecode on, as in CI)."""
    folder = tmp_path / "dashboards"
    folder.mkdir()
    source = (REPO / "dashboards" / "gpu_overview.py").read_text()
    assert '"GPU fleet overview"' in source
    (folder / "team.py").write_text("import os, sys\nsys.path.insert(0, os.path.dirname(__file__))\n"
                                    "from _shared import TITLE\n" + source.replace('"GPU fleet overview"', "TITLE"))
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  dashboards: [dashboards]\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"PYTHONPATH": str(REPO)}
    stamp = None
    for title in ("Team AAAA", "Team BBBB"):  # the same size
        (folder / "_shared.py").write_text(f"TITLE = {title!r}\n")
        stamp = stamp or (folder / "_shared.py").stat().st_mtime_ns
        os.utime(folder / "_shared.py", ns=(stamp, stamp))  # the same modification time
        result = subprocess.run([*GPUDASH, "generate", "--config", str(tmp_path / "gpudash.yaml"), "--out",
                                 str(tmp_path / "b")], env=env, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        assert any(f'"title": "{title}"' in p.read_text() for p in (tmp_path / "b" / "grafana").glob("*.json"))
    assert sorted(p.name for p in folder.iterdir()) == ["_shared.py", "team.py"]  # no __pycache__


def test_gpudash_modules_a_definition_imports_first_keep_their_bytecode_and_the_definition_none(tmp_path):
    """gpudash writes no bytecode while a definition runs, but the modules of gpudash's own that the definitions are
    the first to import (generator.panels, generator.container_insights) are gpudash's, cached beside gpudash's
    others: they were compiled from their source at every run (about 4 ms of a small build's 110). A real process,
    bytecode on, every cached file under a fresh PYTHONPYCACHEPREFIX so that none is there before the run."""
    cache = tmp_path / "pycache"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {
        "PYTHONPATH": str(REPO), "PYTHONPYCACHEPREFIX": str(cache)}
    (tmp_path / "dashboards").mkdir()
    (tmp_path / "dashboards" / "team.py").write_text((REPO / "dashboards" / "gpu_overview.py").read_text())
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  dashboards: [dashboards]\n")
    result = subprocess.run([*GPUDASH, "generate", "--config", str(tmp_path / "gpudash.yaml"), "--out",
                             str(tmp_path / "b")], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    cached = {path.relative_to(cache).as_posix() for path in cache.rglob("*.pyc")}
    own = {path.split("/generator/", 1)[1].split(".")[0] for path in cached if "/generator/" in path}
    assert {"panels", "container_insights", "model", "settings"} <= own, sorted(own)
    assert not [path for path in cached if "/dashboards/" in path]  # the definition's: never
    assert sorted(p.name for p in (tmp_path / "dashboards").iterdir()) == ["team.py"]


def _helped_project(root: Path, dashboards_title: str, alarms_title: str) -> Path:
    """A project whose dashboard and alarm definitions each import the title they use from a `_shared.py` helper
    beside them, the way the README says (no sys.path of their own); returns its settings file."""
    for kind, source, text, title in (("dashboards", "gpu_overview.py", '"GPU fleet overview"', dashboards_title),
                                      ("alarms", "gpu_alarms.py", '"XID error reported"', alarms_title)):
        folder = root / kind
        folder.mkdir(parents=True, exist_ok=True)
        original = (REPO / kind / source).read_text()
        assert text in original
        (folder / "team.py").write_text("from _shared import TITLE\n" + original.replace(text, "TITLE"))
        (folder / "_shared.py").write_text(f"TITLE = {title!r}\n")
    (root / "gpudash.yaml").write_text("definitions:\n  dashboards: [dashboards]\n  alarms: [alarms]\n")
    return root / "gpudash.yaml"


def _built_titles(out: Path) -> tuple[list[str], list[str]]:
    dashboards = [json.loads(p.read_text())["title"] for p in (out / "grafana").glob("*.json")]
    alarms = [a.get("title") or a.get("AlarmName") or json.dumps(a)
              for a in json.loads((out / "cloudwatch" / "alarms.json").read_text())["alarms"]]
    return dashboards, alarms


def test_a_definition_imports_the_helper_beside_it_by_name_each_folder_its_own(tmp_path, cli, monkeypatch):
    """`from _shared import TITLE` in a definition reads the `_shared.py` of that definition's folder: the
    dashboards' and the alarms' helpers of one name are each their own, two projects built in one process each
    get theirs, and a helper edited within the same second at the same size is read as edited. Nothing is
    written beside the definitions (bytecode on, as in CI)."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    builds = []
    for project, (board, alarm) in (("one", ("Team AAAA", "Page AAAA")), ("two", ("Team BBBB", "Page BBBB"))):
        config = _helped_project(tmp_path / project, board, alarm)
        code, _, stderr = cli("generate", "--config", str(config), "--out", str(tmp_path / project / "b"))
        assert code == 0, stderr
        builds.append(_built_titles(tmp_path / project / "b"))
    for (boards, alarms), (board, alarm) in zip(builds, (("Team AAAA", "Page AAAA"), ("Team BBBB", "Page BBBB"))):
        assert boards == [board]
        assert any(alarm in text for text in alarms) and not any("XID error reported" in t for t in alarms)
        assert not any(other in text for text in alarms for other in ("Team AAAA", "Team BBBB"))
    helper = tmp_path / "one" / "dashboards" / "_shared.py"
    stamp = helper.stat().st_mtime_ns
    helper.write_text("TITLE = 'Team CCCC'\n")  # the same size and modification time
    os.utime(helper, ns=(stamp, stamp))
    code, _, stderr = cli("generate", "--config", str(tmp_path / "one" / "gpudash.yaml"), "--out",
                          str(tmp_path / "one" / "b"))
    assert code == 0, stderr
    assert _built_titles(tmp_path / "one" / "b")[0] == ["Team CCCC"]
    for project in ("one", "two"):
        for kind in ("dashboards", "alarms"):
            assert sorted(p.name for p in (tmp_path / project / kind).iterdir()) == ["_shared.py", "team.py"]
    assert "_shared" not in sys.modules
    helper.write_text("TITLE = 1 / 0\n")  # a mistake in a helper is reported at its own line
    code, _, stderr = cli("generate", "--config", str(tmp_path / "one" / "gpudash.yaml"), "--out",
                          str(tmp_path / "one" / "b"))
    assert code == 2 and "error: dashboards/_shared.py:1: the definition raised ZeroDivisionError" in stderr, stderr


def test_one_folder_listed_for_dashboards_and_alarms_holds_files_of_either_kind(tmp_path, cli):
    """A folder listed under both definitions.dashboards and definitions.alarms: a file defining alarms is not a
    dashboards file that defines nothing (nor the other way round); a file defining neither still is an error."""
    folder = tmp_path / "defs"
    folder.mkdir()
    (folder / "overview.py").write_text((REPO / "dashboards" / "gpu_overview.py").read_text())
    (folder / "alarms.py").write_text((REPO / "alarms" / "gpu_alarms.py").read_text())
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  dashboards: [defs]\n  alarms: [defs]\n")
    code, _, stderr = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "b"))
    assert code == 0, stderr
    assert len(list((tmp_path / "b" / "grafana").glob("*.json"))) == 1
    assert json.loads((tmp_path / "b" / "cloudwatch" / "alarms.json").read_text())["alarms"]
    (folder / "team.py").write_text("NOTHING = 1\n")
    code, _, stderr = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "b"))
    assert code == 2 and "error: defs/team.py: the file defines no dashboards" in stderr, stderr


def test_a_helper_module_beside_definitions_is_read_only_through_them(tmp_path, cli):
    folder = tmp_path / "dashboards"
    folder.mkdir()
    (folder / "_shared.py").write_text("TITLE = 'Team A'\n")
    (folder / "team.py").write_text((REPO / "dashboards" / "gpu_overview.py").read_text())
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  dashboards: [dashboards]\n")
    code, _, stderr = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "b"))
    assert code == 0, stderr


def test_a_definition_edited_within_the_same_second_is_read_as_edited(tmp_path, cli, monkeypatch):
    """Python's import would run the bytecode cached for a file of the same size and modification second:
    gpudash compiles each definition from its source, so an edit made at once is built, and nothing is
    written beside the definitions."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # as on a machine that keeps bytecode (CI)
    folder = tmp_path / "dashboards"
    folder.mkdir()
    source = (REPO / "dashboards" / "gpu_overview.py").read_text()
    assert "GPU fleet overview" in source
    (folder / "team.py").write_text(source)
    stamp = (folder / "team.py").stat().st_mtime_ns
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  dashboards: [dashboards]\n")
    for title in ("GPU fleet overview", "GPU fleet overwiew"):  # the same size
        (folder / "team.py").write_text(source.replace("GPU fleet overview", title))
        os.utime(folder / "team.py", ns=(stamp, stamp))  # the same modification time
        code, _, stderr = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "b"))
        assert code == 0, stderr
        built = (tmp_path / "b" / "grafana").glob("*.json")
        assert any(f'"title": "{title}"' in p.read_text() or f'"title":"{title}"' in p.read_text() for p in built)
    assert sorted(p.name for p in folder.iterdir()) == ["team.py"]  # no __pycache__


def _status(ctime_ns: int) -> os.stat_result:
    return os.stat_result((0o100644, 1, 1, 1, 0, 0, 10, 0, 0, ctime_ns // 10**9, 0.0, 0.0, ctime_ns / 1e9, 0, 0, ctime_ns))


def test_a_files_status_stands_for_its_bytes_a_few_ticks_of_its_clock_after_its_last_change():
    """A file changed a few ticks of the clock that stamps change times before it was read keeps its status as read
    (not read again before it is shared): 0.1 s where change times have digits below the millisecond (stamped from the
    kernel's clock, whose tick is 1-10 ms), 2 s where they are whole seconds or hundredths."""
    from generator.output import _held

    now = 1_700_000_000 * 10**9
    for ago, held in ((50_000_000, False), (150_000_000, True), (3 * 10**9, True)):
        info = _status(now - ago + 123_457)  # digits below the millisecond
        assert (_held(info, now) is info) is held
    for ago, held in ((10**9, False), (1_990_000_000, False), (3 * 10**9, True)):
        info = _status(now - ago)  # whole seconds
        assert (_held(info, now) is info) is held
    assert _held(_status(now - 10**9 - 10**7), now) is None  # hundredths


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="needs Linux's per-process read count")
def test_a_rebuild_right_after_the_build_before_reads_it_once(tmp_path):
    """A rebuild a moment after the build before (a benchmark's runs, a loop), on a file system that stamps change
    times from the kernel's clock, reads each unchanged file once: writing the build before (linking its files,
    removing the old names) changed them all, and within 2 s of that change every file was read twice."""
    out = tmp_path / "build"
    files = {f"k8s/{n}.yaml": bytes([97 + n % 26]) * 200_000 for n in range(20)}
    write_files(out, files)
    write_files(out, files)  # the files as a rebuild leaves them: linked into it, the old names removed
    if all(os.stat(out / relative).st_ctime_ns % 1_000_000 == 0 for relative in files):
        pytest.skip("this file system stamps change times in whole milliseconds or coarser")
    time.sleep(0.2)
    _rebuilt_reading_once(out, files)


@pytest.mark.parametrize("mount", [False, True], ids=["build folder", "mount point"])
@pytest.mark.parametrize("settled", [True, False])
def test_a_file_edited_after_it_was_read_with_its_times_kept_is_not_lost(tmp_path, monkeypatch, settled, mount):
    """A file edited in place between the read that found it unchanged and the swap, by a tool that keeps its times
    (`cp -p`, `touch -r`, rsync -t --inplace: same size, same inode, its modification time set back): only its change
    time (ctime, which no call sets back) tells, and the previous build was deleted with the edit in it, exit 0."""
    import generator.output as output

    out, files = _built_two_files(tmp_path, monkeypatch, settled)

    def edit_keeping_times():
        path = out / "k8s/b.yaml"
        before = path.stat()
        time.sleep(0.02)  # a later tick of the clock that stamps change times
        with open(path, "r+b") as stream:  # in place: the same inode
            stream.write(b"b: 2\n")
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))

    _edit_is_kept(out, files, monkeypatch, mount, edit_keeping_times)


def _edit_is_kept(out: Path, files: dict[str, bytes], monkeypatch, mount: bool, edit) -> None:
    """Writing `files` over the build in `out` (a mount point with `mount`), `edit` run just after the previous build
    was read (it edits k8s/b.yaml of the previous build to `b: 2`; before the check that the folder holds this very
    build, `_holds_the_build`, and the new build's writing), is refused and the edit kept."""
    import generator.output as output

    real_refuse_losing = output._refuse_losing

    def read_then_edit(*args, **kwargs):
        taken = real_refuse_losing(*args, **kwargs)
        edit()
        return taken

    monkeypatch.setattr(output, "_refuse_losing", read_then_edit)
    if mount:
        monkeypatch.setattr(output.os.path, "ismount", lambda path: Path(path) == out)
    with pytest.raises(OutputError, match=r"were added or changed \(k8s/b.yaml\)"):
        write_files(out, files)
    assert (out / "k8s/b.yaml").read_bytes() == b"b: 2\n"


@pytest.mark.parametrize("mount", [False, True], ids=["build folder", "mount point"])
def test_a_file_edited_within_the_tick_of_its_last_change_is_not_lost(tmp_path, monkeypatch, mount):
    """On a file system whose clock stamps times in coarse ticks (whole seconds, FAT's two seconds), a file edited in
    place (same size) in the tick of its last change before the build folder was listed keeps its change and
    modification times: no status tells the edit, and the previous build was deleted with it, exit 0. A file changed
    within a settle window of that listing (SETTLED_NS, at least a tick) is read again before the previous build goes.
    The coarse clock is a tick of 1,000 s here, so that the write, the listing and the edit share one."""
    import generator.output as output

    tick = 10**12
    out = tmp_path / "build"
    files = {f"k8s/{name}.yaml": f"{name}: 1\n".encode() for name in ("a", "b")}
    write_files(out, files)
    monkeypatch.setattr(output, "SETTLED_NS", 2 * tick)
    real_entries = output._entries

    def coarse_entries(top):
        found = real_entries(top)
        for path, entry in found.items():
            if len(entry) == 5:
                found[path] = (*entry[:3], entry[3] // tick * tick, entry[4] // tick * tick)
        return found

    def edit():
        with open(out / "k8s/b.yaml", "r+b") as stream:  # in place, same size: the same inode
            stream.write(b"b: 2\n")

    monkeypatch.setattr(output, "_entries", coarse_entries)
    _edit_is_kept(out, files, monkeypatch, mount, edit)


@pytest.mark.parametrize("mount", [False, True], ids=["build folder", "mount point"])
def test_a_replaced_file_edited_with_its_times_set_back_where_its_change_time_follows_them_is_not_lost(
        tmp_path, monkeypatch, mount):
    """Where a file's change time follows its modification time (FAT, whose Linux driver reports ctime as mtime), or
    is stamped by another clock (NFS or SMB, whose server's clock may lag the client's by more than any settle window),
    a same-size edit in place with the times set back (`touch -r`, `cp -p`, rsync -t --inplace) leaves the file's
    status as it was read. The file the new build replaces was deleted with the edit in it, exit 0: each replaced file
    is read again before the previous build goes."""
    import generator.output as output

    out, files = _built_two_files(tmp_path, monkeypatch, settled=True)
    real_lstat = output._lstat

    def change_time_follows_modification_time(path):
        info = real_lstat(path)
        return os.stat_result(tuple(info)[:9] + (info.st_mtime,), {
            "st_atime_ns": info.st_atime_ns, "st_mtime_ns": info.st_mtime_ns, "st_ctime_ns": info.st_mtime_ns})

    def edit_setting_times_back():
        path = out / "k8s/b.yaml"
        before = path.stat()
        with open(path, "r+b") as stream:  # in place: the same inode, the same size
            stream.write(b"b: 2\n")
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))

    monkeypatch.setattr(output, "_lstat", change_time_follows_modification_time)
    _edit_is_kept(out, {**files, "k8s/b.yaml": b"b: 3\n"}, monkeypatch, mount, edit_setting_times_back)


def test_change_times_tell_edits_only_where_no_call_sets_them_back_and_their_clock_keeps_time(tmp_path, monkeypatch):
    """The probe: here (a local file system) change times tell; where the change time follows the modification time
    (FAT), or is stamped by a clock an hour behind this one (an NFS or SMB server's), they do not."""
    import generator.output as output

    assert output._change_times_tell(tmp_path) and os.listdir(tmp_path) == []
    real_lstat = output._lstat

    def status(path, ctime_ns):
        info = real_lstat(path)
        return os.stat_result(tuple(info)[:9] + (ctime_ns / 1e9,), {
            "st_atime_ns": info.st_atime_ns, "st_mtime_ns": info.st_mtime_ns, "st_ctime_ns": ctime_ns})

    monkeypatch.setattr(output, "_lstat", lambda path: status(path, real_lstat(path).st_mtime_ns))
    assert not output._change_times_tell(tmp_path)
    monkeypatch.setattr(output, "_lstat", lambda path: status(path, real_lstat(path).st_ctime_ns - 3600 * 10**9))
    assert not output._change_times_tell(tmp_path) and os.listdir(tmp_path) == []


def _threads_started(monkeypatch) -> list[str]:
    """The names of the threads the build folder's code starts from now on, in order."""
    import threading

    import generator.output as output

    started: list[str] = []

    class Counted(threading.Thread):
        def start(self):
            started.append(self.name)
            super().start()

    monkeypatch.setattr(output.threading, "Thread", Counted)
    return started


def test_the_previous_build_is_read_in_two_lanes_where_it_holds_enough_files_and_each_lanes_edits_are_found(
        tmp_path, monkeypatch):
    """The previous build's files are read (to see that replacing them loses no edit) in two lanes, this thread and
    one other, when the build holds enough of them for a second lane to gain (reading and hashing run beside each
    other on two CPUs): an edit in a file of either lane is found and refused, the folder left as it was. A build of a
    few files, and the files re-read after a rebuild right after the one before, are read in this thread alone."""
    started = _threads_started(monkeypatch)
    out = tmp_path / "build"
    many = {f"cloudwatch/dashboards/d{i:02}.json": f'{{"n": {i}}}\n'.encode() for i in range(40)}
    write_files(out, many)
    for edited in ("cloudwatch/dashboards/d06.json", "cloudwatch/dashboards/d37.json"):  # an even and an odd place
        started.clear()
        (out / edited).write_bytes(b'{"n": -1}\n')
        with pytest.raises(OutputError) as refused:
            write_files(out, many)
        assert "1 file(s) changed since gpudash wrote them" in str(refused.value) and edited in str(refused.value)
        assert started == ["gpudash-read"] and (out / edited).read_bytes() == b'{"n": -1}\n'
        write_files(out, many, force=True)
    few = {f"k8s/{name}.yaml": f"{name}: 1\n".encode() for name in "abc"}
    write_files(tmp_path / "small", few)
    started.clear()
    write_files(tmp_path / "small", {**few, "k8s/a.yaml": b"a: 2\n"})  # right after: a replaced file is read again
    assert (tmp_path / "small/k8s/a.yaml").read_bytes() == b"a: 2\n"
    assert [name for name in started if name != "gpudash-write"] == []


def test_the_previous_templates_are_compared_in_two_lanes_and_a_renamed_resource_of_either_lane_is_found(
        tmp_path, monkeypatch):
    """The previous build's CloudFormation templates are read (for resources declared under another id, and to hash
    the unchanged ones once) in two lanes where there are enough of them: a resource renamed in a template of either
    lane is found, in the order of the stacks, and every unchanged template's sha256 is known."""
    import hashlib
    import threading

    import generator.output as output

    def template(stack: str, id_: str) -> dict:
        return {"Resources": {id_: {"Type": "AWS::CloudWatch::Alarm", "Properties": {"AlarmName": f"{stack}-hot"}}}}

    stacks = [f"gpudash-cluster-c{i:02}" for i in range(20)]
    before = {stack: template(stack, f"AlarmOld{i}") for i, stack in enumerate(stacks)}
    write_files(tmp_path / "build", {output.template_file(s): json.dumps(t).encode() for s, t in before.items()})
    now = {**before, stacks[4]: template(stacks[4], "AlarmNew4"), stacks[13]: template(stacks[13], "AlarmNew13")}
    files = {output.template_file(s): json.dumps(t).encode() for s, t in now.items()}
    started = _threads_started(monkeypatch)
    known: dict = {}
    found = output.renamed_resources(tmp_path / "build", now, files, stacks, known)
    assert found == [(stacks[4], f"{stacks[4]}-hot", "AlarmOld4", "AlarmNew4"),
                     (stacks[13], f"{stacks[13]}-hot", "AlarmOld13", "AlarmNew13")]
    unchanged = [output.template_file(s) for s in stacks if s not in (stacks[4], stacks[13])]
    assert sorted(known) == sorted(unchanged)
    assert all(known[path][0] == hashlib.sha256(files[path]).hexdigest() for path in unchanged)
    assert started == ["gpudash-read"]
