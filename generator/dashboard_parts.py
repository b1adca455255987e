"""Grafana dashboards cut into parts that each fit the sidecar ConfigMap client-side `kubectl apply` takes.

Client-side `kubectl apply` copies the whole object into its last-applied-configuration annotation, and the API server
refuses an object whose annotations pass 262,144 bytes (last_applied). A dashboard's ConfigMap carries the dashboard
whole (one key, the one file Grafana's sidecar writes for it): the panels a dashboard shows, their long PromQL and the
label names the settings give (a long cluster or node label is written in every selector) decide its size, and the
all-metrics dashboard has one panel per field of the user's counters CSV. So a dashboard whose ConfigMap would pass
PART_BYTES is cut, its panels in their order, into the fewest parts that each fit (a part that cannot be cut smaller, a
panel alone past it, is left whole: lint GF011 says so). Cuts fall at rows where they can (a row's panels stay
together), else between lines of panels, a part that begins inside a row beginning with a copy of that row; the parts
are of about equal size.

Each part is a dashboard of its own: the first keeps the dashboard's uid (its bookmarks, its links, its history in
Grafana and what gpudash owns), the others are `<uid>-2`, `<uid>-3`, ...; titles say "part i of n", and each part links
to the others with the time range and the variables kept. Queries, variables and panels are the dashboard's, as they
were: only which dashboard shows a panel differs. The parts go to every delivery path alike (the files, the sidecar
ConfigMaps, Grafana's API): a build names one set of dashboards, whichever is used, and verify, push and prune read the
same uids. A user applying the build with kubectl is never refused for a dashboard's size, and none has to change
settings or apply otherwise (--server-side) to get every panel."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Collection, Sequence

from .errors import InputError
from .last_applied import APPLY_LIMIT, encoded_bytes, last_applied_bytes
from .markers import KUBERNETES_CLUSTERS
from .names import DEFINITION_ID_LENGTH
from .serialize import canonical_json, to_json_and_line

# The most a part's ConfigMap counts (last_applied_bytes): the API server's limit less room for what others add to
# the object when they apply it (kustomize's commonLabels and commonAnnotations, Argo CD's tracking annotation, each
# counted once in the object and once in last-applied-configuration: a few hundred bytes). No more: every byte of
# room cuts dashboards that client-side kubectl apply takes whole (with 8 KB, a shared Prometheus' all-metrics
# dashboard at 254,610 bytes, 30 clusters and the default labels, was cut in two).
PART_ROOM = APPLY_LIMIT // 64  # 4,096 bytes
PART_BYTES = APPLY_LIMIT - PART_ROOM  # 258,048 bytes

# The characters of the ConfigMap's gpudash.io/clusters annotation (markers.kubernetes_publisher) the cut counts at
# least: settings files of one project split by clusters make the same dashboards (their pushes record each other's
# claims on them), and a cut that counted each file's own cluster names would cut one dashboard of theirs and not the
# other's near the limit. Split files whose cluster names take more (some 30 clusters of 16 characters) may still.
CLUSTERS_ROOM = 512

# What a cut costs (the parts' cuts are chosen fewest first, then the largest part smallest): none at a row, more
# inside a row between two lines of panels (the part after begins with a copy of the row), most inside a line
_AT_ROW, _AT_LINE, _IN_LINE = 0, 1, 3


def configmap_bytes(uid: str, model: dict[str, Any], folder_title: str, publisher: dict[str, str]) -> int:
    """The annotation bytes client-side kubectl apply writes for the sidecar ConfigMap carrying `model` (GF011's
    count): the ConfigMap as output.encode writes it."""
    return _measured(uid, model, folder_title, publisher)[1]


def _measured(uid: str, model: dict[str, Any], folder_title: str,
              publisher: dict[str, str]) -> tuple[tuple[bytes, bytes], int]:
    """`model`'s texts (its file and the text its ConfigMap carries: output.grafana_dashboard_texts) and
    configmap_bytes: the build writes the texts the cut measured."""
    from .render.grafana_files import configmap

    texts = to_json_and_line(model)
    return texts, last_applied_bytes(configmap(uid, texts[1].decode(), folder_title, publisher,
                                               part_said(model.get("title"))))


def part_said(title: Any) -> tuple[int, int] | None:
    """(k, n) where `title` is a part's as the cut titles it (", part k of n": _frame), else None."""
    said = re.search(r", part ([1-9][0-9]*) of ([1-9][0-9]*)$", title) if isinstance(title, str) else None
    return (int(said[1]), int(said[2])) if said is not None and int(said[1]) <= int(said[2]) else None


