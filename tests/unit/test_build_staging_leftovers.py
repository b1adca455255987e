"""A generate killed while writing its build (SIGKILL, a crash: nothing can hold those) leaves its staging folder
beside the build folder. The next write removes such a folder when it is provably one a gpudash writer made and that
writer is gone (generator/staging.py: its own name form, and its lock file beside it, which nobody holds); a writer
still writing keeps its folder, and nothing else beside the build is touched. The build itself stays as it was."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from generator.output import write_files

REPO = Path(__file__).resolve().parents[2]
FILES = {"grafana/a.json": b"{}\n", "k8s/b.yaml": b"b: 1\n"}
# A writer that stops in the middle of writing: the files are in its staging folder, the swap not made. It does not
# take turns with other writers into the folder (a gpudash from before they took turns, or one that could not lock
# the folder): a writer that does waits for the stopped one to end (test_build_writers_take_turns.py), so only such a
# writer lets another write while it is alive, which its staging folder's lock guards against.
NO_TURNS = "import contextlib\noutput.taking_turns = lambda *args, **kwargs: contextlib.nullcontext()\n"
STOPPED_WRITER = """
import pathlib, sys, time
from generator import output
""" + NO_TURNS + """
fill = output._fill
def stopped(staging, *args, **kwargs):
    fill(staging, *args, **kwargs)
    pathlib.Path(sys.argv[2]).write_text(str(staging))
    time.sleep(600)
output._fill = stopped
output.write_files(pathlib.Path(sys.argv[1]), {"grafana/a.json": b"[]\\n"})
"""


def _stopped_writer(out: Path, tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    """A writer process stopped mid-write, and its staging folder."""
    return _stopped(STOPPED_WRITER, out, tmp_path / "staging-at", "reach its staging folder")


def _stopped(script: str, out: Path, said: Path, what: str) -> tuple[subprocess.Popen, Path]:
    """A writer process running `script` (argv: `out`, `said`), once it has written into `said` the folder it stopped
    at; and that folder."""
    writer = subprocess.Popen([sys.executable, "-c", script, str(out), str(said)],
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    for _ in range(1200):  # (a bound on the wait, not a timing assertion)
        if said.exists() and said.read_text():
            return writer, Path(said.read_text())
        assert writer.poll() is None, f"the writer ended before it could {what}"
        time.sleep(0.05)
    writer.kill()
    raise AssertionError(f"the writer did not {what}")


def _build(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != "manifest.json"}


def test_a_writer_killed_mid_write_leaves_a_folder_the_next_write_removes(tmp_path):
    out = tmp_path / "build"
    write_files(out, FILES)
    writer, staging = _stopped_writer(out, tmp_path)
    try:
        assert staging.parent == tmp_path and staging.name.startswith(".build.new-") and staging.is_dir()
        assert (staging / "grafana" / "a.json").read_bytes() == b"[]\n"
        # beside it: a folder of the same form that no lock shows to be a dead writer's (a gpudash before the lock
        # made it, or someone else), and one of another build's name
        unclaimed = tmp_path / ".build.new-0123456789ab"
        unclaimed.mkdir()
        other = tmp_path / ".other.new-0123456789ab"
        other.mkdir()
        (tmp_path / ".other.new-0123456789ab.lock").write_bytes(b"")
        write_files(out, FILES)  # while the writer is alive, its folder is its own
        assert staging.is_dir() and (staging / "grafana" / "a.json").exists()
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    assert staging.is_dir() and _build(out) == FILES  # killed: its folder is left, the build is as it was
    write_files(out, FILES)
    assert not staging.exists() and not Path(f"{staging}.lock").exists()
    assert _build(out) == FILES
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["build", ".build.new-0123456789ab", ".other.new-0123456789ab", ".other.new-0123456789ab.lock",
         "staging-at"])


def test_a_write_leaves_nothing_beside_the_build(tmp_path):
    out = tmp_path / "build"
    write_files(out, FILES)
    write_files(out, {"grafana/a.json": b"[]\n"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build"]


def test_a_file_system_without_locks_still_gets_its_build(tmp_path, monkeypatch):
    """Where a lock cannot be taken (NFS without its lock service answers ENOLCK), the build is written as before,
    and nothing is left beside it."""
    import errno

    from generator import staging

    def no_locks(fd, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(staging.fcntl, "flock", no_locks)
    out = tmp_path / "build"
    write_files(out, FILES)
    write_files(out, {"grafana/a.json": b"[]\n"})
    assert _build(out) == {"grafana/a.json": b"[]\n"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build"]


# A writer that stops once its build is swapped in, while it removes the previous build it moved aside (taking no
# turns, as STOPPED_WRITER)
STOPPED_REMOVING = """
import pathlib, shutil, sys, time
from generator import output
""" + NO_TURNS + """
rmtree = shutil.rmtree
def stopped(path, *args, **kwargs):
    if ".old-" in pathlib.Path(path).name:
        pathlib.Path(sys.argv[2]).write_text(str(path))
        time.sleep(600)
    return rmtree(path, *args, **kwargs)
