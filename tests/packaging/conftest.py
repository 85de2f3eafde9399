"""Fixtures of the end-to-end tests, for the plugin tests."""

from tests.e2e.support import km, short_dir  # noqa: F401  (fixtures)
