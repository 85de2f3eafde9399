// Active memories per key, by primary-key lookups (cost follows the keys asked for).
UNWIND $ids AS i
MATCH (k:Key {id: i})-[:LINKS]->(m:Memory)
WHERE m.active AND (m.expires_at IS NULL OR m.expires_at > $now)
RETURN k.id AS id, count(m) AS n
