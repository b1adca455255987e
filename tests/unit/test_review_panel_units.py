"""A definition's panel unit that gpudash does not know is a usage error, not an internal one.

`Panel.unit` is "a unit key from generator.units" (model.py), yet Panel checks its kind and size and not its unit:
a unit Grafana users write every day (`short`, `none`, `bytes`) reaches the CloudWatch renderer, whose axis label
reads `UNITS[panel.unit]` and raises KeyError: `gpudash generate` and `gpudash lint` end in "internal error" (exit 4,
"please report it") where the charter asks one clear message naming the file and line, exit 2.
"""

from __future__ import annotations

import pytest

DASHBOARD = """\
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="mine", title="Mine", rows=[Row("All", [
        Panel("PCIe replays", Query("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "sum", ()), unit="short"),
    ])])
"""


@pytest.mark.parametrize("command", ["generate", "lint"])
@pytest.mark.xfail(strict=True, reason="Panel does not check its unit: 'short' raises KeyError in the CloudWatch "
                   "renderer's axis label (render/cloudwatch._axis_label), exit 4")
def test_an_unknown_panel_unit_is_a_usage_error_naming_it(project_dir, cli, tmp_path, command):
    config = project_dir(dashboards={"mine.py": DASHBOARD})
    args = ("generate", "--config", str(config), "--out", str(tmp_path / "build")) if command == "generate" else \
        ("lint", "--config", str(config))
    code, _, stderr = cli(*args)
    assert (code, "internal error" in stderr) == (2, False), stderr
    assert "short" in stderr and "mine.py" in stderr, stderr
