MATCH (s:Memory)<-[:LINKS]-(k:Key)-[:LINKS]->(m:Memory)
WHERE s.id IN $frontier AND m.active AND (m.expires_at IS NULL OR m.expires_at > $now)
RETURN k.id AS key_id, count(DISTINCT m) AS n
