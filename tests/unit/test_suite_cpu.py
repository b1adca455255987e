"""GPUDASH_SUITE_CPU's records (tests/support/suite_cpu.py) and what benchmarks/suite.py prints from them: per file,
per test and per program (and each program's CPU per test file), so that the costliest single tests are named, not
only their files."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

from tests.conftest import REPO
from tests.support.suite_cpu import SuiteCpu


def _report():
    spec = importlib.util.spec_from_file_location("bench_suite", REPO / "benchmarks" / "suite.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.where_the_cpu_goes


def _recorder(path: Path) -> SuiteCpu:
    """A SuiteCpu writing to `path`, without its patch of subprocess's waits (which would stay for the worker)."""
    suite = object.__new__(SuiteCpu)
    suite.path, suite.file, suite.start = str(path), None, (0.0, 0.0, 0.0)
    return suite


def _run(suite: SuiteCpu, nodeid: str) -> None:
    item = SimpleNamespace(nodeid=nodeid, path=Path(nodeid.split("::")[0]))
    protocol = suite.pytest_runtest_protocol(item, None)
    next(protocol)  # the test runs here
    for _ in protocol:
        pass


def test_each_test_gets_a_record_and_each_file_one_when_the_next_file_starts(tmp_path):
    records = tmp_path / "cpu.jsonl"
    suite = _recorder(records)
    for nodeid in ("tests/unit/test_a.py::test_one", "tests/unit/test_a.py::test_two", "tests/unit/test_b.py::test_x"):
        _run(suite, nodeid)
    suite.pytest_sessionfinish(None)
    written = [json.loads(line) for line in records.read_text().splitlines()]
    assert [r.get("test", r.get("file")) for r in written] == [
        "tests/unit/test_a.py::test_one", "tests/unit/test_a.py::test_two", "test_a.py",
        "tests/unit/test_b.py::test_x", "test_b.py"]
    assert all(set(r) == {"test", "self", "children"} for r in written if "test" in r)
    assert all(set(r) == {"file", "self", "children", "held"} for r in written if "file" in r)


def test_the_report_names_the_costliest_tests_apart_from_their_files_and_programs():
    records = [{"file": "test_a.py", "self": 3.0, "children": 40.0, "held": 90.0},
               {"file": "test_b.py", "self": 5.0, "children": 0.0, "held": 10.0},
               {"test": "t/test_a.py::cheap", "self": 1.0, "children": 0.5},
               {"test": "t/test_a.py::dear", "self": 2.0, "children": 39.5},
               {"test": "t/test_b.py::middle", "self": 5.0, "children": 0.0},
               {"command": "promtool", "cpu": 30.0, "during": "test_a.py"},
               {"command": "promtool", "cpu": 9.0, "during": "test_a.py"},
               {"command": "prometheus", "cpu": 0.5, "during": None},  # a spare stopped before the first test
               {"command": "python3.11", "cpu": 1.0, "during": "test_b.py"}]
    text = _report()(records)
    lines = text.splitlines()
    assert "  test processes' own (in-process tests): 8 s" in lines  # the files' own, tests not counted again
    assert "  promtool: 39 s in 2 runs" in lines and "  python: 1 s in 1 runs" in lines
    # the files that spent most of each program's CPU (a process is counted where it ended)
    assert lines[lines.index("promtool's CPU by test file:") + 1] == "  test_a.py: 39.0 s in 2 runs"
    assert lines[lines.index("prometheus's CPU by test file:") + 1] == "the tests that took most:"
    tests = lines[lines.index("the tests that took most:") + 1:lines.index("the test files that held a worker longest:")]
    assert tests == ["  t/test_a.py::dear: 41.5 s (own 2.0)", "  t/test_b.py::middle: 5.0 s (own 5.0)",
                     "  t/test_a.py::cheap: 1.5 s (own 1.0)"]
