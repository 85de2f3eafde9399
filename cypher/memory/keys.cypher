MATCH (k:Key)-[l:LINKS]->(m:Memory) WHERE m.id = $id
RETURN k.id AS key_id, k.text AS key, k.key_type AS key_type, l.weight AS weight ORDER BY l.weight DESC, k.text