@dataclass(frozen=True)
class _Atom:
    """A panel of the dashboard, in the order the parts take them: a row (`row`, its nested panels dropped when it is
    collapsed: they are atoms of their own, `nested`), or a panel (`nested`: inside a collapsed row). `unit` is the
    place of the row it follows (None before the first row), `cut` what cutting before it costs, `size` the bytes it
    adds to the dashboard's text in a ConfigMap (its JSON and a comma, escaped as kubectl escapes it)."""
    panel: dict[str, Any]
    row: bool
    nested: bool
    unit: int | None
    cut: int
    size: int


def _size(panel: dict[str, Any]) -> int:
    """The bytes `panel` adds to a list of panels in the dashboard's text, as last-applied-configuration counts them:
    its JSON (escaped again as a string) and a comma."""
    return encoded_bytes(canonical_json(panel).decode()) - 2 + 1


def _atoms(panels: list[dict[str, Any]]) -> list[_Atom] | None:
    """The dashboard's panels as atoms, in their order (top to bottom, then left to right); None where a panel has no
    place on the grid (a model that is not laid out by gridPos is not cut)."""
    if not all(isinstance(p, dict) and isinstance(p.get("gridPos"), dict) for p in panels):
        return None
    top = sorted(panels, key=lambda p: (_number(p["gridPos"].get("y")), _number(p["gridPos"].get("x"))))
    atoms: list[_Atom] = []
    unit: int | None = None
    bottom = 0.0  # the lowest edge of the unit's panels so far
    for panel in top:
        if panel.get("type") == "row":
            nested = [p for p in panel.get("panels") or [] if isinstance(p, dict)]
            if not all(isinstance(p.get("gridPos"), dict) for p in nested):
                return None
            header = {**panel, "panels": []} if "panels" in panel else panel
            unit = len(atoms)
            atoms.append(_Atom(header, True, False, unit, _AT_ROW, _size(header)))
            bottom = 0.0
            for inner in sorted(nested, key=lambda p: (_number(p["gridPos"].get("y")), _number(p["gridPos"].get("x")))):
                bottom = _add(atoms, inner, unit, bottom, nested=True)
            continue
        bottom = _add(atoms, panel, unit, bottom, nested=False)
    return atoms


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _add(atoms: list[_Atom], panel: dict[str, Any], unit: int | None, bottom: float, nested: bool) -> float:
    """Appends `panel`'s atom; the lowest edge of the unit's panels with it. Cutting before it costs a cut inside a
    line where a panel before it in its unit reaches below its top, or where it is the first panel of its row (the
    part before would end with the row alone)."""
    place = panel["gridPos"]
    y = _number(place.get("y"))
    cut = _IN_LINE if y < bottom or (atoms and atoms[-1].row) else _AT_LINE
    atoms.append(_Atom(panel, False, nested, unit, cut, _size(panel)))
    return max(bottom, y + _number(place.get("h")))


def _joined(atoms: list[_Atom]) -> frozenset[int]:
    """Where no part may begin: between a panel that draws another's query result (Grafana's Dashboard data source,
    `-- Dashboard --`: a target's panelId) and that panel, which must be in the same dashboard, or it draws nothing."""
    place = {atom.panel.get("id"): number for number, atom in enumerate(atoms) if not atom.row}
    joined: set[int] = set()
    for number, atom in enumerate(atoms):
        targets = atom.panel.get("targets")
        for target in targets if isinstance(targets, list) and not atom.row else []:
            read = place.get(target.get("panelId")) if isinstance(target, dict) \
                and isinstance(target.get("panelId"), int) else None
            if read is not None:
                joined.update(range(min(number, read) + 1, max(number, read) + 1))
    return frozenset(joined)


