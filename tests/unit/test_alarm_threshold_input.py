"""An alarm definition's threshold that is no number is a usage error, not an internal one nor an alarm that is no
JSON.

`Condition(query, comparison, threshold)` checks its comparison (model.Alarm) but not its threshold:

* `"80"` (a number read from a file or an environment variable, still a string) ends generate in "internal error:
  ValueError: Unknown format code 'g' for object of type 'str'", and `None` in "TypeError: float() argument must be a
  string or a real number", exit 4;
* `float("nan")` (a level computed from an empty list of readings) is written: `cloudwatch/alarms.json` and the
  CloudFormation template hold `"Threshold": NaN`, which is not JSON (RFC 8259 has no NaN: `json.loads(...,
  parse_constant=...)` refuses it, and so do the AWS CLI's `--cli-input-json` and CloudFormation), the Prometheus rule
  compares `> bool nan`, never true, and `gpudash lint` says 0 errors.

The charter asks one clear message naming the file and line, exit 2.
"""

from __future__ import annotations

import json

import pytest

ALARMS = """\
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("hot", "GPU hot", Condition(Query("DCGM_FI_DEV_GPU_TEMP", "max", ("node", "gpu")), ">", {threshold}),
                description="A GPU is hot.", runbook="Cool it.")
"""


def _not_json(constant: str):
    raise ValueError(f"{constant} is not JSON")


@pytest.mark.parametrize("threshold", ['"80"', "None", 'float("nan")'])
def test_a_threshold_that_is_no_number_is_a_usage_error_naming_it(tmp_path, cli, threshold):
    (tmp_path / "alarms").mkdir()
    (tmp_path / "alarms" / "mine.py").write_text(ALARMS.format(threshold=threshold))
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  alarms: [alarms]\n")
    code, _, stderr = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "build"))
    if code == 0:  # what was written must at least be JSON
        for path in [tmp_path / "build" / "cloudwatch" / "alarms.json",
                     *sorted((tmp_path / "build" / "cloudformation").glob("*.json"))]:
            json.loads(path.read_text(), parse_constant=_not_json)
    assert (code, "internal error" in stderr) == (2, False), stderr
    assert "mine.py" in stderr and "threshold" in stderr, stderr


def test_a_threshold_finite_until_scaled_to_a_period_s_readings_is_a_usage_error(tmp_path, cli):
    """The cluster's power summed over a period's readings compares the threshold times the readings (10 at 30 s
    scrapes): 1e308 is a number, its tenfold is none JSON holds (the files held `"Threshold": Infinity`, exit 0). (A
    node's total is the agent's per scrape, read as AVG: its threshold is not scaled.)"""
    (tmp_path / "alarms").mkdir()
    (tmp_path / "alarms" / "mine.py").write_text(ALARMS.replace('"DCGM_FI_DEV_GPU_TEMP", "max", ("node", "gpu")',
                                                                '"DCGM_FI_DEV_POWER_USAGE", "sum", ()')
                                                 .format(threshold="1e308"))
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  alarms: [alarms]\n")
    code, _, stderr = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "build"))
    assert (code, "internal error" in stderr) == (2, False), stderr
    assert "mine.py:5" in stderr and "no finite number" in stderr, stderr
    assert not (tmp_path / "build").exists()
