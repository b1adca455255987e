"""The CloudWatch evaluator's alarm judgement against the user guide's own examples of the evaluation range
("How alarm state is evaluated when data is missing": both tables, evaluation range 5, 3 evaluation periods)."""

import pytest

from tests.support import cloudwatch_eval
from tests.support.cloudwatch_agent import Datapoint

# (data points oldest first: 0 not breaching, X breaching, - missing; {TreatMissingData: state}), as the page gives them
THREE_OF_THREE = [
    ("0 - X - X", {"missing": "OK", "breaching": "OK", "notBreaching": "OK"}),
    ("0 - - - -", {"missing": "OK", "breaching": "OK", "notBreaching": "OK"}),
    ("- - - - -", {"missing": "INSUFFICIENT_DATA", "breaching": "ALARM", "notBreaching": "OK"}),
    ("0 X X - X", {"missing": "ALARM", "breaching": "ALARM", "notBreaching": "ALARM"}),
    ("- - X - -", {"missing": "ALARM", "breaching": "ALARM", "notBreaching": "OK"}),
]
TWO_OF_THREE = [
    ("0 - X - X", {"missing": "ALARM", "breaching": "ALARM", "notBreaching": "ALARM"}),
    ("0 0 X 0 X", {"missing": "ALARM", "breaching": "ALARM", "notBreaching": "ALARM"}),
    ("0 - X - -", {"missing": "OK", "breaching": "ALARM", "notBreaching": "OK"}),
    ("- - - - 0", {"missing": "OK", "breaching": "ALARM", "notBreaching": "OK"}),
    ("- - - X -", {"missing": "ALARM", "breaching": "ALARM", "notBreaching": "OK"}),
]
PERIOD, END = 300, 3000


def _request(needed: int, missing: str) -> dict:
    return {"AlarmName": "a", "Namespace": "N", "MetricName": "m", "Dimensions": [], "Statistic": "Maximum",
            "Period": PERIOD, "EvaluationPeriods": 3, "DatapointsToAlarm": needed, "Threshold": 1.0,
            "ComparisonOperator": "GreaterThanThreshold", "TreatMissingData": missing}


def _points(row: str) -> list[Datapoint]:
    """The row's data points in the five periods before END (X: 2, 0: 0), and older ones outside the range."""
    cells = row.split()
    start = END - len(cells) * PERIOD
    older = [Datapoint("N", "m", (), float(start - PERIOD * k - 30), 0.0) for k in range(1, 4)]
    return older + [Datapoint("N", "m", (), float(start + i * PERIOD + 30), 2.0 if c == "X" else 0.0)
                    for i, c in enumerate(cells) if c != "-"]


@pytest.mark.parametrize("needed, row, expected",
                         [(3, row, states) for row, states in THREE_OF_THREE] +
                         [(2, row, states) for row, states in TWO_OF_THREE])
@pytest.mark.parametrize("missing", ["missing", "breaching", "notBreaching"])
def test_the_user_guides_evaluation_range_tables_hold(needed, row, expected, missing):
    states = cloudwatch_eval.alarm(_request(needed, missing), _points(row), END, evaluation_range=5)
    assert states == {(): expected[missing]}


def test_older_real_data_points_are_judged_before_missing_data_is_treated():
    """The latest period is empty: an alarm treating missing data as breaching judges the older real data points
    (OK), one treating it as not breaching judges them too (ALARM), at every length of the range."""
    points = [Datapoint("N", "m", (), float(END - PERIOD * k + 30), v) for k, v in ((2, 0.0), (3, 0.0), (4, 0.0))]
    assert cloudwatch_eval.alarm({**_request(3, "breaching")}, points, END) == {(): "OK"}
    breaching = [Datapoint("N", "m", (), p.timestamp, 2.0) for p in points]
    assert cloudwatch_eval.alarm({**_request(3, "notBreaching")}, breaching, END) == {(): "ALARM"}


def test_a_state_that_depends_on_the_ranges_length_is_refused():
    """One breaching data point three periods back and none since: a 1-of-1 alarm treating missing data as not
    breaching is in ALARM while the range reaches that point and OK beyond: no test may rely on either."""
    request = {**_request(1, "notBreaching"), "EvaluationPeriods": 1}
    points = [Datapoint("N", "m", (), float(END - 3 * PERIOD + 30), 2.0)]
    assert cloudwatch_eval.alarm(request, points, END, evaluation_range=4) == {(): "ALARM"}
    assert cloudwatch_eval.alarm(request, points, END, evaluation_range=2) == {(): "OK"}
    with pytest.raises(cloudwatch_eval.RangeDependent):
        cloudwatch_eval.alarm(request, points, END)


def test_the_tables_hold_at_their_range_of_5_and_not_at_4():
    """The page's range for 3 periods of 5 minutes is 5 (two more than EvaluationPeriods), not 4: judged over 4,
    five of the tables' cells read otherwise (3 of 3 `0 - X - X`: ALARM with `missing` and `breaching`, the page
    OK). The user guide's example length is the one the rules model (cloudwatch_eval.EXAMPLE_EXTRA_PERIODS)."""
    differ = []
    for needed, rows in ((3, THREE_OF_THREE), (2, TWO_OF_THREE)):
        for row, expected in rows:
            for missing, state in expected.items():
                request = _request(needed, missing)
                assert cloudwatch_eval.example_range(request) == 5
                if cloudwatch_eval.alarm(request, _points(row), END, evaluation_range=4) != {(): state}:
                    differ.append((needed, row, missing))
    assert differ == [(3, "0 - X - X", "missing"), (3, "0 - X - X", "breaching"), (3, "0 - - - -", "missing"),
                      (3, "0 - - - -", "breaching"), (2, "0 - X - -", "missing")]
