MATCH (k:Key) WHERE k.id IN $ids AND NOT EXISTS { MATCH (k)-[:LINKS]->(:Memory) } RETURN k.id AS id, k.namespace AS namespace
