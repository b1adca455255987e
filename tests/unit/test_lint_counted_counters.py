"""Lint GF006 ("counter charted raw") is said of a query that shows a counter's raw reading, once per panel, and of no
query that only counts or tests the counter's series.

`Query(<counter>, "count", ...)` counts the GPUs that report the counter (generate writes `count(max by (...) (...))`):
the counter's value never reaches the answer, yet lint reported it as charted raw, four times (once per branch of
the node's spellings), an error on a definition gpudash itself writes. A panel that does chart a counter raw got the
same error four times for one mistake.
"""

from __future__ import annotations

import json
import re

import pytest

from generator.lint import run
from generator.lint.grafana_rules import RULES
from generator.lint.runner import all_rules
from generator.model import GROUP_KEYS
from tests.support.lint_input import lint_input
from tests.support.projects import bundled_project, defined_project

COUNTERS = [m.name for m in bundled_project().catalog if m.is_counter]
GROUPINGS = [(), *[(key,) for key in GROUP_KEYS], ("node", "gpu"), ("pod", "gpu"), ("namespace", "pod", "gpu")]
GAUGE = "DCGM_FI_DEV_GPU_TEMP"


def _dashboards(panels: list[str]) -> str:
    """A definitions file of one dashboard per panel (a dashboard of them all passes CloudWatch's metrics per
    dashboard)."""
    return ("from generator.model import Dashboard, Panel, Query, Row\n\n\ndef dashboards(ctx):\n"
            + "".join(f"    yield Dashboard(id='counted-{k}', title='Counted {k}', rows=[Row('All', [{panel}])])\n"
                      for k, panel in enumerate(panels)))


def _counts(counter: str) -> dict[str, str]:
    return {f"{counter} by {by} increase={increase}":
            f'Panel({f"{counter} by {by} increase={increase}"!r}, Query({counter!r}, "count", {by!r}, '
            f'as_increase={increase}), unit="count")'
            for by in GROUPINGS for increase in (False, True)}


@pytest.fixture(scope="module")
def counted(tmp_path_factory):
    """Every counter of the CSV counted under every grouping, as a definition writes it, linted by every rule."""
    panels = {title: text for counter in COUNTERS for title, text in _counts(counter).items()}
    project = defined_project(tmp_path_factory.mktemp("counted"), dashboards=_dashboards(list(panels.values())))
    return panels, run(all_rules(), lint_input(project))


def test_every_count_of_a_counter_is_a_valid_definition_that_lints_clean(counted):
    panels, findings = counted
    said = [f for f in findings if "counted" in f.where]
    assert len(panels) == len(COUNTERS) * len(GROUPINGS) * 2
    assert said == []


