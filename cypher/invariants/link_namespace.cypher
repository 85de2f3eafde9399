// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// A LINKS edge never crosses namespaces.
MATCH (k:Key)-[:LINKS]->(m:Memory) WHERE k.namespace <> m.namespace RETURN k.id AS key_id, m.id AS memory_id
