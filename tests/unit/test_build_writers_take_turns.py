"""Two `gpudash generate` runs into one folder at once (a CI job and a person, two terminals): one read the build the
other was swapping (as `lint --from` and `plan`/`apply --from` did), and 3 of 48 such pairs failed with a false "N
file(s) changed since gpudash wrote them ... pass --force" (a file the other's swap moved away mid-read counted as
edited) or "added or changed while the build was written". Writers into one folder now take turns (staging.
taking_turns: a lock on the folder, nothing made beside the build), readers share a turn, the one waiting says so; and
a file gone between the listing and its reading is not an edit."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from generator import output
from generator.output import write_files

REPO = Path(__file__).resolve().parents[2]
LOCKS_TOLD = os.path.exists("/proc/locks")  # who holds a lock (Linux)
# `gpudash generate` stopped between its swap's two renames (the previous build moved aside, the build folder
# missing) until the file argv[3] exists; argv[2] is written once it is there
STOPPED_IN_ITS_SWAP = """
import pathlib, sys, time
from generator import output
refuse = output._refuse_changed
def stopped(*args, **kwargs):
    pathlib.Path(sys.argv[2]).write_text("swapping")
    while not pathlib.Path(sys.argv[3]).exists():
        time.sleep(0.02)
    return refuse(*args, **kwargs)
