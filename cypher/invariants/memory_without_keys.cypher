// keymem: heavy (a whole-table read: admitted one at a time, see Store._read)
// Every memory (active or superseded) hangs off at least one key.
MATCH (m:Memory) WHERE NOT EXISTS { MATCH (:Key)-[:LINKS]->(m) } RETURN m.id AS id
