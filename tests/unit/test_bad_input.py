"""Bad input: one clear message naming file and line, exit 2, no traceback, build/ untouched."""

from __future__ import annotations

import os
import stat
import pytest

GOOD_CSV = "DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).\nDCGM_FI_DEV_FB_USED, gauge, FB used (in MiB).\n"
GOOD_DASHBOARD = """
from generator.model import Dashboard, Row
from generator.panels import per_pod

dashboard = Dashboard("mine", "Mine", [Row("r", [per_pod("DCGM_FI_DEV_GPU_UTIL", "Util")])])
"""

# (name, csv text or None, config text, dashboard files, expected fragments of the message)
CASES = [
    ("csv four fields", "DCGM_FI_DEV_GPU_UTIL, gauge, util, in %\n", "", None, ["counters.csv:1", "found 4"]),
    ("csv two fields", "# c\nDCGM_FI_DEV_GPU_UTIL, gauge\n", "", None, ["counters.csv:2", "found 2"]),
    ("csv bad type", "DCGM_FI_DEV_GPU_UTIL, gauges, util\n", "", None, ["counters.csv:1", "'gauges'"]),
    ("csv numeric id", "203, gauge, util\n", "", None, ["counters.csv:1", "numeric ids"]),
    ("csv type clash", "DCGM_FI_DEV_GPU_UTIL, gauge, a\nDCGM_FI_DEV_GPU_UTIL, counter, b\n", "", None,
     ["counters.csv:2", "different types"]),
    ("csv unclosed quote", 'DCGM_FI_DEV_GPU_UTIL, gauge,"util\n', "", None, ["counters.csv:1", "not closed"]),
    ("csv bare quote", 'DCGM_FI_DEV_GPU_UTIL, gauge, a "b"\n', "", None, ["counters.csv:1", "quote"]),
    ("csv only comments", "# nothing\n\n", "", None, ["counters.csv", "no metrics"]),
    ("csv whitespace line", "DCGM_FI_DEV_GPU_UTIL, gauge, u (in %).\n   \n", "", None, ["counters.csv:2", "found 1"]),
    ("yaml syntax", GOOD_CSV, "clusters: [\n  - name: a\n", None, ["gpudash.yaml:", "not valid YAML"]),
    ("yaml not a mapping", None, "- just\n- a list\n", None, ["gpudash.yaml:1", "mapping"]),
    ("unknown key", GOOD_CSV, "grafana:\n  folderr: x\n", None, ["gpudash.yaml:2", "folderr"]),
    ("bad pod label", GOOD_CSV, "labels:\n  pod: workload\n", None, ["gpudash.yaml:2", "labels.pod"]),
    ("bad region", GOOD_CSV, "clusters:\n  - name: a\n    region: Mars\n", None, ["gpudash.yaml:3", "clusters.0.region"]),
    ("duplicate cluster", GOOD_CSV, "clusters:\n  - {name: a, region: us-east-1}\n  - {name: a, region: us-east-2}\n",
     None, ["gpudash.yaml", "listed twice"]),
    ("threshold type", GOOD_CSV, "thresholds:\n  gpu_temp_celsius: {warning: hot, critical: 90}\n", None,
     ["gpudash.yaml:2", "thresholds.gpu_temp_celsius.warning"]),
    ("unsafe yaml tag", GOOD_CSV, "counters: !!python/object/apply:os.system ['true']\n", None,
     ["gpudash.yaml:1", "not valid YAML"]),
    ("missing counters file", None, "counters: nowhere.csv\n", None, ["nowhere.csv", "not found"]),
    ("unknown metric", GOOD_CSV, "", {"mine.py": GOOD_DASHBOARD.replace("GPU_UTIL", "GPU_UTILISATION")},
     ["mine.py:5", "unknown metric DCGM_FI_DEV_GPU_UTILISATION"]),
    ("definition raises", GOOD_CSV, "", {"boom.py": "x = 1\nraise RuntimeError('no GPUs today')\n"},
     ["boom.py:2", "RuntimeError: no GPUs today"]),
    ("definition syntax error", GOOD_CSV, "", {"bad.py": "def dashboards(ctx)\n    pass\n"},
     ["bad.py:1", "SyntaxError"]),
    ("dashboards() raises", GOOD_CSV, "", {"f.py": "def dashboards(ctx):\n    return 1 / 0\n"},
     ["f.py:2", "ZeroDivisionError"]),
    ("bad group key", GOOD_CSV, "", {"g.py": "from generator.model import Query\nq = Query('DCGM_FI_DEV_GPU_UTIL', by=('rack',))\n"},
     ["g.py:2", "cannot group by rack"]),
    ("bad panel kind", GOOD_CSV, "", {"k.py": "from generator.model import Panel, Query\n"
                                              "p = Panel('x', Query('DCGM_FI_DEV_GPU_UTIL'), kind='pie')\n"},
     ["k.py:2", "panel kind 'pie'"]),
    ("duplicate dashboard id", GOOD_CSV, "", {"a.py": GOOD_DASHBOARD, "b.py": GOOD_DASHBOARD},
     ["b.py:5", "used twice"]),
    ("label field charted", GOOD_CSV + "DCGM_FI_DRIVER_VERSION, label, Driver\n", "",
     {"l.py": GOOD_DASHBOARD.replace("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DRIVER_VERSION")},
     ["l.py:5", "label field"]),
    ("wrong return type", GOOD_CSV, "", {"w.py": "def dashboards(ctx):\n    return ['not a dashboard']\n"},
     ["w.py", "returned str"]),
    ("missing dashboards folder", GOOD_CSV, "definitions:\n  dashboards: [nope]\n", None, ["nope", "folder not found"]),
]


