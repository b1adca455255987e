"""verify's CloudWatch listing stopped by the run's deadline says what happened: not asked at all, or cut short
while paging (how many pages were read, which metrics were not found yet)."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from generator.checks.cloudwatch import _listed
from generator.clients.http import SlowAnswer
from generator.clients.options import Options

CLUSTER = SimpleNamespace(name="prod", region="us-east-1")


def _past(options: Options) -> None:
    options.deadline = time.monotonic() - 0.001


def test_a_listing_never_asked_before_the_deadline_does_not_say_it_was_paging():
    options = Options(timeout=2)
    options.start()
    _past(options)
    with pytest.raises(SlowAnswer) as stopped:
        _listed(None, "ContainerInsights", CLUSTER, ["ClusterName"], {"DCGM_FI_DEV_GPU_UTIL"}, options)
    assert stopped.value.what == ("CloudWatch ListMetrics in us-east-1 was not asked: the run's deadline (2 s) had "
                                  "passed before its first page")


def test_a_listing_cut_short_while_paging_says_how_far_it_got():
    """CloudWatch answers a first page (without the wanted metric) and a token, and the deadline passes."""
    options = Options(timeout=2)
    options.start()

    class OnePage:
        def call(self, region, operation, what, **kwargs):
            _past(options)
            return {"Metrics": [{"MetricName": "DCGM_FI_DEV_GPU_TEMP", "Dimensions": []}], "NextToken": "next"}

    with pytest.raises(SlowAnswer) as stopped:
        _listed(OnePage(), "ContainerInsights", CLUSTER, ["ClusterName"], {"DCGM_FI_DEV_GPU_UTIL"}, options)
    assert stopped.value.what == ("CloudWatch ListMetrics in us-east-1 was still paging at the deadline (2 s): 1 "
                                  "page(s) read, not yet found: DCGM_FI_DEV_GPU_UTIL")


def test_a_listing_of_every_set_cut_short_says_which_metrics_sets_were_not_all_read():
    """Every dimension set of a metric wanted (the agent alarm's count per kube-state-metrics pod beside the
    cluster's): the metric found on the first page, the deadline passing before the next, names what was still read."""
    options = Options(timeout=2)
    options.start()

    class OnePage:
        def call(self, region, operation, what, **kwargs):
            _past(options)
            return {"Metrics": [{"MetricName": "kube_daemonset_status_desired_number_scheduled",
                                 "Dimensions": [{"Name": "ClusterName", "Value": "prod"}]}], "NextToken": "next"}

    with pytest.raises(SlowAnswer) as stopped:
        _listed(OnePage(), "ContainerInsights", CLUSTER, ["ClusterName"],
                {"kube_daemonset_status_desired_number_scheduled"}, options, every_page=True)
    assert stopped.value.what == ("CloudWatch ListMetrics in us-east-1 was still paging at the deadline (2 s): 1 "
                                  "page(s) read, not yet found: every dimension set of "
                                  "kube_daemonset_status_desired_number_scheduled")
