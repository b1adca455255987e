"""GPUs whose copies a per-GPU gauge panel keeps one index of (promql._one_index_per_uuid), as a scraping Prometheus
stores them: 30 s scrapes over an hour, each old exporter scraped at 0 s of each interval, each new one from ROLLOUT,
11 s into each interval, reading 10 W more.

* nodes node-b and ip-10-0-4-6.ec2.internal, no `node` target label: the old exporter, given no NODE_NAME, writes its
  own pod's name into `Hostname`; the new one writes the node's name into `Hostname` too (one spelling) and numbers
  the GPUs apart (F, D, E for D, E, F). Both are scraped for 4 intervals (to ROLLOUT + 90). Node node-c alike, its
  old exporter writing its pod's name into `hostname`.
* GPU J moves from node n5 (index 0, `node` label) to node n6 (index 1) at ROLLOUT (n5 keeps K at index 1, n6 has L
  at index 0): its copy under n5 held in the look-back, live under n6.
"""

from __future__ import annotations

import pytest

from tests.support.fleet_rule import fleet_period_values
from tests.support.projects import bundled_panels, bundled_project
from tests.support.prometheus_server import written_fixture
from tests.support.range_panels import panel_at
from tests.support.scraped_gpus import scraped

SPAN, STEP, ROLLOUT, NEW_PHASE = 3600, 30, 1800, 11
WATTS = {"D": 200, "E": 400, "F": 600, "J": 350, "K": 450, "L": 550, "M": 250, "N": 650, "O": 750, "P": 150, "Q": 850, "R": 950}
# (node, its old exporter's pod and the label it writes it into, GPUs at 0, 1, 2 before the rollout, then at the new
# exporter, which writes the node into Hostname): names the name order alone ranked the other way (by the last
# character), and a pod's name in a spelling placed before the node's
OVERLAPPED = (("node-b", "nvidia-dcgm-exporter-x7k2z", "Hostname", "DEF", "FDE", "10.0.2"),
              ("ip-10-0-4-6.ec2.internal", "nvidia-dcgm-exporter-zzzzz", "Hostname", "MNO", "OMN", "10.0.4"),
              ("node-c", "nvidia-dcgm-exporter-q8w4t", "hostname", "PQR", "RPQ", "10.0.7"))


def _uuid(name: str) -> str:
    return f"GPU-{ord(name):08x}-5d3e-0a2f-91c4-7e20b6{ord(name):06x}"


def _scraped(start: int):
    def held(node: dict, host: tuple[str, str], gpus: dict[int, str], more: int, first: int, last: int):
        return lambda t: [({"gpu": str(index), "UUID": _uuid(name), host[0]: host[1], **node}, WATTS[name] + more)
                          for index, name in gpus.items()] if first <= t <= last else []
    exporters = tuple(exporter for node, pod, spelling, old, new, net in OVERLAPPED for exporter in (
        (f"{net}.5", 0, held({}, (spelling, pod), dict(enumerate(old)), 0, 0, ROLLOUT + 3 * STEP)),
        (f"{net}.6", NEW_PHASE, held({}, ("Hostname", node), dict(enumerate(new)), 10, ROLLOUT, SPAN)))) + (
        ("10.0.5.5", 0, held({"node": "n5"}, ("Hostname", "n5"), {0: "J", 1: "K"}, 0, 0, ROLLOUT - STEP)),
        ("10.0.5.6", 0, held({"node": "n5"}, ("Hostname", "n5"), {1: "K"}, 0, ROLLOUT, SPAN)),
        ("10.0.6.5", 0, held({"node": "n6"}, ("Hostname", "n6"), {0: "L"}, 0, 0, ROLLOUT - STEP)),
        ("10.0.6.6", 0, held({"node": "n6"}, ("Hostname", "n6"), {0: "L", 1: "J"}, 0, ROLLOUT, SPAN)),
    )
    return scraped(start, exporters, SPAN, STEP)


rolled = written_fixture("exporter-overlap-one-spelling", _scraped, SPAN, STEP)


