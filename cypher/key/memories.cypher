MATCH (k:Key)-[l:LINKS]->(m:Memory)
WHERE k.id = $key_id AND m.active AND (m.expires_at IS NULL OR m.expires_at > $now)
RETURN m, l.weight AS weight
