"""What a field's readings are comes from gpudash's catalog of DCGM's fields, not from the counters CSV's type or words.

A running total DCGM defines (energy since the driver loaded, PCIe replays, ECC and NVLink error counts, throttling
time, XIDs since the exporter started, ...) typed `gauge` is read as a counter, whatever its help text says, and a
level typed `counter` as a gauge: each such line is a warning naming it (generate, lint CSV003). Only the help text
told a running total typed gauge: `Energy (in mJ).` typed gauge was read as a level, the agent published the total,
and "Energy use rate" charted the mJ since the driver loaded. A field the catalog does not say keeps the help text's
reading: its running total typed gauge is refused naming the line. On Prometheus the mistyped totals chart their
growth (tests/integration/test_running_total_typed_gauge_rate.py); here, the CloudWatch agent's OpenTelemetry pipeline
publishes it too.
"""

from __future__ import annotations

import pytest

from generator.artifacts import build
from generator.catalog import dcgm_meaning, parse_counters
from generator.errors import InputError
from generator.output import encode
from generator.project import load_project
from generator.resources import default_counters, field_catalog
from tests.support.cloudwatch_agent import Agent, Scrape, agent_config
from tests.support.dcgm_fleet import target_labels

AGENT_FILE = "k8s/cwagent-prometheus-config-gpu-cluster.yaml"
# DCGM's running totals of NVIDIA's CSVs (collected or commented) and the exporter's, and a unit each reads in
TOTALS = {
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "millijoule", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": "count",
    "DCGM_FI_DEV_POWER_VIOLATION": "nanosecond", "DCGM_FI_DEV_THERMAL_VIOLATION": "nanosecond",
    "DCGM_FI_DEV_SYNC_BOOST_VIOLATION": "nanosecond", "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION": "nanosecond",
    "DCGM_FI_DEV_LOW_UTIL_VIOLATION": "nanosecond", "DCGM_FI_DEV_RELIABILITY_VIOLATION": "nanosecond",
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": "count", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": "count",
    "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL": "count", "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": "count",
    "DCGM_FI_DEV_RETIRED_SBE": "count", "DCGM_FI_DEV_RETIRED_DBE": "count",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": "count", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": "count",
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": "count", "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL": "count",
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL": "count", "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL": "count",
    "DCGM_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP_NS": "nanosecond", "DCGM_FI_DEV_PCIE_REPLAY_TOTAL": "count",
    "DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL": "joule", "DCGM_EXP_XID_ERRORS_TOTAL": "count",
    "DCGM_EXP_CLOCK_EVENTS_TOTAL": "count",
}


def test_the_catalog_says_each_running_total_dcgm_defines():
    assert {name: dcgm_meaning(name) for name in TOTALS} == {name: ("counter", unit) for name, unit in TOTALS.items()}
    # every line of the catalog names a kind and a unit it knows (or says nothing)
    from generator.units import UNITS
    assert {kind for kind, _ in field_catalog().values()} == {"counter", "gauge", "-"}
    assert {unit for _, unit in field_catalog().values()} - {"-"} <= set(UNITS)


@pytest.mark.parametrize("name", list(TOTALS))
def test_a_running_total_typed_gauge_is_read_as_a_counter_whatever_its_help_says_naming_the_line(name):
    catalog = parse_counters(f"DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n{name}, gauge, Reading.\n",
                             source="counters.csv")
    field = catalog.get(name)
    assert (field.kind, field.exported_kind, field.retyped, field.unit_key) == ("counter", "gauge", True, TOTALS[name])
    (warning,) = catalog.retypings
    assert warning.startswith(f"counters.csv:2: {name} is typed gauge, but DCGM's {name} is a running total")
    assert "type it counter in this file" in warning


