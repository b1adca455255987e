"""The live fleet settles only once a step has read each pod of a time-sliced GPU (mixed_fleet.settled_time): a
sample stamped just past a whole second, then a staleness marker from the next scrape before the next whole second,
is a sample no 1 s step reads, as promtool's Prometheus engine evaluates it."""

import subprocess

import yaml

from tests.support.mixed_fleet import read_at_a_step
from tests.support.prometheus_server import binary

SELECTOR = 'DCGM_FI_DEV_GPU_TEMP{UUID="GPU-ts-0"}'


def test_a_sample_ended_by_a_marker_within_its_second_is_read_at_no_step(tmp_path):
    series = {  # every 100 ms: ts-1 scraped late at 1.1 s, ended by the next scrape at 1.8 s; ts-0 at 1.8 s and 2.8 s
        'DCGM_FI_DEV_GPU_TEMP{UUID="GPU-ts-0", pod="ts-1"}': "_x11 50 _x6 stale",
        'DCGM_FI_DEV_GPU_TEMP{UUID="GPU-ts-0", pod="ts-0"}': "_x18 50 _x9 50",
    }
    stored = {"expr": f"count_over_time({SELECTOR}[3s])", "eval_time": "3s",  # both pods have a sample in range
              "exp_samples": [{"labels": '{UUID="GPU-ts-0", pod="ts-1"}', "value": 1},
                              {"labels": '{UUID="GPU-ts-0", pod="ts-0"}', "value": 2}]}
    read = {"expr": read_at_a_step(SELECTOR, 3), "eval_time": "3s",  # a step read ts-0 only (at 2 s and 3 s)
            "exp_samples": [{"labels": '{UUID="GPU-ts-0", pod="ts-0"}', "value": 2}]}
    tests = {"rule_files": [], "evaluation_interval": "1s",
             "tests": [{"interval": "100ms", "promql_expr_test": [stored, read],
                        "input_series": [{"series": name, "values": values} for name, values in series.items()]}]}
    (tmp_path / "steps.yaml").write_text(yaml.safe_dump(tests))
    result = subprocess.run([binary("promtool"), "test", "rules", "steps.yaml"], cwd=tmp_path,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
