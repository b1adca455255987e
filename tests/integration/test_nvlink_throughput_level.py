"""DCGM's NVLink bandwidth is a throughput, charted as it reads: on a real Prometheus and through the CloudWatch agent.

DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL is MB/s over DCGM's sampling interval (DcgmCacheManager.cpp
ReadAndCacheNvLinkBandwidth: NVML's KiB sent and received since its last reading / seconds / 1000), though every
NVIDIA counters CSV types it counter, and so the exporter's image default serves it `# TYPE ... counter`. Read as a
counter, the health dashboard's "NVLink bandwidth counter rate" charted the rate of change of a throughput: near 0 while
the traffic held, and a fall (300 to 100 MB/s) read as a counter reset. gpudash's catalog of DCGM's fields now says it
is a level in MB/s: every panel and widget reads it as it reads, whatever the CSV types it.

One GPU, an hour of 30 s scrapes, served typed counter: its NVLink carries 300 MB/s for 20 minutes, then 100, then 250.
"""

from __future__ import annotations

import shutil

import pytest

from generator.artifacts import build, grafana_dashboards
from generator.errors import InputError
from generator.output import encode
from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.project import load_project
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels
from tests.support.projects import panels_of
from tests.support.prometheus_server import SCENE_RANGE, backfilled, counted_inline

NVLINK = "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"
STEP, SCRAPES, OFFSET, SEGMENT = 30, 120, 15, 40  # 40 scrapes (20 minutes) a throughput
THROUGHPUTS = (300.0, 100.0, 250.0)
NODE = "gpu-node-1"
VARIABLES = ("namespace", "pod", "node", "gpu", "cluster")
AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"


def _openmetrics(start: int) -> str:
    labels = f'gpu="0",UUID="GPU-0",device="nvidia0",modelName="NVIDIA H100",Hostname="{NODE}",node="{NODE}",' \
             'job="dcgm-exporter",namespace="ml",pod="train-0"'
    lines = [f"# TYPE {NVLINK} counter"]  # as the exporter serves it with NVIDIA's CSV (its image default)
    lines += [f"{NVLINK}{{{labels}}} {THROUGHPUTS[k // SEGMENT]!r} {start + OFFSET + k * STEP}" for k in range(SCRAPES)]
    return "\n".join(lines) + "\n# EOF\n"


def _nvidia_project(folder, reference, pipeline: str = ""):
    """A project reading NVIDIA's dcp-metrics-included.csv (the GPU operator's default), which types it counter."""
    shutil.copyfile(reference / "dcgm" / "dcp-metrics-included.csv", folder / "counters.csv")
    (folder / "gpudash.yaml").write_text("counters: counters.csv\n" + (f"agent:\n  pipeline: {pipeline}\n"
                                                                       if pipeline else ""))
    return load_project(folder / "gpudash.yaml")


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    folder = tmp_path_factory.mktemp("nvlink")
    with backfilled(folder, _openmetrics, SCRAPES * STEP, STEP) as (prometheus, start):
        yield prometheus, start


def _charted(prometheus, start: int, panel: dict, project) -> dict[str, list[float]]:
    """{legend line: values} of the panel in the middle of each 20 minutes."""
    (target,) = panel["targets"]
    expr = interpolate(counted_inline(target["expr"], project),
                       {**SCENE_RANGE, "__rate_interval": "2m", "__interval": "1m", **variables({}, VARIABLES)})
    middle = start + OFFSET + SEGMENT * STEP // 2
    result = prometheus.api("query_range", query=expr, start=middle, end=middle + 2 * SEGMENT * STEP,
                            step=SEGMENT * STEP)["result"]
    return {render_legend(target["legendFormat"], s["metric"]): [float(v) for _, v in s["values"]] for s in result}


@pytest.mark.parametrize("csv", ["bundled", "nvidia"])
def test_the_health_dashboards_nvlink_panel_charts_each_throughput_as_it_reads(scene, csv, reference,
                                                                                tmp_path):
    prometheus, start = scene
    project = load_project() if csv == "bundled" else _nvidia_project(tmp_path, reference)
    (panel,) = [p for p in panels_of(grafana_dashboards(project), "gpudash-health")
                if NVLINK in str(p.get("targets", ""))]
    assert _charted(prometheus, start, panel, project) == {f"{NODE} GPU 0": list(THROUGHPUTS)}
    assert (panel["title"], panel["fieldConfig"]["defaults"]["unit"]) == ("NVLink throughput", "MBs")