@pytest.mark.parametrize("line, kind, unit", [
    ("DCGM_FI_DEV_GPU_TEMP, counter, Hottest reading.", "gauge", "celsius"),  # a level, whatever its help says
    ("DCGM_FI_DEV_XID_ERRORS, counter, XIDs.", "gauge", "state"),  # the last XID code, not a count
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, Graphics engine activity (in %).", "gauge", "ratio"),  # DCGM's ratio
    ("DCGM_EXP_XID_ERRORS_COUNT, counter, reported XIDs during last window", "gauge", "count"),  # a window's count
    ("DCGM_FI_DEV_FB_USED_PERCENT, gauge, Share of framebuffer used (in %).", "gauge", "ratio"),
    ("DCGM_FI_DEV_POWER_VIOLATION, counter, Throttled (in us).", "counter", "nanosecond"),  # DCGM counts ns
])
def test_each_kind_and_unit_comes_from_the_catalog(line, kind, unit):
    (field,) = parse_counters(line + "\n")
    assert (field.kind, field.unit_key) == (kind, unit)


@pytest.mark.parametrize("line, said", [
    ("DCGM_FI_CUSTOM_REPLAYS, gauge, PCIe link replays (retransmissions) since boot.", "since boot"),
    ("DCGM_FI_CUSTOM_ENERGY, gauge, Energy used since the driver loaded (in mJ).", "since the driver loaded"),
    ("DCGM_EXP_CUSTOM_EVENTS, gauge, Cumulative clock events observed since exporter start.", "Cumulative"),
])
def test_a_field_the_catalog_does_not_say_typed_gauge_whose_help_says_running_total_is_refused(line, said):
    with pytest.raises(InputError) as refused:
        parse_counters(f"DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n{line}\n", source="counters.csv")
    assert refused.value.where == "counters.csv:2"
    assert f"is typed gauge, but its help text says it is a running total ({said!r})" in refused.value.what
    assert refused.value.hint.startswith("type it counter")


def test_a_field_the_catalog_does_not_say_keeps_its_help_texts_reading():
    catalog = parse_counters("DCGM_FI_CUSTOM_TEMP, counter, Board temperature (in C).\n"
                             "DCGM_FI_CUSTOM_TOTAL, counter, Things since boot.\n"
                             "DCGM_FI_CUSTOM_HOT, gauge, Hottest reading since boot (in C).\n", source="counters.csv")
    assert [(m.name, m.kind, m.unit_key) for m in catalog] == [("DCGM_FI_CUSTOM_TEMP", "gauge", "celsius"),
                                                               ("DCGM_FI_CUSTOM_TOTAL", "counter", "count"),
                                                               ("DCGM_FI_CUSTOM_HOT", "gauge", "celsius")]
    assert catalog.retypings == ()


def test_generate_writes_the_build_and_warns_naming_the_line(project_dir, cli):
    settings = project_dir(csv="DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n"
                               "DCGM_FI_DEV_PCIE_REPLAY_COUNTER, gauge, PCIe link replays since boot.\n")
    folder = settings.parent
    code, out, err = cli("generate", "--config", str(settings), "--out", str(folder / "build"))
    assert code == 0 and "Traceback" not in err
    assert "counters.csv:2: DCGM_FI_DEV_PCIE_REPLAY_COUNTER is typed gauge, but DCGM's DCGM_FI_DEV_PCIE_REPLAY_COUNTER " \
           "is a running total (count): gpudash reads it as a counter" in " ".join(err.split())
    code, out, _ = cli("lint", "--config", str(settings), "--output", "json")
    assert "CSV003" in out


