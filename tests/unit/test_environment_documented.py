"""Every environment variable gpudash reads is in docs/commands.md's Environment table, and every one the table names
is read: a newcomer setting PROMETHEUS_URL or AWS_PROFILE finds there which commands read it."""

from __future__ import annotations

import re

from tests.conftest import REPO
from tests.support import documentation

READ = re.compile(r'(?:environ(?:\.get)?\(|environ\[|getenv\(|envvar=|_VARIABLE = )"([A-Z][A-Z0-9_]+)"')


def _read_by_code() -> set[str]:
    return {name for path in (REPO / "generator").rglob("*.py") for name in READ.findall(path.read_text())}


def _documented() -> set[str]:
    section = documentation.text("commands.md").split("\n## Environment\n", 1)[1].split("\n## ", 1)[0]
    return {name for row in section.splitlines() if row.startswith("| `")
            for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", row.split("|")[1])}


def test_every_variable_read_is_documented_and_every_documented_one_is_read():
    read = _read_by_code()
    assert {"GRAFANA_TOKEN", "PROMETHEUS_URL", "AWS_PROFILE", "GPUDASH_CONFIG"} <= read  # the pattern finds them
    assert sorted(read - _documented()) == []
    assert sorted(_documented() - read) == []
