MATCH (m:Memory) WHERE m.active AND (m.expires_at IS NULL OR m.expires_at > $now)
OPTIONAL MATCH (k:Key)-[:LINKS]->(m)
RETURN m.id AS id, m.namespace AS namespace, m.content AS content, collect(k.text) AS keys