def _costs(atoms: list[_Atom]):
    """costs(start, end): what cutting before atoms[start] costs, and the bytes of a part of atoms[start:end] (with
    the copy of the row one that begins inside a row begins with)."""
    sums = [0]
    for atom in atoms:
        sums.append(sums[-1] + atom.size)

    def costs(start: int, end: int) -> tuple[int, int]:
        first = atoms[start]
        copy = atoms[first.unit].size if not first.row and first.unit is not None else 0
        return (first.cut if start else 0), sums[end] - sums[start] + copy
    return costs


def _plan(atoms: list[_Atom], parts: int, room: int, joined: frozenset[int] = frozenset()) -> list[int] | None:
    """Where `parts` parts of `atoms` begin (each at least one atom and at most `room` bytes, with the copy of the row
    one that begins inside a row begins with, none at a place `joined`), their cuts the least costly, then their
    largest the smallest; None when no such parts are."""
    count = len(atoms)
    costs = _costs(atoms)

    # best[k][j]: (cost, largest, where the last part begins) of atoms[:j] in k parts
    best: list[dict[int, tuple[int, int, int]]] = [{0: (0, 0, 0)}]
    for k in range(1, parts + 1):
        row: dict[int, tuple[int, int, int]] = {}
        for end in range(k, count - (parts - k) + 1):
            for start, (cost, largest, _) in best[k - 1].items():
                if start >= end or start in joined:
                    continue
                cut, size = costs(start, end)
                if size > room:
                    continue
                candidate = (cost + cut, max(largest, size), start)
                if end not in row or candidate[:2] < row[end][:2]:
                    row[end] = candidate
        best.append(row)
    if count not in best[parts]:
        return None
    starts, end = [], count
    for k in range(parts, 0, -1):
        start = best[k][end][2]
        starts.append(start)
        end = start
    return starts[::-1]


def part_uid(uid: str, number: int, uid_prefix: str) -> str:
    """The uid of a dashboard's part `number` (from 2): `<uid>-<number>`, cut short so that it stays within Grafana's
    40 characters and, for a uid gpudash makes (`<uid_prefix>-<definition id>`), so that what follows the prefix stays
    a definition id (names.DEFINITION_ID, 31 characters): a part is then gpudash's to prune as the dashboard is
    (names.is_grafana_uid). Never the uid itself: one at its most characters that ends in the suffix already
    (`gpudash-<29 characters>-2`) is cut a character more."""
    suffix = f"-{number}"
    head = f"{uid_prefix}-"

    def made(room: int) -> str:
        kept = uid
        if uid.startswith(head) and len(uid) > len(head):
            kept = head + uid[len(head):][:DEFINITION_ID_LENGTH - room].rstrip("-")
        return kept[:40 - room].rstrip("-") + suffix

    part = made(len(suffix))
    return part if part != uid else made(len(suffix) + 1)


def part_counts(defined: Sequence[str], uids: Collection[str], uid_prefix: str) -> dict[str, int]:
    """{uid: how many dashboards it is cut into (1: whole)} of each dashboard `defined` (its uid before the cut) of a
    build whose dashboards' uids are `uids`."""
    counts = {}
    for uid in defined:
        count = 1
        while part_uid(uid, count + 1, uid_prefix) in uids:
            count += 1
        counts[uid] = count
    return counts


def part_no_longer_made(uid: str, counts: dict[str, int], uid_prefix: str) -> tuple[str, int] | None:
    """(the dashboard, the part number) where `uid` is the uid a part of one of the dashboards `counts` (part_counts)
    takes beyond the parts it is cut into now (`<uid>-3` of a dashboard now in two parts, `<uid>-2` of one now whole);
    None where it is none (the caller leaves out the uids the build makes: a dashboard whose id ends in a number)."""
    number = re.fullmatch(r".+-([2-9]|[1-9][0-9]{1,2})", uid)
    if number is None:
        return None
    for dashboard, count in counts.items():
        if int(number[1]) > count and dashboard != uid and part_uid(dashboard, int(number[1]), uid_prefix) == uid:
            return dashboard, int(number[1])
    return None


