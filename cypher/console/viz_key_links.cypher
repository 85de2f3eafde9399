MATCH (k:Key)-[l:LINKS]->(m:Memory)
WHERE k.id IN $ids AND (m.expires_at IS NULL OR m.expires_at > $now)
RETURN k.id AS key_id, m.id AS memory_id, l.weight AS weight
