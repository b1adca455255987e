"""scrape.interval in Prometheus' duration syntax: `2m30s` is taken, means what `150s` means everywhere the
build uses it, and the scrape configuration written loads in Prometheus."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.artifacts import build
from generator.errors import InputError
from generator.project import load_project
from generator.settings import duration_seconds, parse_settings
from tests.support.promtool_config import promtool_check_config

CLUSTERS = "clusters:\n  - {name: a, region: us-east-1}\n"


@pytest.mark.parametrize("text, seconds", [("1m30s", 90), ("90s", 90), ("2m", 120), ("1h0m", 3600), ("1d", 86400),
                                           ("1w", 604800), ("1y", 31536000), ("1500ms", 1.5), ("0", 0),
                                           ("030s", 30), ("", None), ("30s1m", None), ("1.5s", None), ("30sec", None),
                                           ("1m 30s", None), ("m", None), ("-30s", None), ("30S", None)])
def test_prometheus_durations_are_read_as_prometheus_reads_them(text, seconds):
    assert duration_seconds(text) == seconds


def _files(cli, tmp_path: Path, interval: str) -> dict[str, str]:
    config = tmp_path / f"{interval}.yaml"
    config.write_text(f"scrape:\n  interval: {interval}\n")
    out = tmp_path / f"build-{interval}"
    code, _, stderr = cli("generate", "--config", str(config), "--out", str(out))
    assert code == 0, stderr
    code, stdout, stderr = cli("lint", "--config", str(config), "--from", str(out))
    # 8 panels whose fields the CSV does not collect (DF001), "Pods on GPUs"' rows past its LIMIT (CW020), what a gap
    # in a GPU's data does to the two counter alarms (AL018); and at 150 s the bundled data-missing rule's period of 2
    # scrapes, at which its agent alarm, counting "under half of a period's 2 scrapes", a count below 1, can never fire
    # (AL029, as generate says; said once, not again as that alarm's AL028)
    assert code == 0 and stdout.endswith("0 errors, 1 warning, 11 notes\n"), stdout + stderr
    (short,) = [line for line in stdout.splitlines() if " warning: " in line]
    assert short.startswith("AL029 warning: alarms/gpu_alarms.py:97: alarm 'gpu-data-missing' (bundled): its period "
                            "of 300 s is under 3 scrape intervals (scrape.interval 150 s)"), short
    assert "so it can never fire" in short
    return {str(p.relative_to(out)): p.read_text() for p in out.rglob("*") if p.is_file() and p.name != "manifest.json"}


def test_a_compound_interval_builds_what_the_same_seconds_build(cli, tmp_path):
    """Rules' lookbacks and steps, Grafana's intervals, CloudWatch's per-scrape divisions and the agent's bounds
    read 2m30s as 150 s: the two builds differ only where the text itself is written (the scrape configurations,
    which Prometheus, the agent and the Operator read in this syntax)."""
    compound, seconds = _files(cli, tmp_path, "2m30s"), _files(cli, tmp_path, "150s")
    assert compound.keys() == seconds.keys()
    differing = sorted(name for name in compound if compound[name] != seconds[name])
    assert differing == ["k8s/cwagent-prometheus-config-gpu-cluster.yaml", "k8s/servicemonitor.yaml",
                         "prometheus/additional-scrape-configs.yaml"]
    assert all(compound[name].replace(": 2m30s", ": 150s") == seconds[name] for name in differing)


def test_the_agent_scrape_configuration_with_a_compound_interval_loads_in_prometheus(tmp_path):
    (tmp_path / "gpudash.yaml").write_text(CLUSTERS + "scrape:\n  interval: 2m30s\n")
    scrape = build(load_project(tmp_path / "gpudash.yaml")).agents[0].scrape
    assert scrape["scrape_configs"][0]["scrape_interval"] == "2m30s"
    code, text = promtool_check_config(tmp_path, scrape)
    assert code == 0, text


@pytest.mark.parametrize("interval, says", [("1500ms", "'1500ms' is 1.5 s, not a whole number of seconds"),
                                            ("0s", "scrape.interval"), ("1m30", "scrape.interval")])
def test_an_interval_that_is_no_whole_number_of_seconds_is_refused_at_its_line(tmp_path, interval, says):
    with pytest.raises(InputError) as refused:  # zero and text that is no duration: by the schema
        parse_settings(CLUSTERS + f"scrape:\n  interval: {interval}\n", "s.yaml", tmp_path)
    assert says in str(refused.value) and refused.value.where == "s.yaml:4"