def _power(prometheus, start: int, at: int, **selected: str) -> dict[str, float]:
    return panel_at(prometheus, bundled_project(), bundled_panels()["Power draw"], start + at, SPAN, **selected)


@pytest.mark.parametrize("after", [15, 45, 75])
@pytest.mark.parametrize("node, pod, spelling, old, new, net", OVERLAPPED)
def test_a_gpu_both_exporters_write_in_one_spelling_is_drawn_under_the_node_through_the_overlap(
        rolled, after, node, pod, spelling, old, new, net):
    """While both exporters of the node are scraped (11 to 90 s after the rollout) each of its GPUs draws one line,
    named by the node it is on, at the new exporter's index, not by the old exporter's pod (one index kept of each
    UUID: promql._one_index_per_uuid, by the kind of name where both are present: KIND_STEP). Before, by the name
    order alone, the pod's name won for these two nodes: 'nvidia-dcgm-exporter-x7k2z GPU 0..2' (200, 400, 600 W)
    and no line under node-b through the overlap; for node-c, whose old exporter writes its pod's name into
    `hostname` (placed before `Hostname`), by the spelling's place before the kind: 'nvidia-dcgm-exporter-q8w4t GPU
    0..2' (150, 850, 950 W)."""
    prometheus, start = rolled
    shown = _power(prometheus, start, ROLLOUT + after)
    lines = {line: watts for line, watts in shown.items() if line.startswith((node, pod))}
    assert lines == {f"{node} GPU {index}": WATTS[name] + 10.0 for index, name in enumerate(new)}


@pytest.mark.parametrize("after", [15, 100, 400])
def test_a_gpu_moved_between_nodes_is_drawn_once_under_the_node_it_is_on(rolled, after):
    """After J moved from n5 (index 0) to n6 (index 1): n5 GPU 1 (K), n6 GPU 0 (L), n6 GPU 1 (J), J once."""
    prometheus, start = rolled
    shown = _power(prometheus, start, ROLLOUT + after)
    assert {line: w for line, w in shown.items() if line.startswith(("n5 ", "n6 "))} == \
        {"n5 GPU 1": 450.0, "n6 GPU 0": 550.0, "n6 GPU 1": 350.0}


@pytest.mark.parametrize("node", ["n5", "n6"])
def test_a_gpu_moved_between_nodes_is_drawn_under_the_node_picked_only_where_it_is(rolled, node):
    prometheus, start = rolled
    before = _power(prometheus, start, ROLLOUT - 120, node=node)
    after = _power(prometheus, start, ROLLOUT + 100, node=node)
    expected = {"n5": ({"n5 GPU 0": 350.0, "n5 GPU 1": 450.0}, {"n5 GPU 1": 450.0}),
                "n6": ({"n6 GPU 0": 550.0}, {"n6 GPU 0": 550.0, "n6 GPU 1": 350.0})}[node]
    assert (before, after) == expected


@pytest.fixture(scope="module")
def fleet_rules(tmp_path_factory):
    return fleet_period_values(tmp_path_factory.mktemp("fleet"))


@pytest.mark.parametrize("after", [-60, 15, 45, 75, 150, 330])
def test_fleet_rules_count_each_gpu_once_through_the_one_spelling_overlaps_and_the_move(rolled, fleet_rules, after):
    """A fleet rule's 1- and 5-minute period values through the overlaps and J's move: 12 GPUs, 6,150 W before the
    rollout, up to 6,240 W after (the new exporters read 10 W more), each GPU under the node its newest copy names
    (promql.newest_nodes)."""
    prometheus, start = rolled
    values = {name: [float(s["value"][1]) for s in prometheus.query(expr, at=start + ROLLOUT + after)]
              for name, expr in fleet_rules.items()}
    assert values["fleet-gpus"] == values["fleet-gpus-5m"] == [12.0], values
    assert all(6150.0 <= values[name][0] <= 6240.0 for name in ("fleet-power", "cluster-power-5m")), values
