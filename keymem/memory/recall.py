"""Routing a query to keys: by its embedding (concept keys) and its literal words (names, aliases).

Shared by every recall path (``associative.rank`` routes, ``deliver.recall`` lists the routed
keys). A name of several words is also found by one capitalised word of it ("Dorian" for the
key "Dorian Achebe"), since people are asked about by first name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from keymem.index.bm25 import capped
from keymem.memory.keys import keys_by_names
from keymem.memory.names import name_id

if TYPE_CHECKING:
    from keymem.memory.parts import Parts
    from keymem.memory.query import Query

LITERAL = "literal_match"
COSINE = "key_cosine"
LEXICAL = "content_relevance"


def named_keys(graph: Parts, query: Query, namespace: str) -> list[str]:
    """Keys the query names literally (names, aliases, any key text among its word n-grams), and
    names of several words the query gives part of ("Dorian" for the key "Dorian Achebe"), and the
    keys an acronym or numeronym of the query abbreviates ("QBR", "k8s")."""
    found = [key["id"] for key in keys_by_names(graph, graph.store.query,
                                                sorted(name_id(namespace, t) for t in query.literal)).values()]
    found += [k for k in graph.mirror.name_part_keys(namespace, query.capitals) if k not in found]
    for form in query.short_forms:  # "QBR" -> "quarterly business review", "k8s" -> "Kubernetes"
        found += [k for k in graph.mirror.form_keys(namespace, form) if k not in found]
    return found


def route_keys(graph: Parts, qvec: np.ndarray, named: list[str], namespace: str,
               limit: int) -> dict[str, tuple[float, str]]:
    """Key id -> (relevance, score kind): concept keys by cosine, the ``named_keys`` literally."""
    found: dict[str, tuple[float, str]] = {}
    threshold = graph.thresholds.key_recall
    for key_id, cos in graph.vectors.search(qvec, namespace, max(limit * 3, 10), min_score=threshold):
        found[key_id] = (cos, COSINE)
    for key_id in named:
        found[key_id] = (1.0, LITERAL)
    return found


def lexical_keys(graph: Parts, query: Query, namespace: str) -> dict[str, tuple[float, str]]:
    """When no key routes, the keys of the best lexical memories for the caller's own query (capped
    BM25 as relevance)."""
    hits = graph.lexical.search_stems(query.own_stems, 3, namespace)
    found: dict[str, tuple[float, str]] = {}
    if not hits:
        return found
    for mid, score in hits:
        rel = capped(score)
        for key_id, _ in graph.mirror.memory_keys(mid):
            if rel > found.get(key_id, (0.0, ""))[0]:
                found[key_id] = (rel, LEXICAL)
    return found