output._refuse_changed = stopped
from generator.cli import main
main(["generate", "--out", sys.argv[1]])
"""


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("command", [("generate", "--out"), ("lint", "--from")], ids=["a writer", "a reader"])
def test_a_gpudash_writing_or_reading_a_build_another_generate_is_writing_waits_its_turn(tmp_path, cli, command):
    """Real processes: the first is stopped in the middle of its swap (the build folder missing, the previous build
    aside); the second, started then, says it waits. A second generate wrote a build of its own into the gap, and the
    first then failed to swap its own in, leaving the previous build aside; `lint --from` failed, "the build folder
    does not exist" (or a file of it "is missing: the build was changed after generate", a moment later). Let go, the
    first finishes, then the second: both exit 0, the folder holds a whole build, nothing is left beside it."""
    work, signals = tmp_path / "work", tmp_path / "signals"
    signals.mkdir()
    out = work / "build"
    assert cli("generate", "--out", str(out))[0] == 0
    # a file of the build gone (which loses nothing): the first has a build to swap in, not the one the folder holds
    next(out.glob("grafana/*.json")).unlink()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    first = subprocess.Popen([sys.executable, "-c", STOPPED_IN_ITS_SWAP, str(out), str(signals / "swapping"),
                              str(signals / "go")], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    second = None
    try:
        for _ in range(1200):  # (a bound on the wait, not a timing assertion)
            if (signals / "swapping").exists():
                break
            assert first.poll() is None, first.communicate()
            time.sleep(0.05)
        assert not out.exists()  # between the renames
        second = subprocess.Popen([sys.executable, "-m", "generator.cli", *command, str(out)], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        watchdog = threading.Timer(300, second.kill)  # (a bound on a hang, not a timing assertion)
        watchdog.start()
        said = []
        for line in second.stderr:  # until it says it waits, or ends without waiting
            said.append(line)
            if line.startswith("waiting for another gpudash"):
                break
        watchdog.cancel()
        # the one holding the turn named (where Linux's /proc/locks tells it), its command line's newlines escaped
        held = f"; held by process {first.pid}: '{sys.executable} -c \\nimport pathlib" if LOCKS_TOLD else ")"
        assert said and said[-1].startswith(f"waiting for another gpudash writing a build into {work} (gpudash runs "
                                            f"writing or reading a build in one folder take turns{held}"), \
            (said, second.poll())
    finally:
        (signals / "go").write_text("")
        first_out, first_err = first.communicate(timeout=300)
        if second is not None:
            second_out, second_err = second.communicate(timeout=300)
    assert first.returncode == 0, first_err
    assert second.returncode == 0 and "changed" not in second_err, second_err
    assert [p.name for p in work.iterdir()] == ["build"]
    assert cli("generate", "--check", "--out", str(out))[0] == 0  # a whole build, as generate writes it


def test_a_file_gone_between_the_listing_and_its_reading_is_not_an_edit(tmp_path, monkeypatch):
    """A file of the previous build removed after the build folder was listed and before the file was read (a writer
    that does not take turns moved it away, or a person removed it) was counted as changed since gpudash wrote it:
    the write refused, with the hint to pass --force. A file gone loses nothing, as one gone before the listing."""
    out = tmp_path / "build"
    write_files(out, {"grafana/a.json": b"{}\n", "k8s/b.yaml": b"b: 1\n"})
    digest = output._digest

    def moved_away(path, *args, **kwargs):
        if path.endswith("a.json"):
            os.unlink(path)
        return digest(path, *args, **kwargs)

    monkeypatch.setattr(output, "_digest", moved_away)
    write_files(out, {"grafana/a.json": b"[]\n", "k8s/b.yaml": b"b: 2\n"})
    assert {k: v for k, v in _tree(out).items() if k != "manifest.json"} == {"grafana/a.json": b"[]\n",
                                                                             "k8s/b.yaml": b"b: 2\n"}


# A wrapper that locks the folder and runs gpudash under it (`flock . gpudash generate`, a CI step made to take turns
# itself); argv[1] is the folder, the rest the command
LOCKED_AROUND = """
import fcntl, os, subprocess, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
sys.exit(subprocess.run(sys.argv[2:], timeout=60).returncode)  # (a bound on a hang)
"""


@pytest.mark.skipif(not LOCKS_TOLD, reason="needs Linux's /proc/locks")
@pytest.mark.parametrize("command", [("generate", "--out"), ("lint", "--from")], ids=["a writer", "a reader"])
def test_a_gpudash_run_under_a_wrapper_locking_its_folder_does_not_wait_for_the_wrapper(tmp_path, cli, command):
    """Real processes: a wrapper holds the lock of the folder holding the build and runs gpudash (as `flock . gpudash
    generate` does). The wrapper lets go once gpudash ends: gpudash waited for it forever, saying it waits for
    "another gpudash". The holder is the process gpudash runs under: its turn is taken as held, the build written or
    read, and no other gpudash can take the turn meanwhile."""
    work = tmp_path / "work"
    out = work / "build"
    assert cli("generate", "--out", str(out))[0] == 0
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    wrapper = subprocess.run([sys.executable, "-c", LOCKED_AROUND, str(work), sys.executable, "-m", "generator.cli",
                              *command, str(out)], env=env, capture_output=True, text=True, timeout=300)
    assert wrapper.returncode == 0 and "waiting" not in wrapper.stderr, wrapper.stderr[-2000:]
    assert [p.name for p in work.iterdir()] == ["build"]
    assert cli("generate", "--check", "--out", str(out))[0] == 0


# flock(1)'s own idiom, `( flock 9; gpudash generate ) 9<folder`: the shell opens the folder on a descriptor, flock(1)
# locks it and ends, and the command runs with the descriptor, the lock held through it; argv[1] is the folder, the rest
# the command
INHERITED = """
import fcntl, os, subprocess, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.set_inheritable(fd, True)
subprocess.run([sys.executable, "-c", f"import fcntl; fcntl.flock({fd}, fcntl.LOCK_EX)"], pass_fds=(fd,), check=True)
sys.exit(subprocess.run(sys.argv[2:], pass_fds=(fd,), timeout=60).returncode)  # (a bound on a hang)
"""


@pytest.mark.skipif(not LOCKS_TOLD, reason="needs Linux's /proc/locks")
@pytest.mark.parametrize("command", [("generate", "--out"), ("lint", "--from")], ids=["a writer", "a reader"])
def test_a_gpudash_run_holding_its_folder_s_lock_through_an_inherited_descriptor_does_not_wait(tmp_path, command):
    """Real processes, as flock(1)'s idiom `( flock 9; gpudash generate ) 9<work` runs them: the lock on the folder is
    held through a descriptor gpudash inherits, and the process that took it (flock(1)) has ended, so the lock table
    names no process gpudash runs under. gpudash waited forever ("held by process N", N long gone) for a lock only
    its own end lets go. The turn is its own: the build written or read, no wait."""
    work = tmp_path / "work"
    out = work / "build"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    gpudash = [sys.executable, "-m", "generator.cli"]
    assert subprocess.run([*gpudash, "generate", "--out", str(out)], env=env, capture_output=True).returncode == 0
    wrapped = subprocess.run([sys.executable, "-c", INHERITED, str(work), *gpudash, *command, str(out)], env=env,
                             capture_output=True, text=True, timeout=300)
    assert wrapped.returncode == 0 and "waiting" not in wrapped.stderr, wrapped.stderr[-2000:]
    assert [p.name for p in work.iterdir()] == ["build"]


# A reader of the build (as `lint --from` holds its turn: shared) or, with argv[3] "writer", a writer (as generate
# holds its turn: exclusive) holding the folder argv[1]'s lock until the file argv[2] exists, or 30 s at most; with
# argv[3] "passed", a writer's lock taken by a process that ends (flock(1)), held through the descriptor it was passed
HOLDING = """
import fcntl, os, pathlib, subprocess, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
if sys.argv[3:] == ["passed"]:
    os.set_inheritable(fd, True)
    subprocess.run([sys.executable, "-c", f"import fcntl; fcntl.flock({fd}, fcntl.LOCK_EX)"], pass_fds=(fd,), check=True)
else:
    fcntl.flock(fd, fcntl.LOCK_EX if sys.argv[3:] == ["writer"] else fcntl.LOCK_SH)
print("held", flush=True)
deadline = time.monotonic() + 30
while not pathlib.Path(sys.argv[2]).exists() and time.monotonic() < deadline:
    time.sleep(0.02)
"""


def _held(folder: Path, done: Path, holder: str) -> subprocess.Popen:
    """A process holding `folder`'s turn as `holder` ("reader" or "writer") until `done` exists."""
    process = subprocess.Popen([sys.executable, "-c", HOLDING, str(folder), str(done), holder], stdout=subprocess.PIPE,
                               text=True)
    assert process.stdout.readline() == "held\n"
    return process


