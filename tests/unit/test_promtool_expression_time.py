"""promtool_test evaluates an expression at its eval_time over every sample taken before it. promtool loads the input
series only up to each evaluation of its rule loop (at the evaluation interval) and evaluates expression tests after
the loop, so at the 1 m interval a query at 224 s read nothing past 180 s: a test of what a panel reads 15 s after a
scrape at 209 s judged the scrape before it, and passed or failed for that."""

from __future__ import annotations

from tests.support.promtool_rules import promtool_test


def test_an_expression_reads_the_samples_taken_since_the_last_whole_minute(tmp_path):
    series = [{"series": 'x{job="a"}', "values": " ".join("1" if s == 179 else "2" if s == 209 else "_"
                                                          for s in range(210))}]
    cases = [{"expr": "x", "eval_time": "224s", "exp_samples": [{"labels": 'x{job="a"}', "value": 2}]},
             {"expr": "timestamp(x)", "eval_time": "224s", "exp_samples": [{"labels": '{job="a"}', "value": 209}]}]
    (tmp_path / "rules.yaml").write_text("groups: []\n")
    promtool_test(tmp_path, "t.yaml", [{"interval": "1s", "input_series": series, "promql_expr_test": cases}])
