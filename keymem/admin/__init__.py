"""Tooling over a whole store: export and import (io), the invariant checker (invariants)."""
