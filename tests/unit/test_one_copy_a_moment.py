"""promql._one_copy_a_moment's form, as text: the blank is left out once, after the copy is chosen, so that _written
(the same reading with DCGM's blank kept: where a device's own series wrote a sample) keeps it at every copy. c3cb52f9
filtered each of two branches; _written dropped the first filter only, so a device's own series at its blank steps read
as absent and its pods' largest share was read as the device's (55.3 for 80.6:
tests/integration/test_per_process_lookback.py, which reads the truth on a real Prometheus)."""

from __future__ import annotations

from generator.promql import BLANK_FLOOR, INCUMBENT_SINCE, _gauge_form, _written

SHARED = ("cluster", "UUID", "gpu", "pod")


def test_a_means_reading_is_filtered_once_and_written_keeps_the_blank():
    form = _gauge_form(("avg", "300s", None, "30s", 0, SHARED), "5s")
    assert f"offset {INCUMBENT_SINCE}" in form  # one copy a moment
    assert form.count(f"< {BLANK_FLOOR}") == 1
    assert BLANK_FLOOR not in _written(form)
    assert _written(form) == _gauge_form(("avg", "300s", None, "30s", 0, SHARED), "5s", unfiltered=True)


def test_a_maximum_or_minimum_reads_every_copy():
    for function in ("max", "min"):
        assert f"offset {INCUMBENT_SINCE}" not in _gauge_form((function, "300s", None, "30s", 0, SHARED), "5s")
