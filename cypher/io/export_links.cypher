// keymem: heavy (a whole-table read: it runs alone, see Store._read)
MATCH (k:Key)-[l:LINKS]->(m:Memory) WHERE $any_ns OR m.namespace = $namespace
RETURN k.id AS key_id, m.id AS memory_id, l.weight AS weight, l.created_at AS created_at
ORDER BY key_id, memory_id
