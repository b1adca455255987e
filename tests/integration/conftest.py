"""Fixtures of the integration tests that several modules share."""

import pytest

from tests.support.cloudwatch_world import (  # noqa: F401  (fixtures)
    aws, built_once, moto, project_dir, proxied, published)
from tests.support.prometheus_server import SPARES


@pytest.fixture(autouse=True, scope="session")
def prometheus_started_ahead():
    """Each test process keeps one Prometheus started ahead of need (prometheus_server.Spares): a test's server that
    scrapes takes it, and stores its first sample 2.6 s after it is asked for on average instead of 6.2 s. The spare
    left is stopped at the end."""
    SPARES.keep()
    yield
    SPARES.close()
