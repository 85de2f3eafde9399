// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// Every memory (active or superseded) hangs off at least one key.
MATCH (m:Memory) WHERE NOT EXISTS { MATCH (:Key)-[:LINKS]->(m) } RETURN m.id AS id
