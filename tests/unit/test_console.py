"""Tables line up on screen whether or not their cells carry colour."""

from __future__ import annotations

import click

from generator.console import table


def test_columns_count_visible_characters_not_escape_codes():
    rows = [["kube", click.style("FAIL", fg="red"), "no DaemonSet"], ["prometheus", click.style("OK", fg="green"), "3"]]
    lines = click.unstyle(table(["GROUP", "STATUS", "DETAIL"], rows)).split("\n")
    plain = table(["GROUP", "STATUS", "DETAIL"], [[click.unstyle(c) for c in row] for row in rows]).split("\n")
    assert lines == plain
    assert lines[2].index("no DaemonSet") == lines[3].index("3") == lines[0].index("DETAIL")
