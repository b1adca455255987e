"""verify's reads of the exporters' series on Prometheus' own engine (promtool), scraped every 30 s (gpudash's default
interval; timeout 10 s): one failed scrape (its staleness markers, `up` 0) is neither "no DCGM_FI_* series" nor a
target down, at any instant until the next scrape; an exporter failing every scrape from some scrape on is found
within two intervals and a timeout. The same reads at a real Prometheus whose exporter fails a scrape:
tests/integration/test_verify_failed_scrape.py."""

from __future__ import annotations

import json
import subprocess

import pytest

from generator.checks.prometheus import _dcgm, gpus_reporting, looked_back, recent, tolerant_up
from generator.project import load_project
from tests.support.prometheus_server import binary

LABELS = 'gpu="0",UUID="GPU-0",Hostname="n0",namespace="ml",pod="p",container="main"'
UP = 'up{job="dcgm-exporter",instance="10.0.0.1:9400"}'
# scrapes at 0, 30, ... 300 s: the 4th (90 s) fails, the 7th (180 s) and every one after (the exporter stopped)
SCRAPES = "1 1 1 0 1 1 0 0 0 0 0"


def _values(scrapes: str, up: bool) -> str:
    return " ".join(flag if up else ("60" if flag == "1" else "stale") for flag in scrapes.split())


def _answers(tmp_path, expr: str, at: int, expected: list[float]) -> None:
    """`expr` summed at `at` s reads `expected` (no value: [])."""
    test = {"rule_files": [], "evaluation_interval": "30s", "tests": [{
        "interval": "30s",
        "input_series": [{"series": f"DCGM_FI_DEV_GPU_TEMP{{{LABELS}}}", "values": _values(SCRAPES, False)},
                         {"series": f"DCGM_FI_DEV_POWER_USAGE{{{LABELS}}}", "values": _values(SCRAPES, False)},
                         {"series": UP, "values": _values(SCRAPES, True)}],
        "promql_expr_test": [{"expr": f"sum({expr})", "eval_time": f"{at}s",
                              "exp_samples": [{"labels": "{}", "value": v} for v in expected]}]}]}
    (tmp_path / "t.yaml").write_text(json.dumps(test))
    result = subprocess.run([binary("promtool"), "test", "rules", "t.yaml"], capture_output=True, text=True,
                            cwd=tmp_path)
    assert result.returncode == 0, f"{expr} at {at} s (true {expected}): {result.stdout}{result.stderr}"


@pytest.fixture(scope="module")
def within(tmp_path_factory) -> int:
    folder = tmp_path_factory.mktemp("project")
    (folder / "gpudash.yaml").write_text("")
    return looked_back(load_project(folder / "gpudash.yaml"))


def test_the_look_back_is_one_interval_and_its_timeout(within):
    assert within == 40


@pytest.mark.parametrize("at", [90, 100, 119, 150, 185])
def test_one_failed_scrape_leaves_the_gpu_reporting_its_pod_label_and_its_target_up(tmp_path, within, at):
    # at 90 to 119 s the instant selectors read nothing (stale since 90 s); at 185 s the exporter has failed once
    _answers(tmp_path, gpus_reporting(within), at, [1.0])
    _answers(tmp_path, f"count({recent(_dcgm('pod'), within)}) > bool 0", at, [1.0])
    _answers(tmp_path, tolerant_up(UP, within), at, [1.0])


@pytest.mark.parametrize("at", [225, 240, 300])
def test_an_exporter_failing_every_scrape_is_found_within_two_intervals(tmp_path, within, at):
    # failing from 180 s on: past 180 + 40 s no read falls before the failures
    _answers(tmp_path, gpus_reporting(within), at, [])
    _answers(tmp_path, f"count({recent(_dcgm('pod'), within)}) > bool 0", at, [])
    _answers(tmp_path, tolerant_up(UP, within), at, [0.0])


def test_each_gpu_is_counted_once_over_both_reads(tmp_path, within):
    # two fields of one GPU, each read now and 40 s before: one GPU
    _answers(tmp_path, gpus_reporting(within), 60, [1.0])
