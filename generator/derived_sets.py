"""The dimension sets gpudash derives from the two sets the settings name, and what each of those is called.

`cloudwatch.dimensions` is the per-pod set, `cloudwatch.gpu_dimensions` the per-GPU set. For MIG, four more
sets are derived, each from one of them by adding names the exporter (or the agent's scrape job) writes:

* per GPU instance: the per-GPU set and GPU_I_ID (the scrape job gives a whole GPU GPU_I_ID="none");
* MIG per pod and MIG per GPU: the per-pod or per-GPU set and GPU_I_PROFILE, which only MIG instances carry;
* per MIG instance: the per-GPU set, GPU_I_ID and GPU_I_PROFILE.

cloudwatch_query publishes and queries them (dimension_sets); series_labels judges each setting by what the
sets derived from it add (a name written twice, a set over the agent's size limit).
"""

from __future__ import annotations

from typing import Callable, Sequence

from .catalog import MIG_INSTANCE_LABEL, MIG_PROFILE_LABEL

SET_NAMES = {"dimensions": "per-pod", "gpu_dimensions": "per-GPU"}  # each setting, and the set it names


def with_instance(dims: Sequence[str]) -> list[str]:
    """Per GPU instance: a MIG instance, or a whole GPU."""
    return [*dims, MIG_INSTANCE_LABEL]


def mig_only(dims: Sequence[str]) -> list[str]:
    """A set only MIG instances publish (the exporter writes GPU_I_PROFILE on them alone)."""
    return [*dims, MIG_PROFILE_LABEL]


def _per_mig_instance(dims: Sequence[str]) -> list[str]:
    return mig_only(with_instance(dims))


# (the setting a set is derived from, how), in the order the agent's configuration lists the sets
DERIVATIONS: tuple[tuple[str, Callable[[Sequence[str]], list[str]]], ...] = (
    ("gpu_dimensions", with_instance), ("dimensions", mig_only), ("gpu_dimensions", mig_only),
    ("gpu_dimensions", _per_mig_instance))


def derived(settable: dict[str, Sequence[str]]) -> list[list[str]]:
    """The derived sets, from the two settings' values (setting -> names)."""
    return [how(settable[key]) for key, how in DERIVATIONS]


def added_to(key: str) -> tuple[str, ...]:
    """The names the sets derived from setting `key` add to it."""
    return tuple(dict.fromkeys(name for setting, how in DERIVATIONS if setting == key for name in how(())))
