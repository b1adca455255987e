"""Golden files: one CloudWatch dashboard body and one alarm request, byte for byte.

A deliberate change regenerates them: GPUDASH_UPDATE_GOLDEN=1 make test, then review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from generator.serialize import to_json

GOLDEN = Path(__file__).resolve().parent.parent / "golden"


@pytest.fixture(scope="module")
def files():
    return encode(build(load_project()))


def _check(name: str, data: bytes) -> None:
    path = GOLDEN / name
    if os.environ.get("GPUDASH_UPDATE_GOLDEN"):
        path.write_bytes(data)
    assert path.read_bytes().decode() == data.decode(), f"{name} changed; see the module docstring"


def test_by_pod_dashboard_body(files):
    dashboard = json.loads(files["cloudwatch/dashboards/gpudash-gpu-cluster-by-pod.json"])
    _check("cloudwatch-by-pod-body.json", to_json(json.loads(dashboard["DashboardBody"])))


def test_gpu_idle_alarm_request(files):
    alarms = json.loads(files["cloudwatch/alarms.json"])["alarms"]
    idle = next(a for a in alarms if a["Request"]["AlarmName"] == "gpudash-gpu-cluster-gpu-idle-warning")
    _check("cloudwatch-gpu-idle-alarm.json", to_json(idle))
