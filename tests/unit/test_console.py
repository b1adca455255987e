"""Tables line up on screen whether or not their cells carry colour; NO_COLOR as no-color.org defines it."""

from __future__ import annotations

import click
import pytest

from generator.console import table


def test_columns_count_visible_characters_not_escape_codes():
    rows = [["kube", click.style("FAIL", fg="red"), "no DaemonSet"], ["prometheus", click.style("OK", fg="green"), "3"]]
    lines = click.unstyle(table(["GROUP", "STATUS", "DETAIL"], rows)).split("\n")
    plain = table(["GROUP", "STATUS", "DETAIL"], [[click.unstyle(c) for c in row] for row in rows]).split("\n")
    assert lines == plain
    assert lines[2].index("no DaemonSet") == lines[3].index("3") == lines[0].index("DETAIL")


class _Terminal:
    def isatty(self):
        return True


@pytest.mark.parametrize("value, colour", [(None, True), ("1", False), ("0", False), ("", True)])
def test_no_color_set_and_not_empty_turns_colour_off(monkeypatch, value, colour):
    """no-color.org: NO_COLOR present and not an empty string, whatever its value, prevents colour."""
    from generator.console import colour_enabled

    if value is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", value)
    assert colour_enabled(_Terminal()) is colour
