MATCH (m:Memory) WHERE m.namespace = $namespace AND m.active AND (m.expires_at IS NULL OR m.expires_at > $now) RETURN count(m) AS n
