MATCH (m:Memory) WHERE ($any_ns OR m.namespace = $namespace) AND (m.expires_at IS NULL OR m.expires_at > $now)
RETURN m.id AS id ORDER BY m.updated_at DESC, m.id LIMIT $limit