@pytest.mark.parametrize("csv", ["bundled", "nvidia"])
def test_the_agents_otel_pipeline_publishes_each_throughput_as_it_reads(csv, reference, tmp_path):
    """The exporter serves the field typed counter (NVIDIA's CSV, the image's default, whichever CSV gpudash read):
    the pipeline makes it a Gauge, so awsemf publishes each reading, not the differences (-200, 150)."""
    project = load_project() if csv == "bundled" else _nvidia_project(tmp_path, reference)
    config, job = agent_config(encode(build(project))[AGENT_FILE])
    scrapes = [Scrape(15.0 * k, f"# TYPE {NVLINK} counter\n"
                      f'{NVLINK}{{gpu="0",UUID="GPU-0",pod="train-0",namespace="ml"}} {value!r}\n',
                      target_labels(job, "ip-10-0-1-1")) for k, value in enumerate((300.0, 300.0, 100.0, 250.0))]
    published = sorted({(p.timestamp, p.value) for p in Agent(config, job).run(scrapes) if p.metric == NVLINK})
    assert [value for _, value in published] == [300.0, 300.0, 100.0, 250.0]


def test_agent_pipeline_classic_with_nvidias_csv_is_refused_naming_the_line_to_retype(reference, tmp_path):
    """The agent's JSON path would publish a level served as a counter as its differences: refused, as for a state,
    with the CSV line to type gauge named."""
    from generator.limits import checked_build

    project = _nvidia_project(tmp_path, reference, pipeline="classic")
    number = project.catalog.get(NVLINK).line
    with pytest.raises(InputError) as refused:
        checked_build(project)
    assert "NVLink throughput" in refused.value.what
    assert f"counters.csv:{number}: type {NVLINK} gauge" in refused.value.hint


def _classic_readings(files) -> list[float]:
    """What the JSON path publishes of the NVLink throughput an exporter serves typed counter (its image's default CSV):
    300, 300, 100 and 250 MB/s at four scrapes."""
    config, job = agent_config(files[AGENT_FILE])
    scrapes = [Scrape(15.0 * k, f"# TYPE {NVLINK} counter\n"
                      f'{NVLINK}{{gpu="0",UUID="GPU-0",pod="train-0",namespace="ml"}} {value!r}\n',
                      target_labels(job, "ip-10-0-1-1")) for k, value in enumerate((300.0, 300.0, 100.0, 250.0))]
    return [p.value for p in sorted(Agent(config, job).run(scrapes), key=lambda p: p.timestamp) if p.metric == NVLINK]


def test_agent_pipeline_classic_with_the_bundled_csv_shows_no_throughput_the_exporter_serves_typed_counter(tmp_path):
    """gpudash does not ship its CSV to the exporter: on its image's default CSV (NVIDIA's) the exporter serves the NVLink
    throughput typed counter, and the JSON path publishes a field as it is typed (its differences: 0 while it holds 300
    MB/s). With the bundled CSV, which types it gauge, agent.pipeline: classic published those differences as "NVLink
    throughput" and nothing said so. Now no CloudWatch widget reads it, the agent publishes none of it, and the health
    dashboard says why and what to do; an alarm on it is refused, naming its line. A `counters` CSV of the user's
    typing it gauge (the exporter's, DCGM_EXPORTER_COLLECTORS) keeps the widget, read as the exporter serves it."""
    import json

    from generator.limits import checked_build
    from tests.support.projects import defined_project

    (tmp_path / "gpudash.yaml").write_text("agent:\n  pipeline: classic\n")
    files = encode(checked_build(load_project(tmp_path / "gpudash.yaml")))
    assert _classic_readings(files) == []
    health = next(json.loads(json.loads(text)["DashboardBody"]) for name, text in files.items()
                  if name.startswith("cloudwatch/dashboards/") and name.endswith("-health.json"))
    assert NVLINK not in json.dumps([w for w in health["widgets"] if w["type"] == "metric"])
    header = json.dumps(health["widgets"][0]["properties"]["markdown"])
    assert "NVLink throughput (agent.pipeline: classic publishes " + NVLINK + " as the exporter types it" in header
    assert "set agent.pipeline: otel" in header

    alarm = ("from generator.model import Alarm, Condition, Query\n\n\ndef alarms(ctx):\n"
             f"    yield Alarm('nvlink', 'NVLink busy', Condition(Query({NVLINK!r}, 'max', ('node', 'gpu')), '>', 100))\n")
    (tmp_path / "alarmed").mkdir()
    with pytest.raises(InputError) as refused:
        checked_build(defined_project(tmp_path / "alarmed", "agent:\n  pipeline: classic\n", alarms=alarm))
    assert "nvlink" in refused.value.what and "agent.pipeline: otel" in str(refused.value.hint) + refused.value.what

    (tmp_path / "own").mkdir()
    shutil.copyfile(load_project().settings.counters_path,
                    tmp_path / "own" / "counters.csv")
    (tmp_path / "own" / "gpudash.yaml").write_text("counters: counters.csv\nagent:\n  pipeline: classic\n")
    own = encode(checked_build(load_project(tmp_path / "own" / "gpudash.yaml")))
    config, job = agent_config(own[AGENT_FILE])
    scrapes = [Scrape(15.0 * k, f"# TYPE {NVLINK} gauge\n"
                      f'{NVLINK}{{gpu="0",UUID="GPU-0",pod="train-0",namespace="ml"}} {value!r}\n',
                      target_labels(job, "ip-10-0-1-1")) for k, value in enumerate((300.0, 300.0, 100.0, 250.0))]
    assert [p.value for p in sorted(Agent(config, job).run(scrapes), key=lambda p: p.timestamp)
            if p.metric == NVLINK and dict(p.dimensions).get("gpu") == "0"] == [300.0, 300.0, 100.0, 250.0]


