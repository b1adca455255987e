"""Reads the generated CloudWatch dashboards back: each metric widget, the panel it was made from."""

from __future__ import annotations

import json
import re

from generator.render.cloudwatch import panel_title


def widgets(files):
    """(path, properties) of every metric widget in the generated dashboards, in path order."""
    for path, data in sorted(files.items()):
        if path.startswith("cloudwatch/dashboards/"):
            for widget in json.loads(json.loads(data)["DashboardBody"])["widgets"]:
                if widget["type"] == "metric":
                    yield path, widget["properties"]


def panel(project, path, title, cluster):
    """The one panel of the widget titled `title` (the panel's title, or the widget's that says which lines it
    draws: render.cloudwatch.widget_title) on the dashboard that `path` (gpudash-<cluster>-<id>.json) holds."""
    dashboard_id = path.rsplit("/", 1)[1].removeprefix(f"gpudash-{cluster}-").removesuffix(".json")
    (found,) = [p for d in project.cloudwatch_definitions() if d.id == dashboard_id for p in d.panels()
                if p.title == panel_title(title)]
    return found


def close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def assert_shows(shown: dict, expected: dict, title: str) -> None:
    """A widget's lines ({label: {period start: value}}) are the truth's: the same lines and periods, each value
    close to the truth's."""
    assert set(shown) == set(expected), title
    for label, series in expected.items():
        assert set(shown[label]) == set(series), (title, label)
        wrong = {t: (shown[label][t], v) for t, v in series.items() if not close(shown[label][t], v)}
        assert not wrong, (title, label, wrong)


def header(files, path: str) -> str:
    """The markdown of the dashboard's header (its first widget)."""
    return json.loads(json.loads(files[path])["DashboardBody"])["widgets"][0]["properties"]["markdown"]


def notes(text: str) -> dict[str, set[str]]:
    """{panel title: notes} from a header's "On CloudWatch: <titles>: <note>; ..." paragraph."""
    if "\n\nOn CloudWatch: " not in text:
        return {}
    paragraph = text.split("\n\nOn CloudWatch: ", 1)[1].split("\n\n", 1)[0].removesuffix(".")
    result: dict[str, set[str]] = {}
    for group in paragraph.split("; "):
        titles, note = group.split(": ", 1)
        for title in titles.split(", "):
            result.setdefault(title, set()).add(note)
    return result


def said(text: str, title: str, note: str) -> bool:
    """The header `text` says `note` (its start) of the panel `title`."""
    return any(n.startswith(note) for n in notes(text).get(title, ()))


def kept(text: str) -> dict[str, str]:
    """{chart title: which lines it draws} from a header's "Lines drawn: ...: "<title>", "<title>": <note>; ..."
    paragraph (the charts of one line per pod or GPU, cut at their query's LIMIT)."""
    if "\n\nLines drawn: " not in text:
        return {}
    paragraph = text.split("\n\nLines drawn: ", 1)[1].split("\n\n", 1)[0]
    listed = paragraph.split(" draws every one: ", 1)[1].rsplit(". A cluster of more", 1)[0]
    result = {}
    for group in listed.split("; "):
        titles, note = group.rsplit('": ', 1)
        for title in re.findall(r'"([^"]*)"', titles + '"'):
            result[title] = note
    return result


def widgets_read(files) -> frozenset:
    """What the build's metric widgets read (cloudwatch_eval.reads): an agent model's `only` for latest_values."""
    from tests.support import cloudwatch_eval

    return cloudwatch_eval.reads(*(properties for _, properties in widgets(files)))


def latest_values(files, points, end: int) -> dict[str, dict[str, float]]:
    """Per widget title, each line's latest value over [0, end] of `points` (tests.support.agent_points)."""
    from tests.support import cloudwatch_eval

    values = {}
    for _, properties in widgets(files):
        lines = cloudwatch_eval.widget(properties, points, 0, end)
        values[panel_title(properties["title"])] = {label: series[max(series)] for label, series in lines.items()}
    return values


def shown_through_agent(folder, pipeline: str, dashboards: str, dashboard: str, step: int, end: int):
    """(pipeline, each widget's lines' latest values, the header of cloudwatch/dashboards/gpudash-gpu-cluster-
    `dashboard`.json) of a project of `dashboards` on agent.pipeline `pipeline`, the mixed fleet through its agent
    model scraped every `step` seconds until `end`."""
    from generator.artifacts import build
    from generator.output import encode
    from tests.support.agent_points import through_agent
    from tests.support.projects import defined_project

    files = encode(build(defined_project(folder, f"agent:\n  pipeline: {pipeline}\n", dashboards=dashboards)))
    values = latest_values(files, through_agent(files, step, end, only=widgets_read(files)), end)
    return pipeline, values, header(files, f"cloudwatch/dashboards/gpudash-gpu-cluster-{dashboard}.json")
