"""The unit tests' fixtures."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="module")
def catalogs_shared_per_csv():
    """Every project a unit test module loads from a counters CSV loaded before gets the catalog equal to it by value
    (tests/support/projects.catalogs_shared): promql.expression's answers, kept per catalog object, carry from one
    project to the next as they do between one build's dashboards (a module here builds tens of projects of different
    settings over the bundled CSV). Each module starts from catalogs of its own, whatever modules ran before it in
    this process, and the sharing is undone at its end: no other test module's projects are changed."""
    from tests.support.projects import _CATALOGS, catalogs_shared

    _CATALOGS.clear()
    with pytest.MonkeyPatch.context() as patched:
        catalogs_shared(patched)
        yield
