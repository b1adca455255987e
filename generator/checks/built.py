"""What several of verify's groups compare with the build, made once a run.

The kube group (the PrometheusRules' names) and the prometheus group (the alerts' conditions, the counters'
recordings) both read the build's Prometheus rule groups (artifacts.rule_groups, 20-60 ms of CPU): they run at once,
in one process, for the same project. The groups are kept for the last project asked about, by identity (a Project
and everything in it are frozen; the project is held, so its identity is not another's), and made once under a lock:
a second group asking while the first makes them waits for them.
"""

from __future__ import annotations

import threading
from typing import Any

from ..project import Project

_LOCK = threading.Lock()
_KEPT: list[tuple[Project, dict[str, Any]]] = []  # the last project asked about, and its rule groups


def rule_groups(project: Project) -> dict[str, Any]:
    """artifacts.rule_groups(project), made once for the last project asked about (read them, never change them)."""
    with _LOCK:
        if _KEPT and _KEPT[0][0] is project:
            return _KEPT[0][1]
        from ..artifacts import rule_groups as made

        groups = made(project)
        _KEPT[:] = [(project, groups)]
        return groups
