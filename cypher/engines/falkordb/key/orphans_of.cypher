// FalkorDB: the keys among $ids left without a link (a pattern predicate: no EXISTS { } subquery here).
MATCH (k:Key) WHERE k.id IN $ids AND NOT (k)-[:LINKS]->(:Memory) RETURN k.id AS id, k.namespace AS namespace
