// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: a pattern predicate for the EXISTS { } subquery.
// A key left with no memory is deleted with its last memory.
MATCH (k:Key) WHERE NOT (k)-[:LINKS]->(:Memory) RETURN k.id AS id
