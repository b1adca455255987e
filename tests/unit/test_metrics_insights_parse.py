"""A Metrics Insights query is read by its shape (its string literals numbered, so a fleet's clusters' queries, alike
but for the cluster's name, are parsed once) and its values set back: the answer, or the error's message, is the one
reading the text itself gives, whatever the literals hold (quotes, backslashes, what looks like a keyword) and
wherever an edit breaks the query."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

from generator.lint.metrics_insights import QueryError, _read, each_read_once, parse

_VALUE = st.lists(st.sampled_from(list("ab0'\\\" _-.;,()=ü") + ["AND", "WHERE", "c0001"]), max_size=6).map("".join)
_PIECES = st.sampled_from(["'", '"', "\\", "''", "'x'", '"a\'b"', " AND ", "WHERE ", "(", ")", ",", " LIMIT 5.5",
                           " ", "=", "!=", "GROUP BY ", '"pod"'])


def _quoted(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


@st.composite
def _queries(draw) -> str:
    values = draw(st.lists(_VALUE, min_size=1, max_size=3))
    where = " AND ".join(f'"{name}" {draw(st.sampled_from(["=", "!="]))} {_quoted(value)}'
                         for name, value in zip(("ClusterName", "namespace", "pod"), values))
    text = (f'SELECT AVG("DCGM_FI_DEV_GPU_TEMP") FROM SCHEMA("ContainerInsights/Prometheus", ClusterName, namespace, '
            f'pod) WHERE {where} GROUP BY "pod" ORDER BY AVG() DESC LIMIT 10')
    if draw(st.booleans()):  # an edit: a piece put in, or put in place of a stretch
        start = draw(st.integers(0, len(text)))
        end = draw(st.integers(start, len(text)))
        text = text[:start] + draw(_PIECES) + text[end if draw(st.booleans()) else start:]
    return text


def _answer(read, text: str):
    try:
        return "parsed", vars(read(text))
    except QueryError as error:
        return "refused", str(error)


@hypothesis_settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(_queries())
def test_a_query_read_by_its_shape_reads_as_the_text_itself(text):
    assert _answer(parse, text) == _answer(_read, text)
    with each_read_once():
        assert _answer(parse, text) == _answer(_read, text)
        assert _answer(parse, text) == _answer(_read, text)


def test_queries_of_one_shape_keep_their_own_values():
    texts = [f"""SELECT MAX("DCGM_FI_DEV_GPU_TEMP") FROM SCHEMA("ContainerInsights/Prometheus", ClusterName, node, gpu) """
             f"""WHERE ClusterName = '{name}' GROUP BY node, gpu""" for name in ("c0000", "c0001", "it\\'s")]
    assert [parse(text).where for text in texts] == [[("ClusterName", "=", "c0000")], [("ClusterName", "=", "c0001")],
                                                     [("ClusterName", "=", "it's")]]
    query = parse(texts[0])
    query.where.append(("x", "=", "y"))  # the caller's own copy
    assert parse(texts[0]).where == [("ClusterName", "=", "c0000")]
