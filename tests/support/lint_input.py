"""A lint input for rule tests: a project's artifact set, with some of its artifacts replaced."""

from __future__ import annotations

from dataclasses import replace

from generator.artifacts import Artifacts, build
from generator.lint.subject import LintInput


def lint_input(project, artifacts: Artifacts | None = None, grafana_schema=None, **replaced) -> LintInput:
    """`project`'s artifact set (or `artifacts`) with the fields in `replaced` swapped in (e.g. alarms=...)."""
    artifacts = artifacts or build(project)
    return LintInput(replace(artifacts, **replaced), project.settings, project.catalog, grafana_schema)
