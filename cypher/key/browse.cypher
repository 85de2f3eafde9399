MATCH (k:Key)-[:LINKS]->(m:Memory)
WHERE k.namespace = $namespace AND m.active AND (m.expires_at IS NULL OR m.expires_at > $now)
WITH k, count(m) AS n
WHERE n >= $min_count
RETURN k, n ORDER BY n DESC, k.norm ASC SKIP $offset LIMIT $limit
