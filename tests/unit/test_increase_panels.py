"""A panel of increases over the selected range is one value per series: drawn as bars, never mixed with rates."""

from __future__ import annotations

import pytest

from generator.model import DefinitionError, Panel, Query

REPLAYS = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"


@pytest.mark.parametrize("kind", ["timeseries", "heatmap"])
def test_a_chart_of_increases_over_the_range_is_drawn_as_bars(kind):
    panel = Panel("Replays in the range", Query(REPLAYS, "max", ("node", "gpu"), as_increase=True), kind=kind)
    assert panel.kind == "bargauge"


@pytest.mark.parametrize("kind", ["stat", "gauge", "bargauge", "table"])
def test_a_single_value_kind_of_increases_is_kept(kind):
    assert Panel("Replays", Query(REPLAYS, "max", ("node", "gpu"), as_increase=True), kind=kind).kind == kind


def test_a_panel_mixing_increases_with_rates_is_refused_at_its_line():
    with pytest.raises(DefinitionError) as raised:
        Panel("Replays", (Query(REPLAYS, "max", ("node", "gpu"), as_increase=True),
                          Query(REPLAYS, "max", ("node", "gpu"))))
    assert "mixes increases over the selected range" in str(raised.value)
    assert "test_increase_panels.py:" in raised.value.where
