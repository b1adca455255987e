"""Stories of a rule judged together in one `promtool test rules` run, each story its own cluster (cluster="s<k>")
with its GPUs' UUIDs its own, where the rule cannot tell them from the stories judged alone.

promtool's cost is evaluating the rules at every step, whatever the series (tests/support/promtool_batches): a run
of two stories costs about what one does. A story is marked by the cluster label rather than by its names (node,
Hostname, instance) because a rule may read the spelling of a name (a pod name's pattern, the last character that
orders a node's spellings): the cluster is a label the rule only groups and joins by. Three conditions make the batch
ask each story the question it asked alone:
- every join and grouping of the rule keeps the cluster (or, the alert's, the GPU's UUID: each story's own), but
  those that read the fleet's presence alone (kept_apart);
- the fleet's presence (any series of the metric read, any visible) is the same in each story at every scrape
  (fleet_presence): a rule that takes a fleet without series for Prometheus down reads the same outage in each;
- every series of the metric names its GPU's UUID: an alert named by node, GPU and UUID is each story's own."""

from __future__ import annotations

import re
from typing import Callable

LOOKBACK = 10  # scrapes of 30 s in Prometheus' 5 minutes of look-back


def story_own(series: list[dict[str, str]], k: int, metric: str) -> list[dict[str, str]]:
    """Story k's promtool input `series` in its own cluster, its GPUs' UUIDs its own (own_uuid)."""
    out = []
    for one in series:
        text = one["series"]
        assert "cluster=" not in text, text
        if text.startswith(metric + "{"):
            assert re.search(r'\bUUID="[^"]+"', text), text
        text = re.sub(r'\bUUID="([^"]*)"', lambda m: f'UUID="{own_uuid(m[1], k)}"', text)
        out.append({**one, "series": re.sub(r"\{", f'{{cluster="s{k}",', text, count=1)})
    return out


def own_uuid(uuid: str, k: int) -> str:
    return f"{uuid}-s{k}"


def _expanded(values: str) -> list[str]:
    out: list[str] = []
    for token in values.split():
        repeated = re.fullmatch(r"(\S+?)x(\d+)", token)
        out += [repeated[1]] * (int(repeated[2]) + 1) if repeated else [token]
    return out


def fleet_presence(series: list[dict[str, str]], metric: str) -> str:
    """At each scrape of `series` (promtool's input, one sample a scrape): `L` where some series of `metric` has a
    sample, `v` where none has but one is still visible (its last sample within the look-back, no staleness marker
    after it), `b` where the newest such sample is the look-back's length back (seen by Prometheus 2's closed
    look-back, not by 3's left-open one), `.` where none is: all a rule reading the metric's presence over the fleet
    can see."""
    rows = [_expanded(one["values"]) for one in series if one["series"].startswith(metric + "{")]

    def seen(row: list[str], k: int) -> str:
        """How `row`'s newest sample up to scrape k is seen at k: `v`, `b` (at the look-back's edge) or `.`."""
        back = next((k - j for j in range(min(k, len(row) - 1), max(-1, k - LOOKBACK - 1), -1) if row[j] != "_"), None)
        return "." if back is None or row[k - back] == "stale" else "b" if back == LOOKBACK else "v"

    def at(k: int) -> str:
        if any(k < len(row) and row[k] not in ("_", "stale") for row in rows):
            return "L"
        return min((seen(row, k) for row in rows), key="vb.".index)
    return "".join(at(k) for k in range(max(map(len, rows))))


