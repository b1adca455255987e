"""Shortcuts for the panels most GPU dashboards need, built on generator.model.

    from generator.panels import per_gpu, per_pod, fleet_stat, per_mig_instance
"""

from __future__ import annotations

from .model import Panel, Query

PER_GPU = ("node", "gpu")
PER_MIG_INSTANCE = ("node", "gpu", "mig_instance")


def per_pod(metric: str, title: str, *, aggregation: str = "avg", over: tuple[str, ...] = (),
            **panel: object) -> Panel:
    """One line per workload pod (legend `Pod {{pod}}` from the label mapping)."""
    return Panel(title=title, queries=(Query(metric, aggregation, ("pod",), over=over),), **panel)


def per_gpu(metric: str, title: str, *, aggregation: str = "avg", over: tuple[str, ...] = (),
            **panel: object) -> Panel:
    """One line per GPU, labelled with its node and index."""
    return Panel(title=title, queries=(Query(metric, aggregation, PER_GPU, over=over),), **panel)


def fleet_stat(metric: str, title: str, *, aggregation: str = "avg", kind: str = "stat",
               over: tuple[str, ...] = (), **panel: object) -> Panel:
    """One number for everything the dashboard variables select."""
    panel.setdefault("width", 4)
    panel.setdefault("height", 4)
    return Panel(title=title, queries=(Query(metric, aggregation, over=over),), kind=kind, **panel)


def per_mig_instance(metric: str, title: str, *, aggregation: str = "avg", **panel: object) -> Panel:
    """One line per MIG instance (GPUs not split into instances are left out)."""
    return Panel(title=title, queries=(Query(metric, aggregation, PER_MIG_INSTANCE),), **panel)
