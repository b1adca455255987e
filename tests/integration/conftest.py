"""Fixtures of the integration tests that several modules share."""

from tests.support.cloudwatch_world import aws, built_once, moto, project_dir, proxied  # noqa: F401  (fixtures)
