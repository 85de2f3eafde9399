"""memory layer."""
