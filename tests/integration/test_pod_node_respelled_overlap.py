"""A pod's GPUs read once while two exporters of its node, both scraped, name the node apart (a surge rollout).

A DaemonSet rolled with maxSurge runs the old and the new exporter pod on a node side by side for a while, both scraped.
Here the old exporter (given no NODE_NAME) writes its own pod's name into Hostname, the new one the node into hostname,
and no node target label is written (a scrape job other than gpudash's). Where the series carry no UUID (a labeldrop
on either side), a GPU is named by its node spelling: the old copies and the new ones are two GPUs of two "nodes" at one
index, and the per-pod panels added them for the whole overlap.

The story (30 s scrapes, 1 hour, backfilled into a real Prometheus): node n1's GPU 0 held by ml/a using 10,000 MiB at
100 W and GPU 1 by dev/a (the same pod name in another namespace) using 3,000 MiB at 30 W; the new exporter, from
ROLLOUT, reads 10 MiB and 0.1 W more (told apart), the old one is scraped until ROLLOUT + OVERLAP. Truth: each pod holds
one GPU; its value is one exporter's reading of it (the old or the new during the overlap, the new after).

A pod runs on one node, so its GPUs are told apart by their index alone, whatever node spellings their copies carry.
"""

from __future__ import annotations

import pytest

from generator.model import Alarm, Condition, Query
from generator.render.alarms import period_value
from tests.support.projects import bundled_panels, bundled_project
from tests.support.prometheus_server import backfilled_fixture
from tests.support.range_panels import panel_at

SPAN, STEP, ROLLOUT, OVERLAP = 3600, 30, 1800, 300
HELD = {0: ("ml", 10_000.0, 100.0), 1: ("dev", 3_000.0, 30.0)}
PANELS = {"Framebuffer used by pod": (1, 10.0), "Power draw of each pod's GPUs": (2, 0.1)}
OLD_HOST, NEW_HOST = 'Hostname="nvidia-dcgm-exporter-x7k2p"', 'hostname="n1"'


def _openmetrics(start: int, before: str | None, after: str | None) -> str:
    """The story, the UUID written under `before` by the old exporter and under `after` by the new (None: none)."""
    lines = []
    for metric, column in (("DCGM_FI_DEV_FB_USED", 1), ("DCGM_FI_DEV_POWER_USAGE", 2)):
        lines.append(f"# TYPE {metric} gauge")
        for t in range(0, SPAN + 1, STEP):
            for uuid, host, address, offset, new in ((before, OLD_HOST, "10.0.0.5", 0, False),
                                                     (after, NEW_HOST, "10.0.0.6", 17, True)):
                if (t >= ROLLOUT + OVERLAP) if not new else (t < ROLLOUT):
                    continue
                for gpu, held in HELD.items():
                    value = held[column] + (PANELS[_title(column)][1] if new else 0)
                    named = f'{uuid}="GPU-n1-{gpu}",' if uuid else ""
                    lines.append(f'{metric}{{gpu="{gpu}",{named}device="nvidia{gpu}",modelName="NVIDIA L4",{host},'
                                 f'container="main",namespace="{held[0]}",pod="a",instance="{address}:9400",'
                                 f'job="gpu-metrics"}} {value:g} {start + t + offset}')
    return "\n".join(lines) + "\n# EOF\n"


def _title(column: int) -> str:
    return next(title for title, (each, _) in PANELS.items() if each == column)


uuid_dropped = backfilled_fixture("pod-node-respelled-uuid-dropped", lambda start: _openmetrics(start, "UUID", None),
                                  SPAN, STEP)
uuid_none = backfilled_fixture("pod-node-respelled-uuid-none", lambda start: _openmetrics(start, None, None), SPAN, STEP)
uuid_kept = backfilled_fixture("pod-node-respelled-uuid-kept", lambda start: _openmetrics(start, "UUID", "UUID"),
                               SPAN, STEP)
TIMES = (ROLLOUT - 60, ROLLOUT + 100, ROLLOUT + OVERLAP - 1, ROLLOUT + OVERLAP + 150, ROLLOUT + 900)


@pytest.mark.parametrize("title", sorted(PANELS))
@pytest.mark.parametrize("story", ["uuid_dropped", "uuid_none", "uuid_kept"])
def test_a_pods_gpu_reads_once_while_two_exporters_name_its_node_apart(request, story, title):
    """During the overlap ml/a read 20,010 MiB and 200.1 W, dev/a 6,010 MiB and 60.1 W, where the series carry no UUID
    on one side or both (the old copies and the new ones two GPUs at one index, under two node names): each pod's
    value is now one exporter's reading of its GPU."""
    prometheus, start = request.getfixturevalue(story)
    column, more = PANELS[title]
    shown = {at: panel_at(prometheus, bundled_project(), bundled_panels()[title], start + at, SPAN) for at in TIMES}
    for at, lines in shown.items():
        readings = {f"Pod {held[0]}/a": (held[column], held[column] + more) for held in HELD.values()}
        assert set(lines) == set(readings), shown
        for legend, value in lines.items():
            old, new = readings[legend]
            read = (old,) if at < ROLLOUT else (new,) if at >= ROLLOUT + OVERLAP + 120 else (old, new)
            assert any(value == pytest.approx(each) for each in read), (at, legend, value, shown)


def test_a_per_pod_rule_reads_a_pods_gpu_once_while_two_exporters_name_its_node_apart(uuid_dropped):
    """A per-pod alert on the sum of a pod's GPUs' power (60 s periods) read ml/a at 200.1 W during the overlap: now
    each step reads one exporter's reading (100 or 100.1 W), their mean over the period between."""
    prometheus, start = uuid_dropped
    project = bundled_project()
    alarm = Alarm("pod-power", "A pod's GPUs draw much",
                  Condition(Query("DCGM_FI_DEV_POWER_USAGE", "sum", ("pod",)), ">", 150), period_seconds=60)
    expr = period_value(alarm, project.catalog, project.settings)
    for at in (ROLLOUT + 100, ROLLOUT + 200):
        read = {f"{s['metric']['namespace']}/{s['metric']['pod']}": float(s["value"][1])
                for s in prometheus.query(expr, at=start + at)}
        assert set(read) == {"ml/a", "dev/a"}, (at, read)
        assert 100.0 - 1e-9 <= read["ml/a"] <= 100.1 + 1e-9 and 30.0 - 1e-9 <= read["dev/a"] <= 30.1 + 1e-9, (at, read)
