"""The preview's pure parts: Grafana's unit formatting, legend substitution and interpolation."""

from __future__ import annotations

import re

import pytest

from generator.artifacts import grafana_dashboards
from generator.preview.formats import format_value
from generator.preview.interpolate import Window, defaults, interpolate, regex_escape, step_for
from generator.preview.legend import series_name
from generator.project import load_project
from generator.promql_text import packed
from generator.units import UNITS


@pytest.mark.parametrize("value, unit, shown", [
    (51.34, "percent", "51.3%"), (0.5, "percentunit", "50%"), (0.0412, "percentunit", "4.12%"),
    (754.2, "watt", "754 W"), (1500, "watt", "1.50 kW"), (250, "mwatt", "250 mW"), (2500, "mwatt", "2.50 W"),
    (78.94, "celsius", "78.9 °C"), (1410, "rotmhz", "1.41 GHz"), (210, "rotmhz", "210 MHz"),
    (1.41e9, "hertz", "1.41 GHz"), (210, "hertz", "210 Hz"),
    (1536, "bytes", "1.50 KiB"), (74142, "mbytes", "72.4 GiB"), (512, "mbytes", "512 MiB"),
    (412876543, "Bps", "413 MB/s"), (1.5e9, "Bps", "1.50 GB/s"), (3, "short", "3"), (12500, "short", "12.5 K"), (2, "none", "2"),
    (0.25, "cps", "0.25 c/s"), (1500, "ns", "1.50 µs"), (0, "watt", "0 W"), (5, "joule", "5 J"),
    (1500, "si:mJ", "1.50 J"), (250, "si:mJ", "250 mJ"), (1500, "µs", "1.50 ms"),
    (None, "percent", "No data"), (float("nan"), "watt", "No data"),
])
def test_values_read_as_grafana_shows_them(value, unit, shown):
    assert format_value(value, unit) == shown


def test_every_unit_the_product_emits_is_formatted_with_its_symbol():
    for unit in UNITS.values():
        text = format_value(1234.5, unit.grafana)
        assert not text.endswith(f" {unit.grafana}") or unit.grafana in ("short", "none"), (unit.grafana, text)


def test_an_energy_increase_reads_in_joules_from_its_millijoules():
    """DCGM counts energy in mJ: a panel of its increase must not show the mJ figure as joules."""
    from generator.catalog import parse_counters
    from generator.model import Panel, Query
    from generator.render.grafana import panel_unit

    catalog = parse_counters("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, Energy (in mJ).\n")
    panel = Panel("Energy used", Query("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "sum", as_increase=True))
    assert format_value(3_600_000, panel_unit(panel, catalog)) == "3.60 kJ"


def test_legend_substitutes_labels_as_grafana_does():
    labels = {"__name__": "DCGM_FI_DEV_GPU_UTIL", "namespace": "ml", "pod": "trainer-0", "gpu": "1"}
    assert series_name("Pod {{namespace}}/{{pod}}", labels, "x") == "Pod ml/trainer-0"
    assert series_name("{{ node }} GPU {{gpu}}", labels, "x") == " GPU 1"  # a missing label reads empty
    assert series_name("", labels, "x") == 'DCGM_FI_DEV_GPU_UTIL{gpu="1", namespace="ml", pod="trainer-0"}'
    assert series_name(None, {}, "sum(up)") == "sum(up)"


def test_macros_follow_grafana():
    window = Window(range_s=3600, step_s=step_for(3600, 15), scrape_s=15)
    assert window.step_s == 15  # 3600 s over 300 points is 12 s, below the scrape interval
    assert window.macros()["__rate_interval"] == "60s"  # max(15 + 15, 4 * 15)
    assert window.macros()["__range"] == "3600s"
    wide = Window(range_s=7 * 86400, step_s=step_for(7 * 86400, 15), scrape_s=15)
    assert wide.macros()["__interval"] == "2016s" and wide.macros()["__rate_interval"] == "2031s"


def test_variables_at_their_defaults_select_everything():
    dashboard = grafana_dashboards(load_project())[0].model
    values = {**defaults(dashboard), **Window(3600, 15).macros()}
    target = next(p for p in dashboard["panels"] if p.get("targets"))["targets"][0]
    expr = interpolate(target["expr"], values)
    assert "$" not in re.sub(r'(["\'])(\$\d)+\1', "", expr), expr  # label_replace's "$1", "$1$2" are no variables
    assert packed('=~".*"') in expr  # as the panels write it (render.grafana: packed, single-quoted)


def test_interpolation_forms_and_escaping():
    values = {"node": regex_escape("gpu-1.example"), "gpu": ".*"}
    assert interpolate('x{node=~"$node", gpu=~"${gpu}", a=~"[[gpu]]"}', values) == \
        'x{node=~"gpu-1\\\\.example", gpu=~".*", a=~".*"}'
    assert interpolate('label_replace(x, "a", "$1", "b", "(.*)")', values) == 'label_replace(x, "a", "$1", "b", "(.*)")'
    picked = {"templating": {"list": [{"name": "pod", "type": "query", "current": {"value": ["a.b", "c"]}}]}}
    assert defaults(picked) == {"pod": "(a\\\\.b|c)"}


def test_diff_finds_changed_added_and_removed_panels_by_title():
    from generator.preview.compare import changes

    def panel(title, unit="watt", y=0):
        return {"type": "timeseries", "title": title, "gridPos": {"x": 0, "y": y, "w": 12, "h": 8},
                "fieldConfig": {"defaults": {"unit": unit}}}

    base = {"panels": [panel("Power"), panel("Temperature"), panel("Gone")]}
    new = {"panels": [panel("Temperature", y=9), panel("Power", unit="mwatt"), panel("New")]}
    found = [((b or {}).get("title"), (a or {}).get("title")) for b, a in changes(base, new)]
    assert found == [("Power", "Power"), (None, "New"), ("Gone", None)]  # a move alone is no change

    # of two panels of one title, the first changed: the last hid it, and the diff showed nothing
    twice = {"panels": [panel("Power"), panel("Power", y=9)]}
    first_changed = {"panels": [panel("Power", unit="mwatt"), panel("Power", y=9)]}
    assert [((b or {}).get("fieldConfig"), (a or {}).get("fieldConfig")) for b, a in changes(twice, first_changed)] \
        == [({"defaults": {"unit": "watt"}}, {"defaults": {"unit": "mwatt"}})]


def test_axes_tick_at_round_values_and_times():
    from generator.preview.svg import _nice_ticks, _time_ticks

    assert _nice_ticks(0, 80_000, "mbytes") == [0, 20 * 1024, 40 * 1024, 60 * 1024, 80 * 1024]  # 0 .. 80 GiB
    assert _nice_ticks(0, 98) == [0, 20, 40, 60, 80, 100]
    assert _nice_ticks(0, 1.9e9, "Bps") == [0, 5e8, 1e9, 1.5e9, 2e9]  # bytes/sec(SI): 500 MB/s steps
    assert [t % 600 for t in _time_ticks(1_000_000_123, 1_000_003_723)] == [0] * 6  # every 10 minutes of an hour
