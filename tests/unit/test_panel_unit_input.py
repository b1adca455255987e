"""A definition's panel unit or levels that gpudash cannot read are a usage error, not an internal one.

`Panel.unit` is "a unit key from generator.units" (model.py), yet Panel checks its kind and size and not its unit:
a unit Grafana users write every day (`short`, `none`, `bytes`) reaches the CloudWatch renderer, whose axis label
reads `UNITS[panel.unit]` and raises KeyError: `gpudash generate` and `gpudash lint` end in "internal error" (exit 4,
"please report it") where the charter asks one clear message naming the file and line, exit 2. `thresholds` (documented as "(warning,
critical)") is not checked either: `thresholds=(80,)` or `thresholds=80` ends in "internal error: ValueError: not
enough values to unpack" / "TypeError: cannot unpack non-iterable int object", exit 4.
"""

from __future__ import annotations

import pytest

DASHBOARD = """\
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    yield Dashboard(id="mine", title="Mine", rows=[Row("All", [
        Panel("PCIe replays", Query("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "sum", ()), {field}),
    ])])
"""
FIELDS = {"unit": ('unit="short"', "short"), "one level": ("thresholds=(80,)", "thresholds"),
          "a number for levels": ("thresholds=80", "thresholds")}


@pytest.mark.parametrize("field", list(FIELDS))
@pytest.mark.parametrize("command", ["generate", "lint"])
def test_a_panel_field_gpudash_cannot_read_is_a_usage_error_naming_it(project_dir, cli, tmp_path, command, field):
    text, named = FIELDS[field]
    config = project_dir(dashboards={"mine.py": DASHBOARD.format(field=text)})
    args = ("generate", "--config", str(config), "--out", str(tmp_path / "build")) if command == "generate" else \
        ("lint", "--config", str(config))
    code, _, stderr = cli(*args)
    assert (code, "internal error" in stderr) == (2, False), stderr
    assert named in stderr and "mine.py" in stderr, stderr