def _link(title: str, uid: str) -> dict[str, Any]:
    """A link to another part (a path, which Grafana puts its sub-path before), with the time range and variables."""
    return {"asDropdown": False, "icon": "dashboard", "includeVars": True, "keepTime": True, "tags": [],
            "targetBlank": False, "title": title, "tooltip": "", "type": "link", "url": f"/d/{uid}"}


def _frame(model: dict[str, Any], number: int, uids: list[str]) -> dict[str, Any]:
    """Part `number` (from 0) of `model` without panels: its uid, title, description and links to the other parts."""
    parts = len(uids)
    titles = [f"{model.get('title', '')}, part {each} of {parts}" for each in range(1, parts + 1)]
    others = [_link(titles[other], uids[other]) for other in range(parts) if other != number]
    description = str(model.get("description") or "").strip()
    said = (f"Part {number + 1} of {parts}: the dashboard's panels are cut into {parts} dashboards (linked above), "
            "each small enough for the ConfigMap client-side kubectl apply takes.")
    return {**model, "uid": uids[number], "title": titles[number], "panels": [],
            "links": [*(model.get("links") or []), *others], "description": f"{description} {said}".strip()}


def _models(model: dict[str, Any], atoms: list[_Atom], starts: list[int], uids: list[str]) -> list[dict[str, Any]]:
    """The parts' models: atoms[starts[i]:starts[i + 1]] each, moved to the top, in _frame."""
    models = []
    for number, (start, end) in enumerate(zip(starts, starts[1:] + [len(atoms)])):
        chosen = atoms[start:end]
        first = chosen[0]
        top: list[dict[str, Any]] = []
        if not first.row and first.unit is not None:  # a part that begins inside a row: a copy of it first
            header = _moved(atoms[first.unit].panel, 0)
            if not first.nested:
                lowest = min(_number(a.panel["gridPos"].get("y")) for a in chosen if not a.nested)
                header["gridPos"]["y"] = _whole(lowest - (_number(header["gridPos"].get("h")) or 1))
            top.append(header)
        for atom in chosen:
            if atom.nested:
                top[-1]["panels"].append(atom.panel)
            else:
                top.append(_moved(atom.panel, 0) if atom.row else atom.panel)
        offset = min(_number(p["gridPos"].get("y")) for p in top)
        models.append({**_frame(model, number, uids), "panels": [_moved(panel, offset) for panel in top]})
    return models


def _moved(panel: dict[str, Any], offset: float) -> dict[str, Any]:
    """A copy of `panel` `offset` grid units higher (a collapsed row's nested panels with it)."""
    place = panel["gridPos"]
    moved = {**panel, "gridPos": {**place, "y": _whole(_number(place.get("y")) - offset)}}
    if panel.get("type") == "row" and "panels" in panel:
        moved["panels"] = [_moved(inner, offset) for inner in panel["panels"]]
    return moved


def _whole(value: float) -> int | float:
    return int(value) if value == int(value) else value


