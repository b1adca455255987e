"""A user's panels of the last XID code per pod and per node (each line the largest of its GPUs' codes), for the tests
of the code a GPU reported last."""

from __future__ import annotations

from generator.artifacts import grafana_dashboards

XID = "DCGM_FI_DEV_XID_ERRORS"
GROUPED = f'''
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    panels = [Panel("XID code by pod", Query("{XID}", "max", ("pod",)), description="per pod", unit="state"),
              Panel("XID code by node", Query("{XID}", "max", ("node",)), description="per node", unit="state")]
    yield Dashboard(id="codes", title="Codes", rows=[Row("codes", panels)])
'''


def grouped_target(project, title: str) -> dict:
    """The graph's target of the panel `title` of GROUPED as `project` (GROUPED its dashboards) renders it."""
    (dashboard,) = [d for d in grafana_dashboards(project) if d.uid.endswith("-codes")]
    (panel,) = [p for p in dashboard.model["panels"] if p.get("title") == title]
    (target,) = [t for t in panel["targets"] if not t.get("instant")]
    return target