RAW = {  # raw_promql -> how many GF006 findings the panel gets (one per panel and counter charted raw)
    "count(C)": 0,
    "count by (node) (C)": 0,
    "group by (node) (C)": 0,
    "absent(C)": 0,
    "absent_over_time(C[5m])": 0,
    "count_over_time(C[5m])": 0,
    "timestamp(C)": 0,
    "G and C": 0,  # the gauge's readings where the counter is reported
    "G unless C": 0,
    "sum(rate(C[$__rate_interval]))": 0,
    "C": 1,
    "sum(C)": 1,
    "max by (node) (C)": 1,
    "C and G": 1,  # the counter's raw readings where the gauge is reported
    "C or C": 1,  # one mistake, said once
    "count_values(\"reading\", C)": 1,  # each raw reading made a label
    "sum(C) / count(C)": 1,
    # a comparison with a number answers with the readings it keeps (`bool`: with 1 or 0)
    "C > 0": 1,
    "sum(C < 1e14)": 1,
    "max_over_time(C[5m]) < 9e18": 1,
    "C > bool 0": 0,
    "max_over_time(C[5m]) < bool 9e18": 0,
    "count(C < 1e14)": 0,
    "G and C < 1e14": 0,
    "rate(C[$__rate_interval]) > 0": 0,
    # a subquery's rate over a max: one GPU's copies merged (by its UUID, gpudash's GPU label, or its index beside its
    # node), or a max across GPUs, no counter (a GPU leaving reads as a reset, another's growth as its own)
    "rate(max by (UUID) (C)[5m:])": 0,
    "rate(max by (gpudash_gpu, gpu) (C)[5m:])": 0,
    "rate(max by (gpu, Hostname) (C)[5m:])": 0,
    "rate(max by (gpu, instance) (C)[5m:])": 0,  # the target: one exporter pod, one node
    "rate(max by (gpu, node) (C)[5m:])": 0,
    # a label holds a node by what it holds, not by its name: these hold one only where the settings or a scrape
    # job say so (test_a_label_holds_the_node_where_the_settings_or_the_scrape_job_say_so)
    "rate(max by (gpu, kubernetes_node) (C)[5m:])": 1,
    "rate(max by (gpu, instance_id) (C)[5m:])": 1,
    "rate(max by (gpu, hostIP) (C)[5m:])": 1,
    "rate(max by (gpu, pod) (C)[5m:])": 1,  # a GPU no pod holds has none: GPU 0 of every idle node merged
    "sum(sum_over_time((idelta(last_over_time(max by (gpu, nodename) (C)[1m:30s])[30001ms:30s]) >= 0)[5m:30s]))": 1,
    # a node's kind, group or pool is no node: GPU 0 of every node of it merged
    "rate(max by (gpu, instance_type) (C)[5m:])": 1,
    "rate(max by (gpu, node_pool) (C)[5m:])": 1,
    "rate(max by (gpu, nodegroup) (C)[5m:])": 1,
    "rate(max by (gpu, nodeType) (C)[5m:])": 1,
    "rate(max without (pod) (C)[5m:])": 0,
    "rate(max(C)[5m:])": 1,
    "rate(max by (gpu) (C)[5m:])": 1,
    "rate(max by (node) (C)[5m:])": 1,
    "rate(max without (UUID, gpu) (C)[5m:])": 1,
    # a sum of a subquery's steps' deltas: floored at 0 (a reset's drop not added), or not (no increase)
    "sum(sum_over_time((idelta(last_over_time(C[1m:30s])[30001ms:30s]) >= 0)[5m:30s]))": 0,
    "sum(sum_over_time(idelta(last_over_time(C[1m:30s])[30001ms:30s])[5m:30s]))": 1,
    "sum(sum_over_time((idelta(last_over_time(C[1m:30s])[30001ms:30s]) >= -1)[5m:30s]))": 1,
    "sum(sum_over_time((0 <= idelta(last_over_time(C[1m:30s])[30001ms:30s]))[5m:30s]))": 0,
    "sum(sum_over_time(((idelta(last_over_time(C[1m:30s])[30001ms:30s]) or (C - C offset 30s)) >= 0)[5m:30s]))": 0,
    "sum(sum_over_time(((idelta(last_over_time(C[1m:30s])[30001ms:30s]) and C) >= 0)[5m:30s]))": 0,
    # `>= bool 0` answers 1 or 0: the sum counts the steps, not the counter's growth
    "sum(sum_over_time((idelta(last_over_time(C[1m:30s])[30001ms:30s]) >= bool 0)[5m:30s]))": 1,
    "sum(sum_over_time((0 <= bool idelta(last_over_time(C[1m:30s])[30001ms:30s]))[5m:30s]))": 1,
    # the `or` beside the floored deltas: the copies' own deltas (a reading less an earlier one), or the raw reading
    # (a reading less the one before where that is not above it, as gpudash writes it, or floored at 0: a reset's
    # negative difference would be added as a drop)
    "sum(sum_over_time(((idelta(last_over_time(C[1m:30s])[30001ms:30s]) >= 0) or (C - (C offset 30s <= C or "
    "C offset 30s * 0)))[5m:30s]))": 0,
    "sum(sum_over_time(((idelta(last_over_time(C[1m:30s])[30001ms:30s]) >= 0) or ((C - C offset 30s) >= 0))"
    "[5m:30s]))": 0,
    "sum(sum_over_time(((idelta(last_over_time(C[1m:30s])[30001ms:30s]) >= 0) or (C - C offset 30s))[5m:30s]))": 1,
    "sum(sum_over_time(((idelta(last_over_time(C[1m:30s])[30001ms:30s]) >= 0) or C)[5m:30s]))": 1,
    "sum(sum_over_time(((idelta(last_over_time(C[1m:30s])[30001ms:30s]) >= 0) or (C - C))[5m:30s]))": 1,
    # the steps read from one GPU's copies, or from an aggregation across GPUs (a GPU leaving reads as a drop, which
    # the floor hides, and GPU 1's counter taking over from GPU 0's as growth)
    "sum(sum_over_time((idelta(last_over_time(max by (UUID) (C)[1m:30s])[30001ms:30s]) >= 0)[5m:30s]))": 0,
    "sum(sum_over_time((idelta(last_over_time(max(C)[1m:30s])[30001ms:30s]) >= 0)[5m:30s]))": 1,
    "sum(sum_over_time((idelta(last_over_time(sum by (node) (C)[1m:30s])[30001ms:30s]) >= 0)[5m:30s]))": 1,
    "sum(sum_over_time((idelta(last_over_time(max by (gpu) (C)[1m:30s])[30001ms:30s]) >= 0)[5m:30s]))": 1,
    "sum by (node) (sum_over_time((idelta(last_over_time(C[1m:30s])[30001ms:30s]) >= 0)[5m:30s]))": 0,
    # any aggregation across GPUs under a subquery's rate, not only a max
    "rate(sum(C)[5m:])": 1,
    "increase(min by (node) (C)[5m:])": 1,
    "rate(topk(1, C)[5m:])": 1,
    # one GPU's copies added, averaged or taken at their least: a copy leaving reads as a reset, one coming as growth
    "sum(rate(sum by (UUID) (C)[5m:]))": 1,
    "rate(min by (UUID) (C)[5m:])": 1,
    "sum(sum_over_time((idelta(last_over_time(sum by (UUID) (C)[1m:30s])[30001ms:30s]) >= 0)[5m:30s]))": 1,
    # a subquery of the counter itself, its blank left out, its latest reading held: still the counter's rate
    "sum(rate(C[5m:1m]))": 0,
    "rate((C < 9e18)[5m:])": 0,
    # on purpose: readings left out by a filter are still one counter's readings (a reset to 0 reads as the same reset
    # without its 0); what is lost is the growth from a 0 the window starts at, as for a series starting inside it
    "rate((C > 0)[5m:])": 0,
    "rate(last_over_time(C[1m])[5m:])": 0,
    "rate((C > bool 0)[5m:])": 0,  # a test of the counter (1 or 0), as `C > bool 0`: none of its readings shown
    "max_over_time(last_over_time(C[1m])[5m:])": 1,
}
COPIES = {text for text in RAW if "by (UUID)" in text and re.search(r"\((sum|min) by \(UUID\)", text)}
def _beside_gpu(text: str) -> bool:
    """A rate or a sum of steps over an aggregation by gpu beside other labels."""
    return bool(re.search(r"by \(gpu, \w+\) \(C\)\[", text))


