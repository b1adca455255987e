"""The files generate writes for the bundled definitions under settings given as gpudash.yaml's text, but the Grafana
dashboards, built once per test process and shared read-only: a build takes a few tenths of a second, and the
CloudWatch model tests read the same one in every test of a file (and in other files of the same settings). Only the
text is the key: the settings are written into a new folder of their own, as a test's tmp_path would be, and nothing
else is read from it. Those tests read the agents' ConfigMaps and the CloudWatch dashboards and alarms, which build()
makes apart from the Grafana dashboards: these are not rendered (about 40 % of a build's CPU)."""

from __future__ import annotations

import copy
import dataclasses
import functools
import tempfile
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from generator.artifacts import build
from generator.desired import Desired, desired_from
from generator.output import encode
from generator.project import load_project


@functools.lru_cache(maxsize=16)
def files(settings: str) -> Mapping[str, bytes]:
    """{path: bytes} of generate's build for `settings` but its Grafana dashboards (read-only: a test that changes a
    file copies it first)."""
    with tempfile.TemporaryDirectory(prefix="gpudash-built-") as folder:
        (Path(folder) / "gpudash.yaml").write_text(settings)
        return MappingProxyType(encode(build(load_project(Path(folder) / "gpudash.yaml"), grafana=False)))


_DESIRED: dict[str, Desired] = {}  # by the project load_project() finds, as it reads (settings, CSV, definitions)


def _default_desired() -> Desired:
    """The desired state of the project load_project() finds now: its settings are the test's (GPUDASH_CONFIG, the
    working folder's gpudash.yaml, or the bundled ones), so the state is kept by the project, not built once for the
    first. Kept by all a build reads (the settings, the counters CSV's catalog, the dashboards and alarms its
    definitions made), not by the settings alone: a project rewritten in place under the same settings (conftest's
    project_dir given other dashboards or another CSV) is another project."""
    project = load_project()
    key = repr(project)
    if key not in _DESIRED:
        _DESIRED[key] = desired_from(build(project))
    return _DESIRED[key]


def default_desired() -> Desired:
    """What publishing the project load_project() finds writes (desired_from(build(load_project()))), built once in the
    test process for each settings: a build of the same project gives the same every time. Each call gets its own copy
    of every mapping and list of it (the dashboards' models, the CloudWatch bodies and alarms), so nothing one test
    does to them reaches another."""
    kept = _default_desired()
    return dataclasses.replace(kept, grafana=copy.deepcopy(kept.grafana), folder=dict(kept.folder),
                               cloudwatch_dashboards=copy.deepcopy(kept.cloudwatch_dashboards),
                               dashboard_regions=dict(kept.dashboard_regions), alarms=copy.deepcopy(kept.alarms))
