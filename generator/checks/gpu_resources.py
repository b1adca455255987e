"""Which of a node's extended resources hold GPUs, and which of those dcgm-exporter gives a pod.

The NVIDIA device plugin advertises whole GPUs (and MIG's single strategy) as nvidia.com/gpu, MIG's mixed strategy
as nvidia.com/mig-<profile>, and shared GPUs (time-slicing, MPS) under a renamed resource where its sharing config
says `renameByDefault: true` (nvidia.com/gpu.shared, nvidia.com/mig-<profile>.shared) or `rename:` names one. The
exporter attributes a device to a pod only for nvidia.com/gpu, nvidia.com/mig-* or a resource its
--nvidia-resource-names / NVIDIA_RESOURCE_NAMES lists (dcgm-exporter internal/pkg/transformation/kubernetes.go,
iterateGPUDevices); every other GPU resource's pods are missing from its series."""

from __future__ import annotations

from ..clients.answer import Answer, OddAnswer, whole_count

GPU_RESOURCE = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"  # MIG's mixed strategy: one resource per instance profile
RENAMED_PREFIX = GPU_RESOURCE + "."  # the device plugin's renamed shares: nvidia.com/gpu.shared
RESOURCE_NAMES_ENV, RESOURCE_NAMES_FLAG = "NVIDIA_RESOURCE_NAMES", "nvidia-resource-names"


def capacity(node: Answer) -> dict:
    found = node.get("status", dict).get("capacity") or {}
    if not isinstance(found, dict):
        raise OddAnswer(node.source, f"{node.path}.status.capacity", found, "an object")
    return found


def _device_plugins(name: str) -> bool:
    """Whether `name` is a GPU resource the NVIDIA device plugin advertises (whole, renamed share, MIG mixed)."""
    return name == GPU_RESOURCE or name.startswith((RENAMED_PREFIX, MIG_RESOURCE_PREFIX))


def gpu_resources(node: Answer, listed: tuple[str, ...] = ()) -> dict[str, int]:
    """The node's capacity in each resource that holds GPUs (those of none left out): nvidia.com/gpu, a renamed share
    (nvidia.com/gpu.<suffix>), MIG's mixed strategy's nvidia.com/mig-*, and any the exporter lists (`listed`: a
    device plugin's custom name, nvidia.com/a100)."""
    found = {}
    for name, value in capacity(node).items():
        if isinstance(name, str) and (_device_plugins(name) or name in listed):
            if count := whole_count(value, node.source, f"{node.path}.status.capacity[{name}]"):
                found[name] = count
    return found


def has_gpus(node: Answer, named: tuple[str, ...] = ()) -> bool:
    """Whether the node has GPUs: a device plugin's resource, or one `named` (the settings' exporter.resource_names,
    as the data-missing alarm counts GPU nodes), at a count above 0."""
    return bool(gpu_resources(node, named))


def lists_gpus(node: Answer, named: tuple[str, ...] = ()) -> bool:
    """Whether the node's status lists a GPU resource (or one `named`, as has_gpus) at any count: the kubelet keeps a
    device plugin's resource at 0 once the plugin stops, so a GPU node whose plugin was removed is still one; a node
    no plugin ran on lists none (the data-missing signal's, data_missing.NODES)."""
    return any(isinstance(name, str) and (_device_plugins(name) or name in named) for name in capacity(node))


def attributed(resource: str, listed: tuple[str, ...]) -> bool:
    """Whether the exporter gives a device of `resource` the pod that holds it."""
    return resource == GPU_RESOURCE or resource.startswith(MIG_RESOURCE_PREFIX) or resource in listed


def listed_names(env: dict[str, str], arguments: list[str]) -> tuple[str, ...]:
    """The resources the exporter's --nvidia-resource-names (a string slice: repeated, or comma-separated) or, without
    it, NVIDIA_RESOURCE_NAMES lists (urfave/cli: a flag given on the command line wins over its variable)."""
    flagged: list[str] = []
    for i, argument in enumerate(arguments):
        name, equals, value = argument.lstrip("-").partition("=")
        if not argument.startswith("-") or name != RESOURCE_NAMES_FLAG:
            continue
        if not equals and i + 1 < len(arguments):  # `--nvidia-resource-names a,b`
            value = arguments[i + 1]
        flagged.extend(value.split(","))
    names = flagged if flagged else env.get(RESOURCE_NAMES_ENV, "").split(",")
    return tuple(n.strip() for n in names if n.strip())


def unattributed(nodes: list[Answer], listed: tuple[str, ...]) -> list[str]:
    """Each node advertising GPUs under a resource the exporter gives no pod: '<node> advertises <n> <resource>'."""
    said = []
    for node in nodes:
        missed = {r: n for r, n in gpu_resources(node).items() if not attributed(r, listed)}
        if missed:
            said.append(f"{node.get('metadata.name', str)} advertises "
                        + ", ".join(f"{n} {r}" for r, n in sorted(missed.items())))
    return said
