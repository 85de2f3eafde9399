from tests.e2e.support import daemon, km, short_dir  # noqa: F401  (fixtures)
