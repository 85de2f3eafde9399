"""keymem: associative memory for LLM agents (a key/memory graph in embedded Kuzu)."""

__version__ = "0.1.0"