def test_the_agents_otel_pipeline_publishes_a_mistyped_energy_counters_growth(tmp_path):
    """The exporter serves the energy counter typed gauge; the pipeline makes it a cumulative Sum, and awsemf publishes
    the mJ of each scrape interval (4.5e6 at 300 W over 15 s), not the 5.2e11 mJ since the driver loaded."""
    lines = [f"{line.split(',')[0]}, gauge, Energy (in mJ)." if line.startswith("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
             else line for line in default_counters().read_text().splitlines()]
    (tmp_path / "counters.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "gpudash.yaml").write_text("counters: counters.csv\n")
    project = load_project(tmp_path / "gpudash.yaml")
    files = encode(build(project))
    config, job = agent_config(files[AGENT_FILE])
    scrapes = [Scrape(15.0 * k, "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION gauge\n"
                      'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="GPU-0",pod="train-0",namespace="ml"} '
                      f"{5.2e11 + 4.5e6 * k!r}\n", target_labels(job, "ip-10-0-1-1")) for k in range(4)]
    published = {p.value for p in Agent(config, job).run(scrapes) if p.metric == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"}
    assert published == {4.5e6}


NVLINK_THROUGHPUT = [f"DCGM_FI_DEV_NVLINK{way}_{name}_{link}" for way in ("", "_TX", "_RX")
                     for name in ("BANDWIDTH", "THROUGHPUT") for link in (*(f"L{k}" for k in range(18)), "TOTAL")]


def test_nvlink_bandwidth_total_is_read_as_the_rate_it_is():
    """DCGM's NVLink bandwidth and throughput fields are MB/s over its sampling interval (DcgmCacheManager.cpp
    ReadAndCacheNvLinkBandwidth: KiB since its last reading / seconds / 1000; unit MB/s in dcgm_fields.cpp): levels,
    though every NVIDIA CSV types DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL counter. Its NVIDIA line is read as a gauge the
    exporter serves as a counter, with one warning naming the line."""
    assert {name: dcgm_meaning(name) for name in NVLINK_THROUGHPUT} == \
        {name: ("gauge", "megabytes_per_s") for name in NVLINK_THROUGHPUT}
    catalog = parse_counters("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL, counter, Total number of NVLink bandwidth counters "
                             "for all lanes.\n", source="counters.csv")
    (field,) = catalog
    assert (field.kind, field.exported_kind, field.retyped, field.unit_key) == ("gauge", "counter", True,
                                                                                 "megabytes_per_s")
    assert field.charted_unit.grafana == "MBs"
    (warning,) = catalog.retypings
    assert warning.startswith("counters.csv:1: DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL is typed counter, but DCGM's "
                              "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL is a reading of its own, not a running total (MB/s)")
    assert "type it gauge in this file" in warning
    # the bundled CSV types it as DCGM says: no warning
    bundled = load_project().catalog
    assert (bundled.get("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL").exported_kind, bundled.retypings) == ("gauge", ())


def test_the_agents_otel_pipeline_drops_a_mistyped_totals_first_reading_and_sends_a_reset_as_it_reads(tmp_path):
    """awsemf (the agent's fork, datapoint.go) turns the cumulative Sum the pipeline makes into differences: the first
    reading has none and is dropped, and a smaller reading (the driver reloaded: the energy starts again near 0) is sent
    as it reads, the energy since the reset, never a negative difference."""
    lines = [f"{line.split(',')[0]}, gauge, Energy (in mJ)." if line.startswith("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
             else line for line in default_counters().read_text().splitlines()]
    (tmp_path / "counters.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "gpudash.yaml").write_text("counters: counters.csv\n")
    config, job = agent_config(encode(build(load_project(tmp_path / "gpudash.yaml")))[AGENT_FILE])
    readings = [5.2e11, 5.2e11 + 4.5e6, 1000.0, 1000.0 + 4.5e6]
    scrapes = [Scrape(15.0 * k, "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION gauge\n"
                      'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="GPU-0",pod="train-0",namespace="ml"} '
                      f"{reading!r}\n", target_labels(job, "ip-10-0-1-1")) for k, reading in enumerate(readings)]
    published = [p.value for p in Agent(config, job).run(scrapes) if p.metric == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]
    assert published == [4.5e6, 1000.0, 4.5e6]


def test_agent_pipeline_classic_refused_for_a_mistyped_total_names_the_csv_line_to_retype(tmp_path):
    """On agent.pipeline: classic a running total typed gauge would be published whole: generate refuses the build, and
    its hint names the fix that keeps the classic path, the CSV line to type as DCGM says, beside setting otel."""
    from generator.limits import checked_build

    lines = [line.replace(", counter,", ", gauge,") if line.startswith("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION") else line
             for line in default_counters().read_text().splitlines()]
    number = next(k for k, line in enumerate(lines, start=1) if line.startswith("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"))
    (tmp_path / "counters.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "gpudash.yaml").write_text("counters: counters.csv\nagent:\n  pipeline: classic\n")
    with pytest.raises(InputError) as refused:
        checked_build(load_project(tmp_path / "gpudash.yaml"))
    assert "Energy use rate" in refused.value.what
    assert f"counters.csv:{number}: type DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter" in refused.value.hint
