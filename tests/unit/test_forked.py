"""forked.Ahead: items made in a forked child are the items made here, and an answer the child leaves short is made
here; a large build's rules made ahead write the same files."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from generator import forked
from generator.forked import Ahead


def _items(log: list[str] | None = None, fail_at: int | None = None):
    for number in range(3):
        if number == fail_at:
            raise ValueError(f"item {number} failed")
        if log is not None:
            log.append(f"made {number}")
        yield {"number": number, "text": f"item {number}" * 1000, "bytes": bytes(range(256)) * 300}


@pytest.fixture
def single_threaded(monkeypatch):
    """The test workers run threads of their own (a fork is then refused): the child made here only computes."""
    monkeypatch.setattr(forked, "can_fork", lambda: hasattr(os, "fork"))
    monkeypatch.setattr(forked, "spare_cpu", lambda: True)


def test_the_child_makes_the_items_made_here(single_threaded):
    here = list(_items())
    made_here: list[str] = []
    ahead = Ahead(lambda: _items(made_here))
    assert ahead.forked
    assert [ahead.take() for _ in range(3)] == here
    ahead.close()
    assert made_here == []  # (made in the child: this process's list is untouched)


def test_without_a_fork_the_items_are_made_here_as_taken():
    made: list[str] = []
    ahead = Ahead(lambda: _items(made), fork=False)
    assert not ahead.forked and made == []
    assert ahead.take()["number"] == 0 and made == ["made 0"]  # only what is taken
    ahead.close()


def test_other_threads_running_refuse_the_fork(monkeypatch):
    import threading

    monkeypatch.setattr(forked, "spare_cpu", lambda: True)
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    assert not Ahead(lambda: _items()).forked


@pytest.mark.parametrize("cpus, load, spare", [(1, 0.0, False), (2, 0.9, True), (2, 1.6, False), (4, 3.2, True),
                                               (4, 3.6, False)])
def test_a_child_is_forked_only_where_another_cpu_is_free(monkeypatch, cpus, load, spare):
    """On a busy machine (or one CPU) the child would only take turns with this process, at a cost."""
    monkeypatch.setattr(forked, "CPU_MAX", "/nonexistent/cpu.max")  # (no container limit: this machine's aside)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)))
    monkeypatch.setattr(os, "getloadavg", lambda: (load, 0.0, 0.0))
    assert forked.spare_cpu() is spare


@pytest.mark.parametrize("cpu_max, spare", [("100000 100000\n", False), ("150000 100000\n", False),
                                             ("200000 100000\n", True), ("max 100000\n", True), (None, True)])
def test_a_container_limited_to_one_cpu_forks_no_child(monkeypatch, tmp_path, cpu_max, spare):
    """Four CPUs by affinity and an idle host, but the container's cgroup allows one CPU's time (or 1.5): a child
    would only take turns with this process. No limit (max), or none to read: the affinity counts."""
    limit = tmp_path / "cpu.max"
    if cpu_max is not None:
        limit.write_text(cpu_max)
    monkeypatch.setattr(forked, "CPU_MAX", str(limit))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(4)))
    monkeypatch.setattr(os, "getloadavg", lambda: (0.2, 0.0, 0.0))
    assert forked.spare_cpu() is spare


def test_an_error_in_the_child_is_raised_here(single_threaded):
    """The child sends the items before the error and ends; the item it failed to make is made here, and its error is
    this process's."""
    made_here: list[str] = []
    ahead = Ahead(lambda: _items(made_here, fail_at=1))
    assert ahead.take()["number"] == 0
    with pytest.raises(ValueError, match="item 1 failed"):
        ahead.take()
    assert made_here == ["made 0"]  # made again to reach item 1, which failed here as in the child
    ahead.close()


def test_a_child_killed_leaves_the_rest_to_this_process(single_threaded):
    import signal

    def slow():
        yield 0
        if os.getpid() != parent:  # the child waits to be killed
            signal.pause()
        yield 1

    parent = os.getpid()
    ahead = Ahead(slow)
    assert ahead.take() == 0
    os.kill(ahead._pid, signal.SIGKILL)
    assert ahead.take() == 1
    ahead.close()


