"""Every field of every model class a definition builds is checked when the object is built: a value of another form
(text for a number, a number for a pair of levels, text for a tuple, NaN) or a meaning gpudash cannot draw (a unit it
does not know, warning above critical, min not below max) is the definition's error naming the object, the field and
what to write, at the definition's file and line; never a value that reaches a renderer.

The wrong values are derived from each field's declared type, so a field added to a class is covered without a new
test.
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

import pytest

from generator.definition_fields import declared_fields, describe
from generator.model import Alarm, Condition, Dashboard, DefinitionError, Panel, Query, Row

HERE = "unit/test_definition_fields.py"


def _bases():
    query = Query("DCGM_FI_DEV_GPU_TEMP", "max", ("node", "gpu"))
    panel = Panel("Temperature", query, unit="celsius", thresholds=(80, 90), min=0, max=100)
    condition = Condition(query, ">", 87)
    return {Query: query, Panel: panel, Row: Row("GPUs", [panel]), Dashboard: Dashboard("gpus", "GPUs", [Row("GPUs", [panel])]),
            Condition: condition, Alarm: Alarm("hot", "GPU hot", condition, evaluation_periods=3,
                                               datapoints_to_alarm=2)}


BASES = _bases()


def _wrong(declared) -> list[object]:
    """Values that are not of the declared form."""
    if declared.kind is tuple:
        items = {str: 5, float: "80", int: "3"}.get(declared.item, "text")
        values = ["text", {"a set"}, 5, [items]]
        if declared.length:
            values += [tuple([1] * (declared.length - 1)), tuple([1] * (declared.length + 1)), [math.nan, 1]]
        return values
    if declared.kind is str:
        return [5, b"bytes", ("a",)]
    if declared.kind is int:
        return ["3", 2.5, True]
    if declared.kind is float:
        return ["80", math.nan, math.inf, -math.inf, True, [80]]
    if declared.kind is bool:
        return [1, "yes", None] if not declared.optional else [1, "yes"]
    return ["text", 5]  # a model class


CASES = [(cls, name, value) for cls in BASES for name, declared in declared_fields(cls)
         for value in _wrong(declared) if not (value is None and declared.optional)]


def test_every_field_of_every_class_is_declared_and_covered():
    named = {(cls.__name__, name) for cls, name, _ in CASES}
    assert ("Panel", "unit") in named and ("Condition", "threshold") in named and ("Query", "by") in named
    for cls in BASES:
        for name, declared in declared_fields(cls):
            assert (cls.__name__, name) in named, (cls, name)
            assert describe(declared)


@pytest.mark.parametrize("cls, name, value", CASES, ids=[f"{c.__name__}.{n}={v!r}" for c, n, v in CASES])
def test_a_value_of_another_form_is_the_definitions_error_naming_the_field(cls, name, value):
    with pytest.raises(DefinitionError) as caught:
        replace(BASES[cls], **{name: value})
    error = caught.value
    assert error.where.startswith(HERE + ":"), error.where
    assert f"{name} is " in str(error) or f"{name}[0] is " in str(error), str(error)
    assert error.hint.startswith("write "), error.hint


MEANINGS = {
    "Grafana's unit id": (Panel, {"unit": "short"}, "unit 'short' is not one of", "Grafana's 'short' is 'count'"),
    "a unit in another case": (Panel, {"unit": "Celsius"}, "unit 'Celsius'", "did you mean 'celsius'?"),
    "warning above critical": (Panel, {"thresholds": (90, 80)}, "the warning level 90 is above the critical level 80",
                               "lower than or equal to"),
    "min above max": (Panel, {"min": 100, "max": 0}, "min 100 is not below max 0", "min lower than the max"),
    "min equal to max": (Panel, {"min": 5, "max": 5}, "min 5 is not below max 5", "min lower than the max"),
    "comparison in words": (Condition, {"comparison": "above"}, "comparison 'above' is not one of",
                            "write comparison as one of"),
    "no datapoint to alarm": (Alarm, {"datapoints_to_alarm": 0}, "need 1 <= datapoints_to_alarm", "e.g."),
    "more datapoints than periods": (Alarm, {"datapoints_to_alarm": 4}, "need 1 <= datapoints_to_alarm", "e.g."),
    "a period of 45 s": (Alarm, {"period_seconds": 45}, "period_seconds 45 must be", "10, 20, 30"),
    "an id with spaces": (Alarm, {"id": "GPU hot"}, "alarm id 'GPU hot'", "e.g. 'gpu-hot'"),
    "a key grouped by twice": (Query, {"by": ("node", "gpu", "node")}, "by names node twice", "by=('node', 'gpu')"),
    "a field added twice to the total": (Query, {"over": ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_USED")},
                                         "over names DCGM_FI_DEV_FB_USED twice", "name each once"),
    "a dashboard without a title": (Dashboard, {"title": " "}, "dashboard 'gpus': the title is empty", "write a title"),
    # absent=True is the data-missing alarm, whatever its condition: another condition was dropped without a word
    "absent with fewer than 7 GPUs": (Alarm, {"absent": True, "condition": Condition(Query("DCGM_FI_DEV_GPU_TEMP",
                                                                                           "count"), "<", 7)},
                                      "which ignores the condition count(DCGM_FI_DEV_GPU_TEMP) < 7",
                                      "drop absent=True and set missing_data='breaching'"),
    "absent per node": (Alarm, {"absent": True, "condition": Condition(Query("DCGM_FI_DEV_GPU_TEMP", "count",
                                                                             ("node",)), "<", 1)},
                        "count(DCGM_FI_DEV_GPU_TEMP) by (node) < 1", "Condition(Query('DCGM_FI_DEV_GPU_TEMP', 'count'), '<', 1)"),
    "absent never breaching": (Alarm, {"absent": True, "missing_data": "notBreaching",
                                       "condition": Condition(Query("DCGM_FI_DEV_GPU_TEMP", "count"), "<", 1)},
                               "missing_data='notBreaching' would never let it fire", "set missing_data='breaching'"),
    # the data-missing alarm is one per cluster: a fleet scope was dropped without a word (one alarm per cluster)
    "absent over the fleet": (Alarm, {"absent": True, "scope": "fleet",
                                      "condition": Condition(Query("DCGM_FI_DEV_GPU_TEMP", "count"), "<", 1)},
                              "judges each cluster apart", "drop scope="),
    # stopped=True judges each GPU against its node's others: a condition per cluster would be dropped without a word
    "stopped over the cluster": (Alarm, {"stopped": True, "condition": Condition(Query("DCGM_FI_DEV_GPU_TEMP", "count"),
                                                                                 "<", 1)},
                                 "stopped=True judges each GPU", "Condition(Query('DCGM_FI_DEV_GPU_TEMP', 'count', "
                                                                 "('node', 'gpu')), '<', 1)"),
    "stopped and absent": (Alarm, {"stopped": True, "absent": True,
                                   "condition": Condition(Query("DCGM_FI_DEV_GPU_TEMP", "count"), "<", 1)},
                           "no absent=True", "or drop stopped=True"),
}


@pytest.mark.parametrize("case", list(MEANINGS))
def test_a_meaning_gpudash_cannot_draw_is_the_definitions_error(case):
    cls, change, problem, fix = MEANINGS[case]
    with pytest.raises(DefinitionError) as caught:
        replace(BASES[cls], **change)
    assert problem in str(caught.value) and fix in caught.value.hint, (str(caught.value), caught.value.hint)
    assert caught.value.where.startswith(HERE + ":")


def test_a_threshold_read_as_text_says_the_number_to_write():
    with pytest.raises(DefinitionError) as caught:
        Condition(BASES[Query], ">", "87.5")
    assert str(caught.value) == "alarm condition: threshold is '87.5', not a finite number"
    assert caught.value.hint == "write threshold=87.5, a number without quotes"


def test_text_for_a_tuple_is_not_read_letter_by_letter():
    with pytest.raises(DefinitionError, match=r"by is 'pod' \(text is read letter by letter\), not a tuple of text"):
        Query("DCGM_FI_DEV_GPU_TEMP", "max", "pod")


def test_lists_and_other_numbers_are_kept_in_the_declared_form():
    class Count(int):  # an integral number of another type (numpy's int64 is one)
        pass

    query = Query("DCGM_FI_DEV_GPU_TEMP", "max", ["node", "gpu"])
    panel = Panel("t", [query], thresholds=[Fraction(141, 2), 90], min=Fraction(0), width=Count(6))
    assert query.by == ("node", "gpu") and panel.queries == (query,)
    assert panel.thresholds == (70.5, 90) and type(panel.thresholds[0]) is float and type(panel.thresholds[1]) is int
    assert type(panel.min) is float and type(panel.width) is int
    row = Row("r", (p for p in [panel]))
    assert row.panels == (panel,)
    assert Dashboard("d", "D", [row], tags=["gpu"]).tags == ("gpu",)


def test_an_absent_alarm_may_say_no_gpu_reporting_either_way():
    """`count(...) <= 0` means what `count(...) < 1` does (a count is whole): both make the data-missing alarm."""
    for comparison, threshold in (("<", 1), ("<=", 0)):
        alarm = Alarm("gone", "Gone", Condition(Query("DCGM_FI_DEV_GPU_TEMP", "count"), comparison, threshold),
                      absent=True, missing_data="breaching")
        assert alarm.absent