def kept_apart(exprs: list[str], metric: str) -> bool:
    """Whether no expression of `exprs` can read one story's series with another's (each its own cluster): each
    aggregation groups by the cluster or the UUID, each join matches on the cluster, no function reads all its series
    as one (promtool_rules.ACROSS_SERIES), but where one side reads the fleet's presence alone (count(metric),
    absent_over_time(metric[...]), the same in each story: fleet_presence) or no series (numbers, vector())."""
    import promql_parser as p

    from generator.lint.promql_checks import parse
    from tests.support.promtool_rules import ACROSS_SERIES

    def children(node) -> tuple:
        if isinstance(node, p.AggregateExpr):
            return tuple(c for c in (node.param, node.expr) if c is not None)
        if isinstance(node, p.BinaryExpr):
            return node.lhs, node.rhs
        if isinstance(node, p.Call):
            return tuple(node.args)
        if isinstance(node, p.MatrixSelector):
            return (node.vector_selector,)
        if isinstance(node, (p.ParenExpr, p.SubqueryExpr, p.UnaryExpr)):
            return (node.expr,)
        assert isinstance(node, (p.VectorSelector, p.NumberLiteral, p.StringLiteral)), type(node)
        return ()

    def presence(node) -> bool:
        read = node.vector_selector if isinstance(node, p.MatrixSelector) else node
        return isinstance(read, p.VectorSelector) and read.name == metric and not str(read).count("{") > 1 and \
            "=" not in str(read)

    def story_reads(node) -> bool:
        """Whether `node` reads some story's series other than the fleet's presence."""
        if isinstance(node, p.AggregateExpr) and str(node.op) == "count" and node.modifier is None and \
                presence(node.expr):
            return False
        if isinstance(node, p.Call) and node.func.name == "absent_over_time" and presence(node.args[0]):
            return False
        if isinstance(node, p.VectorSelector):
            return True
        return any(story_reads(child) for child in children(node))

    def apart(node) -> bool:
        if not story_reads(node):
            return True
        if isinstance(node, p.Call) and node.func.name in ACROSS_SERIES:
            return False
        if isinstance(node, p.AggregateExpr):
            grouping = node.modifier
            if grouping is None or grouping.type != p.AggModifierType.By or \
                    not {"cluster", "UUID"} & set(grouping.labels):
                return False
        if isinstance(node, p.BinaryExpr) and node.modifier and node.modifier.matching is not None and \
                story_reads(node.lhs) and story_reads(node.rhs):
            matching = node.modifier.matching
            if matching.type != p.LabelModifierType.Include or "cluster" not in matching.labels:
                return False
        return all(apart(child) for child in children(node))

    return all(apart(parse(expr)) for expr in exprs)


_VERDICTS: dict[tuple, str | None] = {}  # (a batch, a story of it) -> promtool's failure judging it; None: passed


def story_failure(folder, alert: str, stories: dict, story: str, minutes, name: str, step: int = 30,
                  metric: str = "DCGM_FI_DEV_GPU_TEMP") -> str | None:
    """promtool's failure judging `alert` of folder/rules.yaml on `story` of `stories` ({name: (promtool's input
    series, the truth: minute -> the labels of each alert firing then, UUID included)}) at each of `minutes`, or None.
    The stories whose fleet's presence is the story's (fleet_presence) are judged together, each its own cluster
    (story_own; its alerts' UUIDs own_uuid), once the alert's rules are checked to keep them apart (kept_apart); a
    story whose presence no other shares is judged alone. A run over promtool's sample limit is halved
    (tests/support/promtool_batches); any other failure fails every story judged with it, with promtool's message and
    which story is which."""
    from tests.support.promtool_batches import batch_failure
    from tests.support.promtool_rules import expected_alert, promtool_test, rule_groups

    everyone, minutes = list(stories), tuple(minutes)
    presence = {each: fleet_presence(series, metric) for each, (series, _) in stories.items()}
    names = [each for each in everyone if presence[each] == presence[story]]
    batch = (str(folder), alert, tuple(names), minutes)
    if (batch, story) in _VERDICTS:
        return _VERDICTS[batch, story]
    rules = [r for g in rule_groups((folder / "rules.yaml").read_text()) for r in g["rules"]]
    owner = next(r["labels"]["gpudash_rule"] for r in rules if r.get("alert") == alert)
    assert kept_apart([r["expr"] for r in rules if r["labels"].get("gpudash_rule") == owner], metric)

    def judge(part) -> None:
        marked = len(part) > 1  # a story judged alone is left as it is told

        def own(each) -> tuple[list[dict[str, str]], Callable]:
            series, truth, k = *stories[each], everyone.index(each)
            if not marked:
                return series, truth
            return story_own(series, k, metric), lambda minute: [{**labels, "UUID": own_uuid(labels["UUID"], k)}
                                                                 for labels in truth(minute)]
        told = [own(each) for each in part]
        cases = [{"eval_time": f"{minute}m", "alertname": alert, "exp_alerts": [
            expected_alert(folder, alert, **labels) for _, truth in told for labels in truth(minute)]}
            for minute in minutes]
        promtool_test(folder, f"{name}-{everyone.index(part[0])}.yaml", [{
            "interval": f"{step}s", "input_series": [one for series, _ in told for one in series],
            "alert_rule_test": cases}])

    failure = batch_failure(names, judge)
    for each in names:  # promtool lists every story's alerts at a failing minute: say which are this story's
        _VERDICTS[batch, each] = failure if failure is None or len(names) == 1 else (
            f"{each!r} judged with {', '.join(repr(other) for other in names if other != each)}, each story k its "
            f"own cluster s<k> and UUIDs ending in -s<k> ({each!r}: s{everyone.index(each)}):\n{failure}")
    return _VERDICTS[batch, story]
