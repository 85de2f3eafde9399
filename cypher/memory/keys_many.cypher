MATCH (k:Key)-[l:LINKS]->(m:Memory) WHERE m.id IN $ids
RETURN m.id AS memory_id, k.id AS key_id, k.text AS key, l.weight AS weight
