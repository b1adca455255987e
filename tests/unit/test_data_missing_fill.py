"""The data-missing rule names each cluster of a shared Prometheus in a branch of its own: the branch is written once
and each cluster's matcher filled in (data_missing._each_filled), which must give each cluster's text as writing it
whole does, for any text that is not made by inserting its value as it is too."""

from __future__ import annotations

from generator.data_missing import _each_filled


def test_each_value_filled_in_is_its_text_written_whole():
    def text(value: str) -> str:
        extra = f"{value}, " if value else ""
        return f'(absent_over_time(x{{{extra}a="b"}}[5m]) unless on(cluster) count(y{{{extra[:-2]}}}))'

    values = ['cluster="c0000"', 'cluster="a\\"b"', 'cluster="é"', 'cluster=""', 'cluster="\\n"']
    assert _each_filled(text, values) == [text(value) for value in values]


def test_a_text_that_does_not_write_its_value_as_it_is_is_written_whole():
    """A text that depends on its value's length, or on what it holds, is written whole for each value."""
    def by_length(value: str) -> str:
        return f"{value} of {len(value)}"

    def by_content(value: str) -> str:
        return value + (" quoted" if '"' in value else " plain")

    values = ['c="a"', 'c="bb"', "c=d", 'c="eee"']
    assert _each_filled(by_length, values) == [by_length(value) for value in values]
    assert _each_filled(by_content, values) == [by_content(value) for value in values]
