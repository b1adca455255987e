"""promql_alike: a rule gpudash wrote and the same rule as a real Prometheus lists it back read as one expression, for
every rule of the golden builds (alerts, their period recordings, the counters' recordings, the watched clusters);
a rule of other settings does not. verify's `counter recording rules` judges the rules Prometheus loaded by it: a
false difference would fail a healthy deployment, a false sameness pass an earlier build's rules."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from generator.artifacts import build
from generator.output import encode
from generator.project import load_project
from generator.promql_alike import alike, tokens
from tests.support.prometheus_server import Prometheus

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "builds"
BUILDS = ("defaults", "classic", "multi-region", "container-insights")


@pytest.fixture(scope="module")
def listed(tmp_path_factory):
    """{(build, group, index): (the rule as written, the rule as Prometheus lists it)} of the golden builds' rules
    files, loaded side by side in one Prometheus (evaluated hourly: only the listing is read)."""
    workdir = tmp_path_factory.mktemp("alike")
    files = {name: GOLDEN / name / "prometheus" / "rules.yaml" for name in BUILDS}
    with Prometheus(workdir, {"global": {"evaluation_interval": "1h"}, "scrape_configs": [],
                              "rule_files": [str(path) for path in files.values()]}) as server:
        deadline = time.monotonic() + 60
        while len(groups := server.api("rules")["groups"]) < sum(len(yaml.safe_load(path.read_text())["groups"])
                                                                  for path in files.values()):
            assert time.monotonic() < deadline, "the rule files were not loaded within a minute"
            time.sleep(0.2)  # (Prometheus is ready before its rule manager has loaded them)
    written = {name: yaml.safe_load(path.read_text())["groups"] for name, path in files.items()}
    by_file = {str(path): name for name, path in files.items()}
    pairs = {}
    for group in groups:
        name = by_file[group["file"]]
        rules = next(g["rules"] for g in written[name] if g["name"] == group["name"])
        for index, (mine, theirs) in enumerate(zip(rules, group["rules"], strict=True)):
            pairs[(name, group["name"], index)] = (mine, theirs)
    return pairs


def test_every_golden_rule_reads_alike_as_prometheus_lists_it(listed):
    assert len({key[0] for key in listed}) == len(BUILDS) and len(listed) > 80, len(listed)
    differ = [key for key, (mine, theirs) in listed.items() if not alike(mine["expr"], theirs["query"])]
    assert differ == [], differ[:5]
    respelled = [key for key, (mine, theirs) in listed.items() if mine["expr"] != theirs["query"]]
    assert respelled, "Prometheus printed every rule back as written: nothing here tests the reading"


def test_a_rule_of_other_settings_does_not_read_alike(listed, tmp_path):
    """The counters' recordings of settings scraped every 15 s against the defaults' as Prometheus lists them: each
    differs (their windows), though both are gpudash's of the same names."""
    settings = tmp_path / "gpudash.yaml"
    settings.write_text("scrape:\n  interval: 15s\n")
    other = {rule["record"]: rule["expr"] for group in yaml.safe_load(
        encode(build(load_project(settings), grafana=False))["prometheus/rules.yaml"])["groups"]
        for rule in group["rules"] if rule.get("record", "").startswith("gpudash:DCGM_")}
    theirs = {mine["record"]: theirs["query"] for (name, _, _), (mine, theirs) in listed.items()
              if name == "defaults" and mine.get("record") in other}
    assert len(theirs) == 8  # 4 counters recorded, 2 recordings each
    assert [record for record, query in theirs.items() if alike(other[record], query)] == []


@pytest.mark.parametrize("one, other, same", [
    ('sum by (a) (rate(x{b="c"}[90s]))', "sum by(a)(rate(x{b='c'}[1m30s]))", True),
    ("x < 9e18", "x < 9e+18", True),
    ("x offset 29999ms", "x offset 29s999ms", True),
    ('x{a="\\\\.b"}', "x{a='\\\\.b'}", True),
    ('x{b="1",a!=""}', 'x{a!="",b="1"}', True),
    ('x{a="\\x41",b=\'A\'} / y{c="A"}', 'x{b="A",a="A"} / y{c="\\101"}', True),  # each spelling read as its value
    ('x{a="\\x41"} / y{c="B"}', 'x{a="A"} / y{c="\\101"}', False),
    ("x[90s]", "x[1m]", False),
    ("x < 9e18", "x <= 9e18", False),
    ('x{a="b"}', 'x{a="c"}', False),
    ("(a + b) * c", "a + b * c", False),
    ("x > .5", "x > 5", False),  # a character no token reads is not skipped
    ("x | y", "x y", False),
])
def test_texts_read_alike_only_as_one_expression(one, other, same):
    assert alike(one, other) is same, (tokens(one), tokens(other))