ACROSS = {  # the panels told what is wrong with a rate or a sum of steps over an aggregation across GPUs
    text for text in RAW if RAW[text] and not _beside_gpu(text)
    and (text.startswith(("rate(max", "rate(sum", "increase(min", "rate(topk"))
                                          or "_over_time(max(" in text or "(sum by (node) (C)[" in text
                                          or "(max by (gpu) (C)[" in text)}


def _written(text: str, counter: str) -> str:
    return re.sub(r"\b[CG]\b", lambda name: counter if name.group() == "C" else GAUGE, text)


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    counter = COUNTERS[0]
    panels = [f'Panel({text!r}, Query({counter!r}, raw_promql={_written(text, counter)!r}), '
              f'unit="count")' for text in RAW]
    project = defined_project(tmp_path_factory.mktemp("raw"), dashboards=_dashboards(panels))
    return run([rule for rule in RULES if rule.id == "GF006"], lint_input(project))


@pytest.mark.parametrize("text", sorted(RAW))
def test_a_counter_is_said_charted_raw_exactly_where_its_reading_is_shown(raw, text):
    said = [f for f in raw if f.where.endswith(f" panel {text!r}")]
    assert len(said) == RAW[text], said
    start = f"counter {COUNTERS[0]} is " + ("read by " if text in ACROSS | COPIES or _beside_gpu(text)
                                            else "charted raw")
    assert all(f.severity == "error" and f.message.startswith(start) for f in said), said
    if _beside_gpu(text) and said:
        label = re.search(r"by \(gpu, (\w+)\)", text).group(1)
        read = "a sum of idelta() steps" if "idelta" in text else text.split("(")[0] + "()"  # as the query reads it
        assert said[0].message.startswith(f"counter {COUNTERS[0]} is read by {read} over an aggregation by gpu and "
                                          f"{label}, which holds no GPU's node"), said
    if text in COPIES:
        operation = re.search(r"\((sum|min) by \(UUID\)", text).group(1)
        assert f"over a {operation} of one GPU's copies: that {operation} is no counter" in said[0].message, said
    if text in ACROSS:
        operation = re.search(r"\((max|sum|min|topk)\b", text).group(1)
        read = "a sum of idelta() steps" if "idelta" in text else text.split("(")[0] + "()"
        assert said[0].message.startswith(f"counter {COUNTERS[0]} is read by {read} over a {operation} across GPUs")


