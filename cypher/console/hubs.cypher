// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// Keys by number of active, unexpired memories (hubs first).
MATCH (k:Key)-[:LINKS]->(m:Memory)
WHERE ($any_ns OR k.namespace = $namespace) AND m.active AND (m.expires_at IS NULL OR m.expires_at > $now)
RETURN k.id AS id, k.namespace AS namespace, k.text AS text, k.key_type AS key_type, count(m) AS n
ORDER BY n DESC, text LIMIT $limit
