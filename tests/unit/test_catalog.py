"""The counters CSV is read by the exporter's rules, and every field gets a unit and a family."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from generator.catalog import load_counters, parse_counters
from generator.errors import InputError
from generator.resources import default_counters


def test_comment_only_at_column_zero_and_blank_lines_skipped():
    catalog = parse_counters("# comment\n\nDCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).\n")
    assert [m.name for m in catalog] == ["DCGM_FI_DEV_GPU_UTIL"]


def test_indented_hash_is_not_a_comment():
    with pytest.raises(InputError) as error:
        parse_counters(" # not a comment\n")
    assert "<counters>:1" in str(error.value)


def test_fields_are_trimmed_of_spaces_including_before_the_comma():
    catalog = parse_counters("DCGM_FI_DEV_DEC_UTIL ,     gauge, Decoder utilization (in %).\n")
    metric = catalog.get("DCGM_FI_DEV_DEC_UTIL")
    assert (metric.kind, metric.unit_key) == ("gauge", "percent")


def test_quoted_help_may_hold_a_comma():
    catalog = parse_counters('DCGM_FI_DEV_GPU_TEMP, gauge,"GPU temperature, die ""core"" (in C)."\n')
    assert catalog.get("DCGM_FI_DEV_GPU_TEMP").help == 'GPU temperature, die "core" (in C).'


def test_a_quote_after_a_space_is_a_bare_quote_as_for_the_exporter():
    with pytest.raises(InputError, match="quote inside an unquoted field"):
        parse_counters('DCGM_FI_DEV_GPU_TEMP, gauge, "GPU temperature, die (in C)."\n')


def test_crlf_line_ends_are_accepted():
    catalog = parse_counters("DCGM_FI_DEV_GPU_TEMP, gauge, t (in C).\r\nDCGM_FI_DEV_GPU_UTIL, gauge, u (in %).\r\n")
    assert [m.help for m in catalog] == ["t (in C).", "u (in %)."]


def test_unquoted_comma_in_help_is_a_four_field_error():
    with pytest.raises(InputError) as error:
        parse_counters("# x\nDCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature, die (in C).\n", source="c.csv")
    assert "c.csv:2" in str(error.value) and "found 4" in str(error.value)


@pytest.mark.parametrize("kind", ["Gauge", "int", "", "histogramm"])
def test_unknown_types_are_rejected(kind):
    with pytest.raises(InputError, match="is not one of gauge, counter, histogram, summary, label"):
        parse_counters(f"DCGM_FI_DEV_GPU_TEMP, {kind}, help\n")


def test_a_field_repeated_with_another_type_is_rejected():
    with pytest.raises(InputError, match="listed twice with different types"):
        parse_counters("DCGM_FI_DEV_GPU_TEMP, gauge, a\nDCGM_FI_DEV_GPU_TEMP, counter, b\n")


def test_a_field_repeated_with_the_same_type_keeps_the_first_and_is_reported():
    catalog = parse_counters("DCGM_FI_DEV_GPU_TEMP, gauge, a (in C).\nDCGM_FI_DEV_GPU_TEMP, gauge, b\n")
    assert catalog.get("DCGM_FI_DEV_GPU_TEMP").help == "a (in C)."
    assert catalog.repeats == ("<counters>:2: DCGM_FI_DEV_GPU_TEMP repeats line 1; the first line wins",)


def test_numeric_field_ids_are_not_names():
    with pytest.raises(InputError, match="numeric ids are not accepted"):
        parse_counters("150, gauge, temperature\n")


@pytest.mark.parametrize("name, help_text, unit", [
    ("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", "mhz"),
    ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", "celsius"),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", "watt"),
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", "percent"),
    ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", "mebibyte"),
    ("DCGM_FI_DEV_FB_FREE", "Frame buffer memory free (in MB).", "mebibyte"),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ).", "millijoule"),
    ("DCGM_FI_DEV_POWER_VIOLATION", "Throttling duration due to power constraints (in ns).", "nanosecond"),
    # a field the catalog of DCGM's fields gives no unit: the help text's
    ("DCGM_FI_CUSTOM_VIOLATION", "Throttling duration due to power constraints (in us).", "microsecond"),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", "The rate of data transmitted ... in bytes per second.", "bytes_per_s"),
    # Profiling ratios are 0-1 even where an old file says "(in %)".
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "Ratio of cycles the tensor (HMMA) pipe is active (in %).", "ratio"),
    ("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", "state"),
    ("DCGM_FI_DEV_SOMETHING_NEW", "A field gpudash has never seen.", "count"),
])
def test_units_come_from_the_catalog_or_the_help_text(name, help_text, unit):
    kind = "counter" if "since boot" in help_text else "gauge"  # a total since boot typed gauge is refused
    assert parse_counters(f"{name}, {kind}, {help_text}\n").get(name).unit_key == unit


def test_counters_chart_as_rates_in_their_own_unit():
    catalog = parse_counters(
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, Energy (in mJ).\n"
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER, counter, PCIe retries.\n")
    assert catalog.get("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION").charted_unit.grafana == "mwatt"
    assert catalog.get("DCGM_FI_DEV_PCIE_REPLAY_COUNTER").charted_unit.grafana == "cps"


def test_a_throttling_counter_reads_as_the_share_of_time_in_its_own_unit():
    """Half of each second throttled is 0.5 whether the help text of a field the catalog of DCGM's fields gives no unit
    counts ns or us."""
    for unit, per_second in (("ns", 5e8), ("us", 5e5)):
        field = parse_counters(f"DCGM_FI_CUSTOM_VIOLATION, counter, Throttling (in {unit}).\n").get(
            "DCGM_FI_CUSTOM_VIOLATION")
        assert field.charted_unit.grafana == "percentunit"
        assert per_second * field.unit.rate_scale == pytest.approx(0.5), unit


@pytest.mark.parametrize("name, family", [
    ("DCGM_FI_DEV_SM_CLOCK", "clocks"), ("DCGM_FI_DEV_GPU_TEMP", "temperature"),
    ("DCGM_FI_DEV_POWER_USAGE", "power"), ("DCGM_FI_DEV_GPU_UTIL", "utilization"),
    ("DCGM_FI_DEV_FB_USED", "memory"), ("DCGM_FI_DEV_XID_ERRORS", "reliability"),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "pcie"), ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "nvlink"),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "profiling"), ("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "license"),
    ("DCGM_EXP_XID_ERRORS_COUNT", "exporter"), ("dcgm_gpu_temp", "temperature"),
])
def test_families(name, family):
    assert parse_counters(f"{name}, gauge, x\n").get(name).family == family


def test_label_fields_are_not_series():
    catalog = parse_counters("DCGM_FI_DRIVER_VERSION, label, Driver Version\nDCGM_FI_DEV_GPU_UTIL, gauge, u (in %).\n")
    assert [m.name for m in catalog.series()] == ["DCGM_FI_DEV_GPU_UTIL"]
    assert [m.name for m in catalog.labels()] == ["DCGM_FI_DRIVER_VERSION"]


def test_every_reference_csv_parses(reference):
    files = sorted((reference / "dcgm").glob("*.csv"))
    assert len(files) >= 4
    for path in files:
        catalog = load_counters(path)
        assert len(catalog.series()) >= 15, path


def test_bundled_csv_has_the_operator_default_fields_and_types(reference):
    ours = {(m.name, m.kind) for m in load_counters(default_counters())}
    operator = {(m.name, m.kind) for m in load_counters(reference / "dcgm" / "dcp-metrics-included.csv")}
    assert ours == operator
    # typed as DCGM says where NVIDIA's file types a level counter: the NVLink throughput (MB/s), the one line
    written = {m.name: m.exported_kind for m in load_counters(default_counters())}
    served = {m.name: m.exported_kind for m in load_counters(reference / "dcgm" / "dcp-metrics-included.csv")}
    assert {name: (written[name], served[name]) for name in written if written[name] != served[name]} == {
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": ("gauge", "counter")}


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("DCGM_FI,# \n\"\tgaugecounter(in%)1\r;é")), max_size=200))
def test_fuzzed_csv_either_parses_or_raises_input_error(text):
    try:
        catalog = parse_counters(text)
    except InputError as error:
        assert error.where and error.where.startswith("<counters>")
        return
    for metric in catalog:
        assert metric.kind in ("gauge", "counter", "histogram", "summary", "label")
        assert metric.name == metric.name.strip(" ")


# the names `DCGM_FI_[A-Z_]{1,20}` matches, drawn as text (hypothesis's regex strategy spent most of the test's time)
_NAME_CHARACTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ_"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.text(alphabet=_NAME_CHARACTERS, min_size=1, max_size=20).map("DCGM_FI_".__add__),
                          st.sampled_from(["gauge", "counter", "summary", "label"]),
                          st.text(alphabet=st.characters(blacklist_characters=',"\n\r', blacklist_categories=("Cs",)),
                                  max_size=40)),
                unique_by=lambda r: r[0], min_size=1, max_size=20))
def test_fuzzed_well_formed_records_round_trip(records):
    text = "\n".join(f"{name}, {kind}, {help_text}" for name, kind, help_text in records) + "\n"
    catalog = parse_counters(text)
    assert [(m.name, m.exported_kind, m.help) for m in catalog] == [
        (name, kind, help_text.strip(" ")) for name, kind, help_text in records]
    # a level typed counter (DCGM_FI_XID_ERRORS, the last code: a state) is a gauge the exporter serves as a counter
    assert all(m.kind == m.exported_kind or m.retyped for m in catalog)
