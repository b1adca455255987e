"""A running total (a counter: its help text says "since boot", "since the driver loaded", "Cumulative") typed gauge
in the counters CSV is refused, naming the line and what to type.

The exporter serves a field as the CSV types it, and the CloudWatch agent publishes a gauge's readings as they are:
widgets and alarms on a counter's growth would read the total since it began. The PCIe replays alarm (more than 50
in 5 minutes) compared a GPU's replays since boot with 50 and fired for good once it had had 51; "Energy use rate"
charted the mJ since the driver loaded. NVIDIA's CSVs type every such field counter, and no gauge of theirs says so.
"""

from __future__ import annotations

import pytest

from generator.catalog import parse_counters
from generator.errors import InputError


@pytest.mark.parametrize("line, said", [
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER, gauge, PCIe link replays (retransmissions) since boot.", "since boot"),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, gauge, Energy used since the driver loaded (in mJ).",
     "since the driver loaded"),
    ("DCGM_EXP_CLOCK_EVENTS_TOTAL, gauge, Cumulative clock events observed since exporter start.", "Cumulative"),
])
def test_a_running_total_typed_gauge_is_refused_naming_the_line(line, said):
    with pytest.raises(InputError) as refused:
        parse_counters(f"DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n{line}\n", source="counters.csv")
    assert refused.value.where == "counters.csv:2"
    assert f"is typed gauge, but its help text says it is a running total ({said!r})" in refused.value.what
    assert refused.value.hint.startswith("type it counter")


def test_the_same_lines_typed_counter_and_levels_saying_since_are_read():
    catalog = parse_counters(
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER, counter, PCIe link replays (retransmissions) since boot.\n"
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, Energy used since the driver loaded (in mJ).\n"
        "DCGM_FI_DEV_GPU_TEMP, gauge, Hottest reading since boot (in C).\n", source="counters.csv")
    assert [(m.name, m.kind) for m in catalog] == [("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter"),
                                                    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter"),
                                                    ("DCGM_FI_DEV_GPU_TEMP", "gauge")]


def test_generate_says_it_once_and_exits_2(project_dir, cli):
    settings = project_dir(csv="DCGM_FI_DEV_PCIE_REPLAY_COUNTER, gauge, PCIe link replays since boot.\n")
    folder = settings.parent
    code, out, err = cli("generate", "--config", str(settings), "--out", str(folder / "build"))
    assert code == 2 and "Traceback" not in err
    assert "counters.csv:1: DCGM_FI_DEV_PCIE_REPLAY_COUNTER is typed gauge" in err
    assert "fix: type it counter" in err
    assert not (folder / "build").exists()


@pytest.mark.xfail(strict=True, reason="a field DCGM defines as a running total (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, "
                   "energy since the driver loaded) typed gauge with help text that does not say so is taken for a "
                   "level: the agent publishes the total, and 'Energy use rate of each pod's GPUs' charts the mJ since "
                   "the driver loaded (5e11 for a GPU 20 days at 300 W) as a rate; only the help text's wording is "
                   "read, not what the field is")
def test_a_field_dcgm_counts_up_typed_gauge_is_refused_whatever_its_help_says():
    try:
        catalog = parse_counters("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, gauge, Energy (in mJ).\n", source="counters.csv")
    except InputError:
        return
    assert catalog.get("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION").kind == "counter", "read as a level"
