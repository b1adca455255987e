"""Fixtures of the integration tests that several modules share."""

from tests.support.cloudwatch_world import (  # noqa: F401  (fixtures)
    aws, built_once, moto, project_dir, proxied, published)
