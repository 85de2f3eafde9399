// The links of one memory (refresh after a commit; a handful of ids).
MATCH (k:Key)-[l:LINKS]->(m:Memory) WHERE m.id = $id
RETURN k.id AS key_id, l.weight AS weight
