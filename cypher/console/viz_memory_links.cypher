MATCH (k:Key)-[l:LINKS]->(m:Memory) WHERE m.id IN $ids
RETURN k.id AS key_id, m.id AS memory_id, l.weight AS weight
