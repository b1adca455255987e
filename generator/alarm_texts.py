"""A cluster's alarms written once per rule's form and kind of cluster: the texts alarms.json and the CloudFormation
templates hold for the clusters' requests of one maker, split at the cluster's name (AlarmTexts), and the pieces
joined by a name (joined_by). Used by the build (artifacts: it measures the alarms for the templates by them) and by
the writing of the files (output)."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from .serialize import nested_json_size_bound, string_slot, to_json, to_json_filled


class AlarmTexts:
    """The clusters' alarms as alarms.json and the templates write them, each alarm's text written once per rule's
    form and kind of cluster.

    A cluster's request is made by a maker (render.alarms.Maker, `made`; a request other than the one it made, a
    changed copy, is written whole), and the clusters' requests of one maker
    differ in their cluster's name only, where the clusters are alike in all else (Region, exporter settings) but
    their Prometheus label, which no request shows, and their names are plain tokens of one length. For those, the
    request is made once more with each of two stand-in names of that length (and stand-in labels), and its texts
    (its entry in alarms.json, its template resource, each as written at its depth) split at the stand-in: where both
    split into the same pieces, the name is written in no other way, and a cluster's text is those pieces joined by
    its name (a plain token is written as itself in JSON). Any other request is written whole."""

    def __init__(self, alarms: tuple[Any, ...], resources: dict[int, tuple[dict[str, Any], dict[str, Any]]],
                 references: dict[tuple[Any, ...], _AlarmPieces | None] | None = None):
        """`alarms`: the set's AlarmRequests; `resources`: its alarm_resources; `references`: the split texts worked
        out before for the set (its alarm_references: the build measured its alarms by them), by maker and kind."""
        self.alarms = alarms
        self.resources = resources
        self.made = {id(alarm.request): alarm for alarm in alarms if alarm.made is not None}
        self.references = {} if references is None else references
        self.kinds = ClusterKinds()

    def bound(self, request: dict[str, Any]) -> int | None:
        """`nested_json_size_bound` of the template resource of a request (at its depth), from its text's pieces:
        the same for each cluster of a kind (their texts differ in their names, of one length); None where the
        request is not written from a text."""
        alarm = self.made.get(id(request))
        pieces = self._pieces(alarm) if alarm is not None else None
        return None if pieces is None else pieces[2]

    def alarms_file(self) -> bytes:
        """cloudwatch/alarms.json."""
        strings: list[bytes] = []
        entries: list[Any] = []
        for alarm in self.alarms:
            pieces = self._pieces(alarm)
            if pieces is None:
                entries.append(alarm.as_dict())
            else:
                strings.append(joined_by(pieces[0], alarm.made[1].name.encode()))
                entries.append(string_slot(len(strings) - 1))
        return to_json_filled({"alarms": entries}, strings, lambda: {"alarms": [a.as_dict() for a in self.alarms]})

    def resource(self, resource: dict[str, Any]) -> list[bytes] | None:
        """The text of a template's alarm resource, written at its depth (a value of Resources), as the pieces it
        joins; None where it is not one written from its request's text."""
        made, request = self.resources.get(id(resource), (None, None))
        if made is not resource:  # not a resource the build made (a changed copy): written as it is
            return None
        alarm = self.made.get(id(request))
        if alarm is None or alarm.request is not request:
            return None
        pieces = self._pieces(alarm)
        return None if pieces is None else joined_by(pieces[1], alarm.made[1].name.encode())

    def _pieces(self, alarm) -> _AlarmPieces | None:
        if alarm.made is None:
            return None
        maker, cluster, request = alarm.made
        if alarm.request is not request:  # not the request its maker made (a changed copy): written as it is
            return None
        kind = self.kinds(cluster)
        if kind is None:
            return None
        key = (maker, kind)
        pieces = self.references.get(key, False)
        if pieces is False:
            pieces = self.references[key] = _alarm_pieces(maker, cluster, cluster.prometheus_label is not None)
        return pieces


class ClusterKinds:
    """A cluster as the texts made for it are alike in (its values with no name, and a label or none) and its name's
    length, by cluster (worked out once each); None for a name that is not a plain token. A kind is a tuple of plain
    values: a key holding it is hashed and compared without a call into Python (1,000 clusters' 12,000 alarms each
    look up their kind's texts several times)."""

    def __init__(self) -> None:
        self.kinds: dict[int, tuple[Any, ...] | None] = {}

    def __call__(self, cluster: Any) -> tuple[Any, ...] | None:
        kinds = self.kinds
        return kinds[id(cluster)] if id(cluster) in kinds else kinds.setdefault(id(cluster), self._kind(cluster))

    @staticmethod
    def _kind(cluster: Any) -> tuple[Any, ...] | None:
        from .render.cloudwatch import PLAIN_NAME

        if not PLAIN_NAME.fullmatch(cluster.name):
            return None
        label = None if cluster.prometheus_label is None else ""
        return (*("" if field.name == "name" else label if field.name == "prometheus_label" else
                  getattr(cluster, field.name) for field in fields(cluster)), len(cluster.name))


# Two stand-in names of a length (cut from these), with every kind of character a plain name holds, and two labels
ALARM_STAND_INS = ("Qz9_Xj-K" * 13, "Vw7-Kq_P" * 13)
LABEL_STAND_INS = ("gpudash-stand-in-label-a", "gpudash-stand-in-label-b")


# A request's texts split at its cluster's name (its alarms.json entry, its template resource) and the resource's
# nested_json_size_bound at its depth
_AlarmPieces = tuple[list[bytes], list[bytes], int]


def _alarm_pieces(maker: Any, cluster: Any, labelled: bool) -> _AlarmPieces | None:
    """The texts of the request `maker` makes in the clusters alike `cluster`, split at their name (AlarmTexts)."""
    from .render.alarms import made_request
    from .render.cloudformation import RESOURCE_DEPTH, alarm_resource

    splits = []
    for stand_in, label in zip(ALARM_STAND_INS, LABEL_STAND_INS):
        name = stand_in[:len(cluster.name)]
        try:
            request = made_request(maker, replace(cluster, name=name, prometheus_label=label if labelled else None))
        except Exception:  # noqa: BLE001 - refused with a name it never has: each cluster's is written whole
            return None
        value = name.encode()
        resource = alarm_resource(request)
        splits.append((_nested(to_json({"Region": cluster.region, "Request": request})).split(value),
                       _nested(to_json(resource)).split(value), nested_json_size_bound(resource, RESOURCE_DEPTH)))
    return splits[0] if splits[0] == splits[1] else None


def _nested(text: bytes) -> bytes:
    """A JSON file's text (`to_json`) as the value of an item two levels in (a list's item under a key, a key's value
    under a key): each line after the first indented four spaces further, without the last line break (no string
    holds a line break: JSON escapes it)."""
    return text[:-1].replace(b"\n", b"\n    ")


def joined_by(pieces: list[bytes], value: bytes) -> list[bytes]:
    """`value.join(pieces)`, as the pieces to be joined: each of `pieces` with `value` between each two."""
    if not pieces:
        return []
    out = [value] * (2 * len(pieces) - 1)
    out[::2] = pieces
    return out
