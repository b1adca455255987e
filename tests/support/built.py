"""The files generate writes for the bundled definitions under settings given as gpudash.yaml's text, but the Grafana
dashboards, built once per test process and shared read-only: a build takes a few tenths of a second, and the
CloudWatch model tests read the same one in every test of a file (and in other files of the same settings). Only the
text is the key: the settings are written into a new folder of their own, as a test's tmp_path would be, and nothing
else is read from it. Those tests read the agents' ConfigMaps and the CloudWatch dashboards and alarms, which build()
makes apart from the Grafana dashboards: these are not rendered (about 40 % of a build's CPU)."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project


@functools.lru_cache(maxsize=16)
def files(settings: str) -> Mapping[str, bytes]:
    """{path: bytes} of generate's build for `settings` but its Grafana dashboards (read-only: a test that changes a
    file copies it first)."""
    with tempfile.TemporaryDirectory(prefix="gpudash-built-") as folder:
        (Path(folder) / "gpudash.yaml").write_text(settings)
        return MappingProxyType(encode(build(load_project(Path(folder) / "gpudash.yaml"), grafana=False)))
