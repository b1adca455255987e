"""Nodes whose real names look like a DaemonSet pod's generated name (promql.POD_LIKE: "-" and five characters of
Kubernetes' generated names' alphabet): Cluster API machines (`<cluster>-md-0-<hash>-<5>`, the node named after its
machine: vSphere, OpenStack, Metal3), Karpenter node claims outside EKS (`<nodepool>-<5>`: AKS node auto-provisioning's
`aks-default-2jf98`). A GPU read by two exporters naming it apart in one spelling (the old exporter its own pod's name
in Hostname, the new one, given NODE_NAME, the node), both fresh at every step, reading alike.

Truth: one line per GPU, named by its node at every step and call, never by the exporter pod (a pod of the GPU
operator's DaemonSet, nvidia-dcgm-exporter, the settings' default). Ranked by shape alone, both names were a pod's and
tied: the line was named by the pod at every step of about half the calls (3 of 6; 5 and 6 of 12) on both panels. (The
temperature alert read the node at each of 12 evaluations here: a tie broken the same way, not a rank.)"""

from __future__ import annotations

import pytest

from tests.support.copy_choice_scene import named_alike, one_spelling_payload, two_exporters

NODE = "gpu-md-0-7b9c5d8f4-x2kqz"  # a Cluster API machine's (and its node's) name


@pytest.fixture(scope="module")
def pod_like_node(tmp_path_factory):
    with two_exporters(tmp_path_factory, "copy-choice-pod-like-node", lambda old: one_spelling_payload(old, NODE),
                        "DCGM_FI_DEV_GPU_TEMP") as scene:
        yield scene


@pytest.mark.parametrize("title", ["GPU temperature", "Power draw"])
def test_a_line_on_a_node_named_like_a_pod_is_named_by_the_node_at_every_step_and_call(pod_like_node, title):
    named_alike(pod_like_node, title, 12, f"{NODE} GPU 0")


# Settings naming the node by one label, or by a list ending in Hostname (README: a single name must be node, hostname
# or Hostname), as a user's own scrape job keeping the exporter's labels does: Hostname is then the last spelling, which
# gpus_named ranked by no evidence of a pod's name: the pod's name and the node's tied there, the line named by the pod
# in 2 to 8 of 12 calls on both panels (5 of 12 with a node named worker-3, of no pod's shape).
@pytest.mark.parametrize("settings", ["labels:\n  node: Hostname\n", "labels:\n  node: [hostname, Hostname]\n"])
@pytest.mark.parametrize("title", ["GPU temperature", "Power draw"])
def test_with_hostname_the_last_node_spelling_a_line_is_named_by_the_node(pod_like_node, title, settings):
    named_alike(pod_like_node, title, 12, f"{NODE} GPU 0", settings)
