"""An exporter installed by the dcgm-exporter Helm chart as release `gpu-metrics` (its DaemonSet
`gpu-metrics-dcgm-exporter`, named in the settings as the chart's README says) on a node Karpenter provisioned on AKS
(node auto-provisioning names the node after its node claim: `aks-<nodepool>-` and five characters of Kubernetes'
generated names, the shape of a DaemonSet pod's name). Mid-rollout the old exporter, given no NODE_NAME, writes its
own pod's name (`gpu-metrics-dcgm-exporter-7x9kq`) into Hostname, the new one the node's; both fresh at every step,
reading alike, scraped by a job that does not label the node (the user's own).

Truth: one line per GPU named by its node at every step and call, and the Node variable lists the node alone: the
pod's name is one the settings' DaemonSet gives its pods, the node's is not (both have the shape). Before the settings'
DaemonSets were read, both ranked as pods' names: the lines showed the pod's name in 5-7 of 12 calls (the variable
broke the tie the node's way there)."""

from __future__ import annotations

import pytest

from tests.support.copy_choice_scene import fresh_steps, one_spelling_payload, two_exporters
from tests.support.exporter_overlap_scene import shown_values
from tests.support.grafana_variables import node_variables, variable_options

NODE, OLD_POD = "aks-gpunp-9fz2k", "gpu-metrics-dcgm-exporter-7x9kq"
SETTINGS = "exporter:\n  deployment: helm\n  namespace: gpu-metrics\n  daemonset: gpu-metrics-dcgm-exporter\n"


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    with two_exporters(tmp_path_factory, "copy-choice-helm-release-pod", lambda old: one_spelling_payload(old, NODE, OLD_POD),
                        "DCGM_FI_DEV_GPU_TEMP") as scene:
        yield scene


@pytest.mark.parametrize("title", ["GPU temperature", "Power draw"])
def test_a_line_is_named_by_the_node_not_by_the_helm_releases_old_pod(release, title):
    legends = {}
    for call in range(12):
        for at, values in fresh_steps(release, shown_values(release, title, settings=SETTINGS)):
            legends.setdefault(tuple(sorted(values)), set()).add(call)
    assert set(legends) == {(f"{NODE} GPU 0",)}, \
        f"{title}: legends shown (true: {NODE} GPU 0 only): " + str({k: sorted(v) for k, v in legends.items()})


def test_the_node_variable_lists_the_node_not_the_helm_releases_old_pod(release, tmp_path):
    prometheus, start, end, _ = release
    nodes = node_variables(tmp_path, SETTINGS)
    assert nodes, "no dashboard has a node variable"
    listed = {(title, call, at): variable_options(prometheus, variable, at) for title, variable in nodes.items()
              for call in range(4) for at in (start + 3, (start + end) / 2, end)}
    wrong = {key: shown for key, shown in listed.items() if shown != {NODE}}
    assert not wrong, f"Node options (true: {NODE} only; {OLD_POD} is the old exporter's pod) {wrong}"
