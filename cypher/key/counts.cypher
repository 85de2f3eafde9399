MATCH (k:Key)-[:LINKS]->(m:Memory)
WHERE k.id IN $ids AND m.active AND (m.expires_at IS NULL OR m.expires_at > $now)
RETURN k.id AS id, count(m) AS n