APART = {  # raw_promql -> GF006 findings under settings whose labels.node is [node, machine]
    "rate(max by (gpu, machine) (C)[5m:])": 0,  # `machine` holds the node: the settings say so
    "rate(max by (gpu, kubernetes_node) (C)[5m:])": 1,
    "sum(sum_over_time((idelta(last_over_time(max by (gpu, machine) (C)[1m:30s])[30001ms:30s]) >= 0)[5m:30s]))": 0,
    "sum(sum_over_time((idelta(last_over_time(max by (gpu, node_pool) (C)[1m:30s])[30001ms:30s]) >= 0)[5m:30s]))": 1,
}


def test_a_label_holds_the_node_where_the_settings_or_the_scrape_job_say_so(tmp_path):
    """Whether an aggregation by gpu and another label keeps GPUs apart depends on what that label holds: labels.node
    lists the labels holding the node (`machine` here), and a label a scrape job writes from the target's node holds
    it too. Seen: judged by the label's name (a word node, host or instance in it), so `kubernetes_node` passed
    whatever it held, a label holding the node under another name (`machine`) was an error, and `instance_type` passed
    until its words were read."""
    counter = COUNTERS[0]
    panels = [f'Panel({text!r}, Query({counter!r}, raw_promql={_written(text, counter)!r}), unit="count")'
              for text in APART]
    project = defined_project(tmp_path, "labels:\n  node: [node, machine]\n", dashboards=_dashboards(panels))
    subject = lint_input(project)
    found = run([rule for rule in RULES if rule.id == "GF006"], subject)
    said = {text: [f.message for f in found if f.where.endswith(f" panel {text!r}")] for text in APART}
    assert {text: len(messages) for text, messages in said.items()} == APART, said
    assert all("holds no GPU's node (the labels that do: Hostname, hostname, instance, machine, node)" in m[0]
               for m in said.values() if m), said
    # a scrape job that writes the target's node into kubernetes_node makes it a node's label
    scrape = json.loads(json.dumps(subject.artifacts.additional_scrape_configs))
    job = scrape["prometheus"]["prometheusSpec"]["additionalScrapeConfigs"][0]
    job["relabel_configs"].append({"source_labels": ["__meta_kubernetes_pod_node_name"],
                                   "target_label": "kubernetes_node"})
    found = run([rule for rule in RULES if rule.id == "GF006"],
                lint_input(project, subject.artifacts, additional_scrape_configs=scrape))
    assert [f.where.split(" panel ")[1] for f in found] == [repr(t) for t in APART if "node_pool" in t]


