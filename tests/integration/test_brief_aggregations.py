"""An aggregation written briefly (promql_groups.aggregated) reads what it stands for, float for float: every panel
query and every rule of the bundled builds, written with each aggregation whole (`how by (L) (value)`, as before) and
as built, answers alike on a real Prometheus over messy fleets, at every step, at All and with a pod or a namespace
picked.

The fleets: messy_history's (Hostname and hostname, an exporter writing its own pod as Hostname, MIG instances with
device fields repeated, idle GPUs, one pod name in two namespaces, a time-sliced GPU whose pod moves every scrape,
blanks, a gap, a counter reset), test_combined_fleet_story's (exporter copies mid-rollout, a drained node, pods
starting and ending as copies come and go), test_exporter_pod_as_no_pod's with exporter.virtual_gpus (a held GPU's
own series beside its pods' shares, an exporter pod's `pod` on a GPU no pod holds) and a seeded random fleet whose
GPUs and MIG instances pods share (a series a pod: several series of one reading of a GPU instance's copy). Each form's answers compared
series by series (their labels alike) and value by value to within 1e-15 of each: a sum or mean over GPUs
(Average GPU temperature) adds its GPUs in the order the aggregation below it hands them over, which the brief form
may change (43.99999999999999 for 44.00000000000001).
"""

from __future__ import annotations

import math
import re

import pytest

from generator.artifacts import build, grafana_dashboards
from generator.output import encode
from generator.preview.interpolate import interpolate, variables
from tests.integration import test_combined_fleet_story as combined
from tests.integration import test_exporter_pod_as_no_pod as exporter_pod
from tests.integration.test_phase_story_twins import _history
from tests.support import messy_history, random_fleet
from tests.support.projects import bundled_project
from tests.support.prometheus_server import backfilled_fixture, counted_inline, range_macros
from tests.support.promtool_rules import rule_groups

SETTINGS = {"defaults": "", "virtual_gpus": "exporter:\n  virtual_gpus: true\n"}
# each fleet's picks: every variable at All, a pod (one that leaves its GPU where the fleet has one), a namespace; the
# messy fleet's pods: one name in two namespaces on whole GPUs, and one on MIG instances of two GPUs (a MIG instance's
# panel reads nothing of the first, the encoder's of the second)
PICKS = {"messy": ({}, {"pod": "worker-0"}, {"pod": "mig-b"}, {"namespace": "team-a"}),
         "rollout": ({}, {"pod": "solo-0"}, {"namespace": "team-c"}),
         "exporter-pod": ({}, {"pod": "job-1"}, {"namespace": "ml"}),
         "shared": ({}, {"pod": "w-0"}, {"namespace": "ns-b"})}
MESSY_SCRAPES = 120
SHARED = [(0, 60 * 30, random_fleet.fleet(2, shared=True, per_process=True))]  # an hour at 30 s scrapes


def _whole(how: str, by: str, value: str) -> str:
    return f"{how} by ({by}) ({value})"


def _texts(settings: str) -> list[tuple[str, str]]:
    """(name, PromQL) of every panel query and every rule of the build of `settings`."""
    project = bundled_project(settings)
    found = [(f"{panel.get('title')}/{target.get('refId')}", target["expr"])
             for dashboard in grafana_dashboards(project) for panel in dashboard.model["panels"]
             for target in panel.get("targets", ())]
    groups = rule_groups(encode(build(project, grafana=False))["prometheus/rules.yaml"].decode())
    return found + [(rule.get("alert") or rule["record"], rule["expr"]) for group in groups for rule in group["rules"]]


def _pairs() -> list[tuple[str, str, str, str]]:
    """(build, name, as built, with every aggregation whole) of each query the brief forms change."""
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr("generator.promql.brief_aggregation", _whole)
        whole = {name: _texts(settings) for name, settings in SETTINGS.items()}
    built = {name: _texts(settings) for name, settings in SETTINGS.items()}
    pairs = []
    for name in SETTINGS:
        assert [n for n, _ in built[name]] == [n for n, _ in whole[name]]
        changed = {text: (n, before) for (n, text), (_, before) in zip(built[name], whole[name]) if text != before}
        pairs += [(name, n, text, before) for text, (n, before) in changed.items()]  # a query two panels show: once
    return pairs