@pytest.mark.parametrize("name, csv, config, dashboards, expected", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_message_exit_2_and_build_untouched(tmp_path, cli, name, csv, config, dashboards,
                                                             expected):
    lines = [config]
    if csv is not None:
        (tmp_path / "counters.csv").write_text(csv)
        if "counters:" not in config:
            lines.append("counters: counters.csv\n")
    if dashboards is not None:
        (tmp_path / "dashboards").mkdir()
        for file_name, text in dashboards.items():
            (tmp_path / "dashboards" / file_name).write_text(text)
        lines.append("definitions:\n  dashboards: [dashboards]\n")
    (tmp_path / "gpudash.yaml").write_text("\n".join(line for line in lines if line))
    out = tmp_path / "build"
    assert cli("generate", "--out", str(out))[0] == 0  # a previous good build (bundled defaults)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}

    code, stdout, stderr = cli("generate", "--config", str(tmp_path / "gpudash.yaml"), "--out", str(out))

    assert code == 2, stderr
    assert stderr.startswith("error: ") and stderr.count("error: ") == 1
    assert "Traceback" not in stderr
    assert "\n  fix: " in stderr  # every input error says what to do
    for fragment in expected:
        assert fragment in stderr, (fragment, stderr)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_debug_shows_the_traceback(tmp_path, cli):
    (tmp_path / "gpudash.yaml").write_text("labels: [\n")
    code, _, stderr = cli("--debug", "generate", "--config", str(tmp_path / "gpudash.yaml"), "--out",
                          str(tmp_path / "b"))
    assert code == 2 and "Traceback" in stderr


def test_missing_config_file(tmp_path, cli):
    code, _, stderr = cli("generate", "--config", str(tmp_path / "absent.yaml"), "--out", str(tmp_path / "b"))
    assert code == 2 and "settings file not found" in stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_unwritable_output_directory(tmp_path, cli):
    parent = tmp_path / "locked"
    parent.mkdir()
    parent.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        code, _, stderr = cli("generate", "--out", str(parent / "build"))
    finally:
        parent.chmod(stat.S_IRWXU)
    assert code == 2 and "cannot" in stderr


def test_output_directory_on_a_read_only_filesystem(cli):
    code, _, stderr = cli("generate", "--out", "/proc/gpudash-test/build")
    assert code == 2 and "cannot create the output directory" in stderr and "Traceback" not in stderr


def test_output_path_under_a_file_is_refused(tmp_path, cli):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, stderr = cli("generate", "--out", str(blocker / "build"))
    assert code == 2 and "cannot create the output directory" in stderr and "Traceback" not in stderr


def test_a_directory_gpudash_does_not_own_is_never_replaced(tmp_path, cli):
    out = tmp_path / "site"
    out.mkdir()
    (out / "index.html").write_text("mine")
    code, _, stderr = cli("generate", "--out", str(out))
    assert code == 2 and "did not write" in stderr
    assert [p.name for p in out.iterdir()] == ["index.html"]


def test_usage_errors_exit_2(cli):
    code, _, stderr = cli("generate", "--no-such-option")
    assert code == 2 and "No such option" in stderr