def test_closed_early_the_child_is_stopped_and_collected(single_threaded):
    import signal

    def waits():
        signal.pause()
        yield 0

    ahead = Ahead(waits)
    pid = ahead._pid
    ahead.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_a_large_fleet_writes_the_same_files_with_its_rules_made_ahead(project_dir):
    """A fleet of RULES_AHEAD_FROM clusters or more, generated, makes its rules and their two files in a child: the
    set and every file (encoded) are those of the build without the child, byte for byte. In a process of its own:
    this test's worker runs threads, where no child is forked."""
    from generator.artifacts import RULES_AHEAD_FROM

    count = RULES_AHEAD_FROM + 1
    clusters = "".join(f"  - {{name: c{i:04}, region: {('us-east-1', 'eu-west-1')[i % 2]}, prometheus_label: c{i:04}"
                       f"{', exporter: {deployment: helm}' if i % 3 == 0 else ''}}}\n" for i in range(count))
    folder = project_dir(f"clusters:\n{clusters}")
    code = ("import sys, threading\n"
            "from pathlib import Path\n"
            "import generator.forked\n"
            "generator.forked.spare_cpu = lambda: True  # (whatever the machine's load)\n"
            "from generator.project import load_project\n"
            "from generator.limits import checked_build\n"
            "from generator.output import encode, artifacts_record\n"
            "project = load_project(Path(sys.argv[1]))\n"
            "assert threading.active_count() == 1\n"
            "ahead = checked_build(project, ahead=True)\n"
            "assert ahead.rule_files is not None, 'no child'\n"
            "plain = checked_build(project)\n"
            "assert plain.rule_files is None\n"
            "assert ahead == plain\n"
            "assert artifacts_record(ahead) == artifacts_record(plain)\n"
            "one, other = encode(ahead), encode(plain)\n"
            "assert sorted(one) == sorted(other)\n"
            "assert [path for path in one if one[path] != other[path]] == []\n"
            "print(len(one), len(one['prometheus/rules.yaml']))\n")
    done = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    files, rules = map(int, done.stdout.split())
    assert files > 4 * count and rules > 100_000


def test_a_large_build_is_made_while_its_child_writes_the_rules_files(project_dir, tmp_path):
    """The child makes the rules, then their two files; the build waits for the rules alone and goes on with the rest
    while the files are written (output.encode takes them last): here the child writes them only once the build is
    done, which a build waiting for them never is (the child gives up waiting after 20 s, and the build is then done
    after the files were written). In a process of its own: this test's worker runs threads, where no child is
    forked."""
    from generator.artifacts import RULES_AHEAD_FROM

    clusters = "".join(f"  - {{name: c{i:04}, region: us-east-1, prometheus_label: c{i:04}}}\n"
                       for i in range(RULES_AHEAD_FROM))
    folder = project_dir(f"clusters:\n{clusters}")
    code = ("import sys, time\n"
            "from pathlib import Path\n"
            "import generator.artifacts, generator.forked\n"
            "generator.forked.spare_cpu = lambda: True  # (whatever the machine's load)\n"
            "go, written = Path(sys.argv[2]) / 'built', Path(sys.argv[2]) / 'files-written'\n"
            "made = generator.artifacts._rules_ahead\n"
            "def late(project):\n"
            "    items = made(project)\n"
            "    yield next(items)\n"
            "    for _ in range(2000):  # the files once the build is done (20 s at most)\n"
            "        if go.exists():\n"
            "            break\n"
            "        time.sleep(0.01)\n"
            "    written.touch()\n"
            "    yield from items\n"
            "generator.artifacts._rules_ahead = late\n"
            "from generator.project import load_project\n"
            "from generator.limits import checked_build\n"
            "from generator.output import encode\n"
            "ahead = checked_build(load_project(Path(sys.argv[1])), ahead=True)\n"
            "print('files written before the build was done:', written.exists())\n"
            "go.touch()\n"
            "files = encode(ahead)\n"
            "print(len(files['prometheus/rules.yaml']) > 0)\n")
    done = subprocess.run([sys.executable, "-c", code, str(folder), str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("\n")[:2] == ["files written before the build was done: False", "True"]


def _state(pid: int) -> str:
    """The process's state letter (R, S, Z...), '' once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return ""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_parent_killed_mid_build_takes_its_child_with_it():
    """A generate killed with SIGKILL runs no clean-up: its child, still making the rules, would hold the build
    folder's lock (inherited) until done. It ends with its parent."""
    import signal
    import time

    code = ("import os, signal, sys\n"
            "import generator.forked as forked\n"
            "forked.spare_cpu = lambda: True\n"
            "def waits():\n"
            "    signal.pause()\n"
            "    yield 0\n"
            "ahead = forked.Ahead(waits)\n"
            "assert ahead.forked\n"
            "print(ahead._pid, flush=True)\n"
            "signal.pause()\n")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    child = 0
    try:
        child = int(parent.stdout.readline())
        assert _state(child) not in ("", "Z")
        parent.kill()
        parent.wait()
        for _ in range(500):  # the kernel's signal is sent at the parent's exit: at most a few ms
            if _state(child) in ("", "Z", "X"):
                break
            time.sleep(0.01)
        assert _state(child) in ("", "Z", "X"), "the child outlived its killed parent"
    finally:
        parent.kill()
        if child and _state(child) not in ("", "Z", "X"):  # (the test failed: not left running)
            os.kill(child, signal.SIGKILL)
