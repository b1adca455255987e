"""Where the suite's CPU goes, recorded when GPUDASH_SUITE_CPU names a file (benchmarks/suite.py sets it).

Each test process that runs tests appends one JSON line per test file ({"file", "self", "children", "held"}: its own
user + system CPU and that of the processes it waited for while the file ran, and the seconds the file held the
process: what orders tests/conftest.py's START_FIRST), one per test ({"test", "self", "children"}: the same CPU over
its setup, call and teardown; a process a module's fixture started is counted with the test whose teardown waited for
it, the module's last) and one per process it waited for ({"command", "cpu", "during"}: os.wait4's usage of that
process and of those it waited for: a promtool run, a Prometheus, a Python subprocess; the test file running when it
ended, None before the first test). The xdist controller records nothing: its
waits are the workers themselves. Unset, nothing is patched."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import threading
import time

import pytest

_LOCK = threading.Lock()


class SuiteCpu:
    def __init__(self, path: str):
        self.path = path
        self.file: str | None = None
        self.start = (0.0, 0.0, 0.0)
        self._patch_waits()

    def _write(self, record: dict) -> None:
        with _LOCK, open(self.path, "a") as out:
            out.write(json.dumps(record) + "\n")

    def _patch_waits(self) -> None:
        """subprocess.Popen._try_wait with os.wait4: the same wait, and the finished process's usage recorded."""
        suite = self

        def try_wait(popen, wait_flags):
            try:
                pid, status, usage = os.wait4(popen.pid, wait_flags)
            except ChildProcessError:  # as CPython's own: waiting disabled, the child is gone
                return popen.pid, 0
            if pid == popen.pid:
                args = popen.args if isinstance(popen.args, (list, tuple)) else [popen.args]
                suite._write({"command": os.path.basename(str(args[0])), "cpu": usage.ru_utime + usage.ru_stime,
                              "during": suite.file})
            return pid, status

        subprocess.Popen._try_wait = try_wait

    @staticmethod
    def _usage() -> tuple[float, float, float]:
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime, time.monotonic()

    def _file_done(self) -> None:
        if self.file is not None:
            own, children, now = self._usage()
            self._write({"file": self.file, "self": own - self.start[0], "children": children - self.start[1],
                         "held": now - self.start[2]})
            self.file = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if item.path.name != self.file:  # the previous file's last test and its module's teardown are done
            self._file_done()
            self.file, self.start = item.path.name, self._usage()
        before = self._usage()
        yield
        after = self._usage()
        self._write({"test": item.nodeid, "self": after[0] - before[0], "children": after[1] - before[1]})

    def pytest_sessionfinish(self, session):
        self._file_done()


def register(config) -> None:
    """Record into GPUDASH_SUITE_CPU's file when it is set, in every process that runs tests."""
    path = os.environ.get("GPUDASH_SUITE_CPU")
    controller = not hasattr(config, "workerinput") and bool(getattr(config.option, "numprocesses", None))
    if path and not controller:
        os.environ.pop("GPUDASH_SUITE_CPU")  # a process a test starts (a nested pytest) records nothing twice
        config.pluginmanager.register(SuiteCpu(path), "gpudash-suite-cpu")
