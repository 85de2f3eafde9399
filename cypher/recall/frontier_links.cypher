// The keys of the expansion frontier, with each key's number of active memories (its fan-out).
MATCH (k:Key)-[l:LINKS]->(s:Memory)
WHERE s.id IN $frontier
WITH s, k, l
MATCH (k)-[:LINKS]->(m:Memory)
WHERE m.active AND (m.expires_at IS NULL OR m.expires_at > $now)
RETURN s.id AS src, k.id AS key_id, l.weight AS weight, count(m) AS n
