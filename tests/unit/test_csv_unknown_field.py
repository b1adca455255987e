"""A counters CSV line naming a field no DCGM exporter knows is said, naming the line.

The exporter reads the CSV at start and stops at the first name neither go-dcgm nor its own DCGM_EXP_* fields know
(dcgm-exporter internal/pkg/counters/counter_config.go ExtractCounters: "could not find DCGM field; err: unknown
ExporterCounter field ..."): no GPU metric is served, every panel and alarm reads nothing. gpudash read such a line as
any other, said nothing, and `gpudash lint` passed. Now `generate` warns naming the line and the closest known name,
and lint errs (CSV004; `--disable CSV004` for an exporter newer than gpudash's list of DCGM's fields).
"""

from __future__ import annotations

import json

from generator.catalog import parse_counters

CSV = ("# a comment\n"
       "DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n"
       "DCGM_FI_DEV_GPU_TEMPP , gauge, GPU temperature (in C).\n"
       "DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W).\n")


def test_a_field_no_exporter_knows_is_said_once_naming_the_line_and_the_closest_name():
    catalog = parse_counters(CSV, source="counters.csv")
    (said,) = catalog.unknown
    assert said.startswith("counters.csv:3: DCGM_FI_DEV_GPU_TEMPP is not a field the DCGM exporter knows")
    assert "did you mean DCGM_FI_DEV_GPU_TEMP?" in said
    # the line is still read (a newer exporter may know it), and the known ones are not said
    assert [m.name for m in catalog] == ["DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_TEMPP", "DCGM_FI_DEV_POWER_USAGE"]


def test_nvidias_names_and_the_exporters_own_are_known():
    catalog = parse_counters("DCGM_EXP_XID_ERRORS_COUNT, gauge, XIDs in the window.\n"
                             "dcgm_gpu_temp, gauge, GPU temperature (in C).\n"
                             "DCGM_FI_DRIVER_VERSION, label, Driver Version\n")
    assert catalog.unknown == ()


def test_generate_warns_and_lint_errs_naming_the_line(project_dir, cli):
    settings = project_dir(csv=CSV)
    folder = settings.parent
    code, _, err = cli("generate", "--config", str(settings), "--out", str(folder / "build"))
    assert code == 0 and "Traceback" not in err
    assert "counters.csv:3: DCGM_FI_DEV_GPU_TEMPP is not a field the DCGM exporter knows" in " ".join(err.split())
    code, out, _ = cli("lint", "--config", str(settings), "--output", "json")
    findings = [f for f in json.loads(out)["findings"] if f["rule"] == "CSV004"]
    assert [(f["severity"], f["where"].endswith("counters.csv:3")) for f in findings] == [("error", True)]
    assert code == 1
    code, out, _ = cli("lint", "--config", str(settings), "--output", "json", "--disable", "CSV004")
    assert not [f for f in json.loads(out)["findings"] if f["rule"] == "CSV004"]