shutil.rmtree = stopped  # (staging.remove_tree imports shutil when it removes)
output.write_files(pathlib.Path(sys.argv[1]), {"grafana/a.json": b"[]\\n"})
"""


def _stopped_removing_inside(out: Path, tmp_path: Path, monkeypatch) -> tuple[subprocess.Popen, Path]:
    """`out` a mount point (here and in the writer: it is written inside), FILES written into it, then a writer of
    another build stopped while it removes the previous one it moved into `.gpudash.old-*`: (writer, that folder)."""
    monkeypatch.setattr(os.path, "ismount", lambda path: os.path.abspath(path) == str(out))
    write_files(out, FILES)
    mounted = "import os, sys\nos.path.ismount = lambda path: os.path.abspath(path) == sys.argv[1]\n"
    return _stopped(mounted + STOPPED_REMOVING, out, tmp_path / "removing", "remove the previous build")


def test_a_writer_killed_while_removing_the_previous_build_leaves_a_folder_the_next_write_removes(tmp_path):
    """Killed after its swap, while it removes the previous build it moved aside (`.build.old-*`, a long removal for
    a large build): the next write removes that folder too, the build being the one the killed writer swapped in."""
    out = tmp_path / "build"
    write_files(out, FILES)
    writer, retired = _stopped(STOPPED_REMOVING, out, tmp_path / "removing", "remove the previous build")
    try:
        assert retired.name.startswith(".build.old-") and _build(retired / "build") == FILES
        assert _build(out) == {"grafana/a.json": b"[]\n"}
        write_files(out, {"grafana/a.json": b"[]\n"})  # while the writer is alive, what it moved aside is its own
        assert retired.is_dir()
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    write_files(out, {"grafana/a.json": b"[]\n"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build", "removing"]
    assert _build(out) == {"grafana/a.json": b"[]\n"}


def test_a_writer_killed_while_removing_the_previous_build_inside_a_mount_point_leaves_what_the_next_write_removes(
        tmp_path, monkeypatch):
    """A build folder that is a mount point (it cannot be renamed) is written inside: the new build staged in
    `.gpudash.new-*`, the previous one moved into `.gpudash.old-*`. Killed while removing that previous build (the
    new one in place): its lock was let go before that removal began and the folder had a random name, so nothing
    showed it a dead writer's, and every later write refused, the build folder holding "files gpudash did not write
    (.gpudash.old-*/...)". Now it is removed by the next write, as beside a build that is no mount point."""
    out = tmp_path / "build"
    writer, retired = _stopped_removing_inside(out, tmp_path, monkeypatch)
    try:
        assert retired.parent == out and retired.name.startswith(".gpudash.old-") and _build(retired) == FILES
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    write_files(out, {"grafana/a.json": b"[]\n"})
    assert sorted(p.name for p in out.iterdir()) == ["grafana", "manifest.json"]
    assert _build(out) == {"grafana/a.json": b"[]\n"}


