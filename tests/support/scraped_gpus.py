"""GPUs' temperature and power as a scraping Prometheus stores them, for prometheus_server.written_fixture: each
exporter scraped at its own phase of the interval, and a series gone from a scrape, or every series of a failed one,
ended there by a staleness marker (a backfill writes none)."""

from __future__ import annotations

from typing import Callable, Iterable

from tests.support.prometheus_server import STALE

# an exporter: (address, phase in seconds, what its scrape at t serves: each GPU's own labels (gpu, UUID, host label,
# node ...) and watts; [] a page without GPUs, None a failed scrape)
Exporter = tuple[str, int, Callable[[int], "list[tuple[dict[str, str], int]] | None"]]


def scraped(start: int, exporters: Iterable[Exporter], span: int, step: int) -> dict[tuple, list[tuple[float, str]]]:
    """{labels: [(second, value or STALE)]} of `exporters` scraped every `step` seconds from `start` over `span`: each
    GPU's DCGM_FI_DEV_GPU_TEMP 40 and DCGM_FI_DEV_POWER_USAGE its watts, an NVIDIA L4 at device nvidia<gpu>, under the
    exporter's target (instance <address>:9400, job gpu-metrics)."""
    series: dict[tuple, list[tuple[float, str]]] = {}
    for address, phase, held in exporters:
        before: set[tuple] = set()
        for t in range(0, span + 1, step):
            gpus, at = held(t), start + t + phase
            now = set()
            for own, watts in gpus or ():
                for metric, value in (("DCGM_FI_DEV_GPU_TEMP", 40), ("DCGM_FI_DEV_POWER_USAGE", watts)):
                    labels = tuple(sorted({"__name__": metric, "device": f"nvidia{own['gpu']}",
                                           "modelName": "NVIDIA L4", "instance": f"{address}:9400",
                                           "job": "gpu-metrics", **own}.items()))
                    series.setdefault(labels, []).append((at, str(value)))
                    now.add(labels)
            for labels in before - now:  # gone from this scrape, or the scrape failed: a staleness marker
                series[labels].append((at, STALE))
            before = now
    return series