PAIRS = _pairs()


def _metrics() -> set[str]:
    return {m for _, _, text, _ in PAIRS for m in re.findall(r"\bDCGM_\w+", text)}


messy = backfilled_fixture(
    "brief-messy", lambda start: messy_history.openmetrics(messy_history.history(1, MESSY_SCRAPES, _metrics(), start)),
    MESSY_SCRAPES * messy_history.SCRAPE, messy_history.SCRAPE, remember=True)
rollout = backfilled_fixture("brief-rollout", combined.story(True), combined.SCRAPES * combined.SCRAPE,
                             combined.SCRAPE, remember=True)
honoring = backfilled_fixture("brief-exporter-pod", lambda start: exporter_pod.openmetrics(start, True, True),
                              exporter_pod.SCRAPES * exporter_pod.SCRAPE, exporter_pod.SCRAPE, remember=True)
shared = backfilled_fixture("brief-shared", lambda start: messy_history.openmetrics(_history(SHARED, start)),
                            SHARED[0][1], 30, remember=True)
FLEETS = {"messy": (MESSY_SCRAPES, messy_history.SCRAPE), "rollout": (combined.SCRAPES, combined.SCRAPE),
          "exporter-pod": (exporter_pod.SCRAPES, exporter_pod.SCRAPE), "shared": (60, 30)}


def test_the_brief_forms_change_every_dashboard():
    """The forms shorten queries of every build (else the comparison below compares nothing)."""
    assert {name for name, *_ in PAIRS} == set(SETTINGS)
    assert len(PAIRS) > 40, len(PAIRS)


def _answers(prometheus, start: int, fleet: str, text: str, settings: str, picked: dict) -> dict:
    scrapes, scrape = FLEETS[fleet]
    expr = interpolate(counted_inline(text, bundled_project(settings)), {
        **range_macros(f"{scrapes * scrape}s"), "__interval": f"{scrape}s", "__rate_interval": f"{4 * scrape}s",
        **variables(picked, ("namespace", "pod", "node", "gpu"))})
    # every step 15 s into an interval (between two scrapes of a node), from the fifth scrape
    return {round(at - start): dict((tuple(sorted(s["metric"].items())), float(s["value"][1])) for s in result)
            for at, result in prometheus.query_at(expr, start + 4 * scrape + 15, scrapes - 4, scrape).items()}


def _alike(one: dict, other: dict) -> bool:
    return one.keys() == other.keys() and all(
        math.isclose(one[k], other[k], rel_tol=1e-15, abs_tol=0) or math.isnan(one[k]) and math.isnan(other[k])
        for k in one)


@pytest.mark.parametrize("fleet", list(FLEETS))
@pytest.mark.parametrize("build_name, name, text, before", PAIRS, ids=[f"{b}/{n}" for b, n, *_ in PAIRS])
def test_a_brief_query_reads_what_the_whole_one_does(request, fleet, build_name, name, text, before):
    prometheus, start = request.getfixturevalue({"messy": "messy", "rollout": "rollout", "exporter-pod": "honoring",
                                                 "shared": "shared"}[fleet])
    answered = []
    for picked in PICKS[fleet]:
        built, whole = (_answers(prometheus, start, fleet, t, SETTINGS[build_name], picked) for t in (text, before))
        wrong = {at: (built[at], whole[at]) for at in built if not _alike(built[at], whole[at])}
        assert not wrong and built.keys() == whole.keys(), (picked, wrong)
        answered.append(("pod" in picked, any(built.values())))
    if fleet == "messy":  # its fleet holds what every query reads: a query that answers nothing compares nothing
        assert all(a for pod, a in answered if not pod) and any(a for pod, a in answered if pod), (answered, PICKS)
