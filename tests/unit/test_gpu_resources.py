"""Which node resources hold GPUs and which of them dcgm-exporter gives a pod (its iterateGPUDevices: nvidia.com/gpu,
nvidia.com/mig-*, and what --nvidia-resource-names / NVIDIA_RESOURCE_NAMES lists)."""

from __future__ import annotations

import pytest

from generator.checks.gpu_resources import attributed, gpu_resources, listed_names, unattributed
from generator.clients.answer import Answer, OddAnswer


def _node(name: str, capacity: dict[str, str]) -> Answer:
    return Answer({"metadata": {"name": name}, "status": {"capacity": {"cpu": "8", "pods": "110", **capacity}}},
                  "GET /api/v1/nodes", "items[0]")


@pytest.mark.parametrize("env, arguments, listed", [
    ({}, [], ()),
    ({"NVIDIA_RESOURCE_NAMES": "nvidia.com/gpu.shared"}, [], ("nvidia.com/gpu.shared",)),
    ({"NVIDIA_RESOURCE_NAMES": " nvidia.com/a100, nvidia.com/gpu.shared ,"}, [],
     ("nvidia.com/a100", "nvidia.com/gpu.shared")),
    ({}, ["-f", "/etc/x.csv", "--nvidia-resource-names=nvidia.com/a100,nvidia.com/h100"],
     ("nvidia.com/a100", "nvidia.com/h100")),
    ({}, ["--nvidia-resource-names", "nvidia.com/a100", "-nvidia-resource-names=nvidia.com/gpu.shared"],
     ("nvidia.com/a100", "nvidia.com/gpu.shared")),
    # a flag on the command line wins over its variable (urfave/cli)
    ({"NVIDIA_RESOURCE_NAMES": "nvidia.com/gpu.shared"}, ["--nvidia-resource-names=nvidia.com/a100"],
     ("nvidia.com/a100",)),
    # another flag's value that happens to be the name, and a flag of another name, list nothing
    ({}, ["--kubernetes-gpu-id-type", "nvidia-resource-names", "--nvidia-resource-names-x=a"], ()),
])
def test_the_names_the_exporter_lists(env, arguments, listed):
    assert listed_names(env, arguments) == listed


def test_gpu_resources_are_whole_shared_renamed_and_mig_not_other_nvidia_devices():
    node = _node("n", {"nvidia.com/gpu.shared": "4", "nvidia.com/mig-1g.5gb": "7", "nvidia.com/mig-2g.10gb.shared": "0",
                       "nvidia.com/rdma_shared_device_a": "63", "nvidia.com/a100": "2"})
    # the network operator's RDMA devices are no GPU; a custom name is one only where the exporter lists it
    assert gpu_resources(node) == {"nvidia.com/gpu.shared": 4, "nvidia.com/mig-1g.5gb": 7}
    assert gpu_resources(node, ("nvidia.com/a100",)) == {"nvidia.com/gpu.shared": 4, "nvidia.com/mig-1g.5gb": 7,
                                                         "nvidia.com/a100": 2}
    assert [attributed(r, ()) for r in ("nvidia.com/gpu", "nvidia.com/mig-1g.5gb.shared", "nvidia.com/gpu.shared")] \
        == [True, True, False]
    assert unattributed([node], ()) == ["n advertises 4 nvidia.com/gpu.shared"]
    assert unattributed([node], ("nvidia.com/gpu.shared",)) == []


def test_an_odd_count_of_a_renamed_resource_is_an_odd_answer():
    node = _node("n", {"nvidia.com/gpu.shared": "500m"})
    with pytest.raises(OddAnswer, match=r"items\[0\]\.status\.capacity\[nvidia\.com/gpu\.shared\] is '500m'"):
        gpu_resources(node)
