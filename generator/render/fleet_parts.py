"""Where a note holds in a fleet whose clusters differ in their settings (exporter.mig): each part of the fleet an alarm
or a dashboard is made for is planned on its own settings, and a note said of some parts alone names them."""

from __future__ import annotations

from typing import Iterable

from ..settings import Cluster, Settings

# Where a note's words name the part of the fleet it holds for (said_where fills it in): nothing where it holds for
# every cluster, else " in cluster a, b" or, for a fleet-scope rule's alarm, " in Region r"
WHERE = "\x00"


# The most clusters a note names one by one: past it, the first of them and how many more (a fleet of 1,000 clusters,
# a quarter saying exporter.mig: none, named 750 clusters in one note of 10,850 characters)
NAMED_CLUSTERS = 10


def where_words(clusters: Iterable[Cluster], regions: Iterable[str | None]) -> str:
    """" in Region r, s" of the Regions of a fleet-scope rule's alarms (one per Region), else " in cluster a, b" (past
    NAMED_CLUSTERS, " in clusters a, b, ... and 740 more")."""
    named = sorted({region for region in regions if region})
    if named:
        return f" in Region{'s' if len(named) > 1 else ''} {', '.join(named)}"
    names = list(dict.fromkeys(cluster.name for cluster in clusters))
    listed = ", ".join(names[:NAMED_CLUSTERS])
    if len(names) > NAMED_CLUSTERS:
        listed += f" and {len(names) - NAMED_CLUSTERS:,} more"
    return f" in cluster{'s' if len(names) > 1 else ''} {listed}"


def said_where(settings: Settings, said: Iterable[tuple[str, tuple[Cluster, ...], str | None]]) -> list[str]:
    """Each message of `said` ((message holding WHERE, the clusters of the part it is said of, the part's Region or
    None)) once, in the order first said, naming where it holds: nowhere where it holds for every cluster of the
    settings (a fleet alike in its settings says what it always said), else the parts it is said of."""
    parts: dict[str, list[tuple[tuple[Cluster, ...], str | None]]] = {}
    for message, clusters, region in said:
        parts.setdefault(message, []).append((clusters, region))
    if not parts:  # (most alarms and panels say nothing: the fleet's clusters are not gone through for them)
        return []
    everywhere = {cluster.name for cluster in settings.clusters}
    in_region: dict[str, set[str]] = {}
    for cluster in settings.clusters:
        in_region.setdefault(cluster.region, set()).add(cluster.name)

    def whole_region(members: tuple[Cluster, ...], region: str | None) -> bool:
        """The part is its Region's every cluster (a fleet rule's Region its two alarms judge apart is not:
        render/alarms._kinds_apart), so that naming the Region names it."""
        return region is not None and {cluster.name for cluster in members} >= in_region.get(region, set())

    result = []
    for message, where in parts.items():
        clusters = [cluster for members, _ in where for cluster in members]
        regional = all(whole_region(members, region) for members, region in where)
        words = "" if {cluster.name for cluster in clusters} >= everywhere else \
            where_words(clusters, (region for _, region in where) if regional else ())
        result.append(message.replace(WHERE, words))
    return result