@pytest.mark.skipif(not os.path.exists("/proc/self/mountinfo"), reason="needs Linux's /proc/self/mountinfo")
def test_a_writer_cut_off_by_a_power_loss_inside_a_mount_point_leaves_what_the_next_boot_s_write_removes(
        tmp_path, monkeypatch):
    """The staging module says a power loss ends every lock, as a kill does: a writer cut off while removing the
    previous build inside a mount point leaves what the next write removes. Its lock file records the boot it was
    written in (staging.KERNEL), and after a restart the machine's kernel has another boot id: the lock file reads as
    another machine's live writer's and was never judged by its lock: every later write refused, the build folder
    holding "files gpudash did not write (.gpudash.old-*/...)", until --force. A file system this machine holds alone
    (the test's folder's: ext4, tmpfs, overlay...) is written by no other kernel: a lock file on it made before this
    boot began is an earlier boot's, and its lock tells."""
    from generator import staging
    from generator.errors import OutputError

    out = tmp_path / "build"
    writer, retired = _stopped_removing_inside(out, tmp_path, monkeypatch)
    assert (out / f"{retired.name.replace('.old-', '.new-')}.lock").read_bytes() == staging.KERNEL
    writer.send_signal(signal.SIGKILL)  # (the power loss: its lock is let go, its files stay)
    writer.wait()
    monkeypatch.setattr(staging, "KERNEL", b"kernel 00000000-0000-4000-8000-00000000b007")  # the next boot's,
    monkeypatch.setattr(staging, "_booted_at", lambda: time.time() + 1)  # begun after the lock file was made
    try:
        write_files(out, {"grafana/a.json": b"[]\n"})
        refused = None
    except OutputError as exc:
        refused = str(exc)
    assert refused is None, refused
    assert sorted(p.name for p in out.iterdir()) == ["grafana", "manifest.json"]


@pytest.mark.parametrize("shared", [True, False], ids=["a shared file system", "this machine's, exported"])
def test_a_staging_folder_another_machine_s_writer_made_is_never_taken_for_a_dead_writer_s(tmp_path, monkeypatch,
                                                                                          shared):
    """Where a file system shares files but not locks between machines (NFS mounted with local locks), a lock another
    machine's live writer holds can be taken here: its staging folder was removed while that writer wrote into it.
    Each writer records its kernel in its lock file; a lock file recording another is left with its folder, whatever
    its lock shows. One recording none (written by a gpudash before the record) is judged by its lock, as before.
    So is one on a file system of this machine's (the test's folder's) made in this boot: an NFS client's writing
    into a folder this machine exports (its lock, taken over NFS, does not show in a flock here)."""
    from generator import staging

    if shared:  # (the test's folder read as on a shared file system: none is one this machine holds alone)
        monkeypatch.setattr(staging, "LOCAL_FILE_SYSTEMS", frozenset())
    out = tmp_path / "build"
    write_files(out, FILES)
    for digits, record in (("00000000000b", b"kernel 5f0c-another-machine"), ("00000000000c", b"")):
        staging = tmp_path / f".build.new-{digits}"
        staging.mkdir()
        (staging / "manifest.json").write_text("{}")
        Path(f"{staging}.lock").write_bytes(record)
    write_files(out, {"grafana/a.json": b"[]\n"})
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["build", ".build.new-00000000000b",
                                                                 ".build.new-00000000000b.lock"])
    assert _build(out) == {"grafana/a.json": b"[]\n"}


def test_a_writer_killed_between_the_swap_s_renames_leaves_the_previous_build_aside(tmp_path):
    """Killed between the swap's two renames: the build folder is missing and the previous build is in the `.old-`
    folder (as docs/reliability.md says). The next write removes the staging folder and writes the build, and leaves
    the previous one where it is, for the user to take back."""
    out = tmp_path / "build"
    write_files(out, FILES)
    staging = tmp_path / ".build.new-00000000000a"
    staging.mkdir()
    (staging / "manifest.json").write_text("{}")
    lock = tmp_path / ".build.new-00000000000a.lock"
    lock.write_bytes(b"")
    retired = tmp_path / ".build.old-00000000000a"
    retired.mkdir()
    out.rename(retired / "build")
    write_files(out, {"grafana/a.json": b"[]\n"})
    assert not staging.exists() and not lock.exists() and _build(retired / "build") == FILES
    write_files(out, {"grafana/a.json": b"[]\n"})  # nothing shows it is to go: it stays
    assert _build(retired / "build") == FILES and _build(out) == {"grafana/a.json": b"[]\n"}
