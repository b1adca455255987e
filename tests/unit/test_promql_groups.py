"""promql_groups.aggregated: what counts as one aggregation whole (its closing parenthesis the last character), read
past string literals whose text holds parentheses or quotes, and never a quote that opens no literal."""

from __future__ import annotations

import pytest

from generator.promql_groups import aggregated


@pytest.mark.parametrize("value, brief", [
    # one aggregation whole, a label value holding a parenthesis of either side: the brief form
    ('max by (gpu, node) (x{a=")"})', 'max by (gpu) (x{a=")"})'),
    ("max by (gpu, node) (x{a='(('})", "max by (gpu) (x{a='(('})"),
    ('max by (gpu, node) (x{a=~`\\)`})', 'max by (gpu) (x{a=~`\\)`})'),
    ('max by (gpu, node) (x{a="\\")"})', 'max by (gpu) (x{a="\\")"})'),
    ('topk by (gpu, pod) (1, x{a="("})', 'max by (gpu) (x{a="("})'),
    ('min by (gpu) (x{a=")"})', 'min by (gpu) (x{a=")"})'),  # of one sample, that sample
])
def test_one_aggregation_whole_is_written_briefly(value, brief):
    assert aggregated("max", "gpu", value) == brief


@pytest.mark.parametrize("value", [
    'max by (gpu, node) (x) + max by (gpu, node) (y)',  # two aggregations: the first closes before the end
    'max by (gpu, node) (x{a=")"}) + (y)',
    'max by (gpu, node) (x{a="("} + y)) + (z',  # the first closes at the second ")", the literal's "(" no parenthesis
    "max by (gpu, node) (x{a='('} ) or vector(0)",
])
def test_what_is_not_one_aggregation_whole_is_wrapped(value):
    assert aggregated("max", "gpu", value) == f"max by (gpu) ({value})"