# A counter on two nodes' GPU 0, scraped every 30 s: GPU-a grows 10 per scrape from 1000; GPU-b reads 5000 and leaves
# after 4.5 minutes; a second exporter copy of GPU-a comes at 6 minutes (a rollout). Over the 5 minutes before 10 m,
# summed per step from 4.5 m, GPU-a grew 1200 - 1090 = 110 and GPU-b nothing: 110 in all; 10 per 30 s, 100 per 300 s.
SCENE = [("GPU-a", "n1", "e1", "1000+10x20"), ("GPU-b", "n2", "e2", "5000+0x9"), ("GPU-a", "n1", "e3", "_x12 1120+10x8")]
TRUTH = {"summed": 110, "rate": 100}
VALUED = {  # the counter's increase or rate in a form lint judges -> its kind (which truth it states)
    "sum(sum_over_time((idelta(last_over_time(max by (UUID) (C)[1m:30s])[30001ms:30s]) >= 0)[5m:30s]))": "summed",
    "sum(sum_over_time((idelta(last_over_time(max by (gpu, node) (C)[1m:30s])[30001ms:30s]) >= 0)[5m:30s]))": "summed",
    "sum(sum_over_time((idelta(last_over_time(max(C)[1m:30s])[30001ms:30s]) >= 0)[5m:30s]))": "summed",
    "sum(sum_over_time((idelta(last_over_time(max by (gpu) (C)[1m:30s])[30001ms:30s]) >= 0)[5m:30s]))": "summed",
    "sum(sum_over_time((idelta(last_over_time(sum by (UUID) (C)[1m:30s])[30001ms:30s]) >= 0)[5m:30s]))": "summed",
    "sum(sum_over_time((idelta(last_over_time(max by (UUID) (C)[1m:30s])[30001ms:30s]) >= bool 0)[5m:30s]))":
        "summed",
    "round(sum(rate(max by (UUID) (C)[5m:30s])) * 300)": "rate",
    "round(sum(rate(max(C)[5m:30s])) * 300)": "rate",
    "round(sum(rate(sum by (UUID) (C)[5m:30s])) * 300)": "rate",
}


def test_lint_passes_exactly_the_forms_that_read_the_counters_increase_on_prometheus(tmp_path):
    """GF006's verdict on a counter read through a subquery is the truth Prometheus computes: over a GPU leaving and
    an exporter copy coming, the forms lint passes (a max of one GPU's copies, floored steps) give GPU-a's 110 (10 per
    30 s); those it flags do not (a max across GPUs: 0, a sum of copies: 1,310, steps counted with bool: 22, a rate
    across GPUs: 4/s, of copies added 4.33/s). promtool evaluates each form at 10 m."""
    from tests.support.prometheus_server import binary

    counter = COUNTERS[0]
    series = [{"series": f'{counter}{{UUID="{uuid}", gpu="0", node="{node}", instance="{target}"}}',
               "values": values} for uuid, node, target, values in SCENE]
    tests = [{"interval": "30s", "input_series": series, "promql_expr_test": [
        {"expr": _written(text, counter), "eval_time": "10m", "exp_samples": [{"labels": "{}",
                                                                              "value": TRUTH[kind]}]}]}
             for text, kind in VALUED.items()]
    (tmp_path / "t.yaml").write_text(json.dumps({"rule_files": [], "tests": tests}))
    checked = __import__("subprocess").run([binary("promtool"), "test", "rules", str(tmp_path / "t.yaml")],
                                           capture_output=True, text=True)
    wrong = {text for text in VALUED if f'expr: "{_written(text, counter)}"' in checked.stdout + checked.stderr}
    panels = [f'Panel({text!r}, Query({counter!r}, raw_promql={_written(text, counter)!r}), unit="count")'
              for text in VALUED]
    found = run([rule for rule in RULES if rule.id == "GF006"],
                lint_input(defined_project(tmp_path, dashboards=_dashboards(panels))))
    flagged = {text for text in VALUED if any(f.where.endswith(f" panel {text!r}") for f in found)}
    assert len(wrong) == 6, checked.stdout + checked.stderr  # the scene tells the forms apart
    assert flagged == wrong