def test_generate_check_reads_beside_another_reader_without_waiting(tmp_path, cli):
    """`generate --check` only reads the build: it shares its turn with other readers (lint/plan --from, another
    check: parallel CI checks) and waits for a writer alone. It took a writer's turn, so a check waited for every
    reader and every other check."""
    work = tmp_path / "work"
    out = work / "build"
    assert cli("generate", "--out", str(out))[0] == 0
    done = tmp_path / "done"
    reader = _held(work, done, "reader")
    try:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        check = subprocess.run([sys.executable, "-m", "generator.cli", "generate", "--check", "--out", str(out)],
                               env=env, capture_output=True, text=True, timeout=120)
        assert reader.poll() is None  # the reader still held its turn while the check ran
        assert check.returncode == 0 and "waiting" not in check.stderr, check.stderr[-2000:]
    finally:
        done.write_text("")
        reader.wait(timeout=60)


def _waiting_line(tmp_path: Path, folder: Path, holder: str, *command: str) -> tuple[str, int, int, str]:
    """Runs gpudash `command` while a process holds `folder`'s turn as `holder`: the line it said it waits with (""
    if none), the holder's pid, then, the holder let go, gpudash's exit code and stderr."""
    done = tmp_path / "done"
    held = _held(folder, done, holder)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.Popen([sys.executable, "-m", "generator.cli", *command], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    said = ""
    try:
        watchdog = threading.Timer(300, run.kill)  # (a bound on a hang, not a timing assertion)
        watchdog.start()
        for line in run.stderr:  # until it says it waits, or ends without waiting
            if line.startswith("waiting for "):
                said = line
                break
        watchdog.cancel()
    finally:
        done.write_text("")
        held.wait(timeout=60)
        _, rest = run.communicate(timeout=300)
    return said, held.pid, run.returncode, rest


@pytest.mark.skipif(not LOCKS_TOLD, reason="needs Linux's /proc/locks")
def test_a_lock_whose_taker_ended_is_said_held_through_a_descriptor_passed_on(tmp_path, cli):
    """The lock table names the process that took a lock; flock(1) on a descriptor ends and the lock stays held through
    it by another process. The waiting line named "process N" as the one to find, N long gone (or "process 0" in a
    container). It says the process ended and a process it passed its descriptor to holds the lock."""
    work = tmp_path / "work"
    out = work / "build"
    work.mkdir()
    said, holder, code, stderr = _waiting_line(tmp_path, work, "passed", "generate", "--out", str(out))
    assert said.startswith(f"waiting for another gpudash writing a build into {work} (gpudash runs writing or reading "
                           "a build in one folder take turns; held by process ") and said.endswith(
        ", which has ended: a process it passed its descriptor to holds the lock)\n"), said
    assert f"process {holder}" not in said and code == 0, stderr


@pytest.mark.skipif(not LOCKS_TOLD, reason="needs Linux's /proc/locks")
def test_a_writer_waiting_for_a_reader_says_the_holder_reads(tmp_path, cli):
    """A generate waiting for a reader of the build (lint/plan --from, generate --check: a shared turn) said it waited
    for "another gpudash writing a build", sending a person after a writer that was not there. The line says what the
    holder does, from its lock's kind: reading here (the first story's writers are named writing)."""
    work = tmp_path / "work"
    out = work / "build"
    assert cli("generate", "--out", str(out))[0] == 0
    said, pid, code, stderr = _waiting_line(tmp_path, work, "reader", "generate", "--out", str(out))
    assert said.startswith(f"waiting for another gpudash reading a build in {work} (gpudash runs writing or reading "
                           f"a build in one folder take turns; held by process {pid}: "), said
    assert code == 0, stderr


PROMETHEUS_EMPTY = '{"status": "success", "data": {"resultType": "matrix", "result": []}}'


@pytest.mark.parametrize("reads", [True, False], ids=["its --from build", "its site"])
def test_preview_says_when_it_waits_its_turn(tmp_path, cli, reads):
    """`preview --from` reads a build in a reader's turn and writes its site in a writer's; it waited for a writer of
    either folder without a word (the run took seconds longer, saying nothing). It says it waits, as generate and
    lint/plan --from do: the folder, the holder (a writer here) and, where Linux tells, its pid."""
    from tests.support.canned_server import CannedServer

    work = tmp_path / "work"  # the folder a writer holds: the build's (--from) or the site's
    build, site = (work / "build", tmp_path / "site") if reads else (tmp_path / "build", work / "site")
    work.mkdir()
    assert cli("generate", "--out", str(build))[0] == 0
    with CannedServer(PROMETHEUS_EMPTY) as prometheus:
        said, pid, code, stderr = _waiting_line(tmp_path, work, "writer", "preview", "--from", str(build),
                                                "--prometheus-url", f"http://{prometheus.address}", "--out", str(site))
    held = f"; held by process {pid}: " if LOCKS_TOLD else ")"
    assert said.startswith(f"waiting for another gpudash writing a build into {work} (gpudash runs writing or "
                           f"reading a build in one folder take turns{held}"), said
    assert code == 0 and (site / "index.html").exists(), stderr
