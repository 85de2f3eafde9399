"""Derived in-memory indexes rebuilt from the store at open: BM25 (lexical), the graph mirror, the walk's neighbourhood."""
