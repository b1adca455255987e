"""A user's alarm judged with an exporter's scrapes landing at a minute's edge: the project that defines it, the
refusal generate gives it, and the datapoints of its scrapes through the agent model of the build's own config."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Callable

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from tests.support.agent_points import AGENT_FILE
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels


def alarm_project(folder: Path, definitions: str, interval: int) -> Path:
    """The settings of a project at scrape.interval `interval` seconds whose alarms are `definitions` (alarms/mine.py)."""
    (folder / "alarms").mkdir()
    (folder / "alarms" / "mine.py").write_text(definitions)
    (folder / "gpudash.yaml").write_text(f"scrape:\n  interval: {interval}s\ndefinitions:\n  alarms: [alarms]\n")
    return folder / "gpudash.yaml"


def refusal(cli, settings: Path, folder: Path) -> tuple[str, str]:
    """(the error line, stderr) of generate refusing `settings` (exit 2, no traceback), asserting the previous build in
    `folder`/build is left as it was."""
    (folder / "build").mkdir()
    (folder / "build" / "kept.txt").write_text("the previous build")
    code, _, stderr = cli("generate", "--config", str(settings), "--out", str(folder / "build"))
    assert code == 2 and "Traceback" not in stderr
    (message,) = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert [p.name for p in (folder / "build").iterdir()] == ["kept.txt"]
    return message, stderr


def edge_points(settings: Path, alarm: str, page: Callable[[float], str], interval: int,
                seconds: int) -> tuple[dict, list]:
    """(the CloudWatch request of the alarm whose name ends `-<alarm>-<severity>`, the datapoints of node-a's exporter
    serving `page(t)` at a scrape taken at t) for scrapes every `interval` seconds for `seconds`, each within 0.3 s of
    the minute's edge (some periods of one scrape interval hold none, some two)."""
    files = encode(build(load_project(settings), grafana=False))
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if a["Request"]["AlarmName"].rsplit("-", 1)[0].endswith(f"-{alarm}")]
    config, job = agent_config(files[AGENT_FILE])
    jitter = random.Random(1)
    scrapes = []
    for k in range(seconds // interval):
        t = k * interval + 59.9 + jitter.uniform(-0.3, 0.3)
        scrapes.append(Scrape(t, page(t), target_labels(job, "node-a")))
    return request, Agent(config, job).run(scrapes)


def gauge_page(field: str, values: list[float]) -> str:
    """An exporter page of node-a's GPUs reading `values` (GPU i the i-th) of the gauge `field`, GPU i held by pod p<i>
    of namespace ml."""
    lines = [f"# TYPE {field} gauge"]
    lines += [f'{field}{{gpu="{gpu}",UUID="GPU-node-a-{gpu}",device="nvidia{gpu}",modelName="NVIDIA A100-SXM4-80GB",'
              f'Hostname="node-a",container="main",namespace="ml",pod="p{gpu}"}} {value}'
              for gpu, value in enumerate(values)]
    return "\n".join(lines) + "\n"
