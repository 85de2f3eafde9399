// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: a pattern predicate for the EXISTS { } subquery.
// Every memory (active or superseded) hangs off at least one key.
MATCH (m:Memory) WHERE NOT (:Key)-[:LINKS]->(m) RETURN m.id AS id