def cut(dashboards: Sequence[Any], folder_title: str, publisher: dict[str, str], uid_prefix: str) -> list[Any]:
    """`dashboards` (artifacts.GrafanaDashboard: uid, title, model), each whose ConfigMap passes PART_BYTES replaced
    by its parts (part_uid). Refused where a part's uid is another dashboard's."""
    taken = {dashboard.uid: dashboard for dashboard in dashboards}
    result: list[Any] = []
    for dashboard in dashboards:
        models, texts = _parts(dashboard.uid, dashboard.model, folder_title, publisher, uid_prefix)
        for number, model in enumerate(models[1:], start=2):
            # another dashboard's uid, or a part of another whose uid part_uid cut to the same (two long ids that
            # begin alike): the build would write one dashboard, file and ConfigMap for two
            if (other := taken.get(model["uid"])) is not None:
                raise InputError(
                    f"the Grafana dashboard {dashboard.uid!r} does not fit one ConfigMap applied with client-side "
                    f"kubectl apply and is cut into {len(models)} dashboards, whose part {number} takes the uid "
                    f"{model['uid']!r} of another dashboard (defined at {other.source})", where=dashboard.source,
                    hint="give that other dashboard another id or uid (a shorter id where two long ids begin alike)")
            taken[model["uid"]] = dashboard
        result += [replace(dashboard, texts=_held(dashboard.model, texts[0]))] if len(models) == 1 else \
            [replace(dashboard, uid=model["uid"], title=model["title"], model=model, texts=_held(model, each))
             for model, each in zip(models, texts)]
    return result


def parts(uid: str, model: dict[str, Any], folder_title: str, publisher: dict[str, str],
          uid_prefix: str) -> list[dict[str, Any]]:
    """`model` alone where its ConfigMap fits PART_BYTES (or it cannot be cut so that each part fits), else the models
    of its parts (the first of `uid`). Counted with the clusters annotation at CLUSTERS_ROOM characters at least
    (_counted): each part fits with its own, and settings files of a project split by clusters cut alike."""
    return _parts(uid, model, folder_title, publisher, uid_prefix)[0]


def _held(model: dict[str, Any], texts: tuple[bytes, bytes] | None) -> tuple[dict[str, Any], bytes, bytes] | None:
    """GrafanaDashboard.texts: `texts` with the model they were measured from."""
    return None if texts is None else (model, *texts)


def _parts(uid: str, model: dict[str, Any], folder_title: str, publisher: dict[str, str],
           uid_prefix: str) -> tuple[list[dict[str, Any]], list[tuple[bytes, bytes] | None]]:
    """`parts`, and the texts of each model given (_measured) where the cut measured them (None where not)."""
    publisher = _counted(publisher)
    texts, size = _measured(uid, model, folder_title, publisher)
    whole = [model], [texts]
    if size <= PART_BYTES:
        return whole
    panels = model.get("panels")
    atoms = _atoms(panels) if isinstance(panels, list) else None
    if not atoms or len(atoms) < 2:
        return whole
    total = sum(atom.size for atom in atoms)
    joined = _joined(atoms)
    # the pieces no part is cut inside (an atom, or panels that read one another's data and those between them)
    free = [start for start in range(len(atoms)) if start not in joined]
    pieces = list(zip(free, free[1:] + [len(atoms)]))
    costs = _costs(atoms)
    for count in range(2, len(atoms) + 1):
        uids = [uid] + [part_uid(uid, number, uid_prefix) for number in range(2, count + 1)]
        # what a part holds besides its panels (the last part's: the longest uid and title), counted exactly
        room = PART_BYTES - configmap_bytes(uids[-1], _frame(model, count - 1, uids), folder_title, publisher) + 1
        if total > room * count:
            continue
        if max(costs(start, end)[1] for start, end in pieces) > room:
            return whole  # a panel alone (or panels kept together) does not fit a part: no cut makes every part fit
        starts = _plan(atoms, count, room, joined)
        if starts is None:
            continue
        models = _models(model, atoms, starts, uids)
        measured = []
        for each in models:
            each_texts, each_size = _measured(each["uid"], each, folder_title, publisher)
            if each_size > PART_BYTES:
                break
            measured.append(each_texts)
        else:
            return models, measured
    return whole


def _counted(publisher: dict[str, str]) -> dict[str, str]:
    """`publisher` as the cut counts it: its clusters annotation (cluster names, a byte each in the ConfigMap and in
    last-applied-configuration) made up to CLUSTERS_ROOM characters where it is shorter."""
    clusters = publisher.get(KUBERNETES_CLUSTERS)
    if clusters is None or len(clusters) >= CLUSTERS_ROOM:
        return publisher
    return {**publisher, KUBERNETES_CLUSTERS: clusters.ljust(CLUSTERS_ROOM, "x")}
