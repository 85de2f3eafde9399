MATCH (m:Memory) WHERE m.expires_at IS NOT NULL AND m.expires_at <= $now RETURN m.id AS id, m.namespace AS namespace