@pytest.mark.parametrize("spelling", ["link", "dotdot"])
def test_agent_pipeline_classic_with_the_bundled_csv_named_by_another_path_publishes_none_of_the_throughput(
        tmp_path, spelling):
    """`counters` naming the bundled CSV itself, by a symbolic link or a path through `..`, is the bundled CSV: the
    JSON path would publish the throughput's differences as it does without `counters`. The bundled CSV was told by its
    path's spelling, so such a `counters` kept the widget and the agent published 0, 100 and 150 MB/s for 300, 300,
    100 and 250."""
    from generator.limits import checked_build
    from generator.resources import default_counters

    bundled = default_counters()
    if spelling == "link":
        (tmp_path / "counters.csv").symlink_to(bundled)
        named = "counters.csv"
    else:
        named = str(bundled.parent / ".." / bundled.parent.name / bundled.name)
    (tmp_path / "gpudash.yaml").write_text(f"counters: {named}\nagent:\n  pipeline: classic\n")
    assert _classic_readings(encode(checked_build(load_project(tmp_path / "gpudash.yaml")))) == []


def test_agent_pipeline_classic_with_the_bundled_csv_says_at_generate_and_lint_that_the_throughput_is_left_out(
        tmp_path, cli):
    """The NVLink throughput left out of CloudWatch on agent.pipeline: classic with the bundled CSV was said in the
    health dashboard's header alone: `generate` printed nothing of it and `lint` listed nothing, as they say a panel
    the Container Insights add-on leaves out (CW013). Both name the panel, its file and what brings it back (CW022),
    and agent.pipeline: otel or a `counters` CSV of the user's say nothing."""
    import json

    (tmp_path / "gpudash.yaml").write_text("agent:\n  pipeline: classic\n")
    code, _, stderr = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(tmp_path / "build"))
    assert code == 0, stderr
    said = "note: panel 'NVLink throughput' (dashboards/gpu_health.py) is left out of CloudWatch: agent.pipeline: " \
           f"classic publishes {NVLINK} as the exporter types it"
    assert said in stderr and "set agent.pipeline: otel" in stderr and stderr.count("(lint CW022)") == 1, stderr
    for args in ((), ("--from", str(tmp_path / "build"))):
        code, stdout, stderr = cli("lint", "--config", str(tmp_path / "gpudash.yaml"), *args, "--output", "json")
        found = [(f["where"].split(":")[0], f["message"][:52]) for f in json.loads(stdout)["findings"]
                 if f["rule"] == "CW022"]
        assert found == [("dashboards/gpu_health.py", "panel 'NVLink throughput' (dashboards/gpu_health.py)")], found

    (tmp_path / "otel").mkdir()
    code, _, stderr = cli("generate", "--out", str(tmp_path / "otel" / "build"))
    assert code == 0 and "CW022" not in stderr, stderr


@pytest.mark.parametrize("csv", ["dcp-metrics-included.csv", "default-counters.csv"])
def test_the_types_an_exporter_image_serves_unlike_the_bundled_csv_are_those_the_catalog_knows(csv, reference):
    """catalog.IMAGE_DEFAULT_KINDS holds each field NVIDIA's default counters CSVs (the GPU operator's, the exporter
    image's) type otherwise than the bundled CSV, with NVIDIA's type: no more, no fewer. A field the bundled CSV comes
    to type otherwise, or NVIDIA's CSVs come to type alike, is said here rather than published as it is not served."""
    from generator.catalog import IMAGE_DEFAULT_KINDS, parse_counters

    bundled = load_project().catalog
    nvidia = parse_counters((reference / "dcgm" / csv).read_text(), csv)
    unlike = {m.name: m.exported_kind for m in nvidia
              if m.name in bundled and bundled.get(m.name).exported_kind != m.exported_kind}
    assert unlike == IMAGE_DEFAULT_KINDS
