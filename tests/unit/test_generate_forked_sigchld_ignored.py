"""A large fleet's generate started with SIGCHLD ignored (ea167dc9, forked.Ahead).

A process that sets SIGCHLD to SIG_IGN (a daemon that does not want zombies, an init-less container's entry point)
passes it on across exec: Linux keeps an ignored signal ignored in the new program. The kernel then reaps each child
itself, and waitpid of it fails with ECHILD. forked.Ahead.close waits for the child it forked (os.waitpid), so a fleet
of RULES_AHEAD_FROM clusters or more, generated where another CPU is free, stops with "internal error:
ChildProcessError: [Errno 10] No child processes" (exit 4) and writes nothing; 49 clusters, or a busy machine, generate.
Without the child the build is the same: the child's end is not this process's error.
"""

from __future__ import annotations

import subprocess
import sys


# gpudash generate as its command runs it (cli.run), started with SIGCHLD ignored; the machine's load aside
_GENERATE = ("import signal, sys\n"
             "signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # (as inherited across exec)\n"
             "import generator.forked\n"
             "generator.forked.spare_cpu = lambda: True  # (another CPU free, whatever this machine's load)\n"
             "sys.argv = ['gpudash', 'generate', '--config', sys.argv[1], '--out', sys.argv[2]]\n"
             "from generator.cli import run\n"
             "run()\n")


def _fleet(count: int) -> str:
    clusters = "".join(f"  - {{name: c{i:04}, region: {('us-east-1', 'eu-west-1')[i % 2]}, prometheus_label: c{i:04}}}\n"
                       for i in range(count))
    return f"clusters:\n{clusters}"


def _generate(project_dir, tmp_path, count: int) -> subprocess.CompletedProcess:
    config = project_dir(_fleet(count))
    return subprocess.run([sys.executable, "-c", _GENERATE, str(config), str(tmp_path / "build")],
                          capture_output=True, text=True)


def test_a_small_fleet_generates_with_sigchld_ignored(project_dir, tmp_path):
    """Below RULES_AHEAD_FROM no child is forked: generate writes the build (the control)."""
    from generator.artifacts import RULES_AHEAD_FROM

    done = _generate(project_dir, tmp_path, RULES_AHEAD_FROM - 1)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "build" / "prometheus" / "rules.yaml").stat().st_size > 50_000


def test_a_large_fleet_generates_with_sigchld_ignored(project_dir, tmp_path):
    from generator.artifacts import RULES_AHEAD_FROM

    done = _generate(project_dir, tmp_path, RULES_AHEAD_FROM + 1)
    assert "ChildProcessError" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "build" / "prometheus" / "rules.yaml").stat().st_size > 50_000
