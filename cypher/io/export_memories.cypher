// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// Expired memories are invisible already (the sweep deletes them): they are not exported.
MATCH (m:Memory) WHERE ($any_ns OR m.namespace = $namespace) AND (m.expires_at IS NULL OR m.expires_at > $now)
RETURN m.id AS id, m.namespace AS namespace, m.content AS content, m.active AS active,
       m.created_at AS created_at, m.updated_at AS updated_at, m.last_confirmed_at AS last_confirmed_at,
       m.last_access_at AS last_access_at, m.access_count AS access_count,
       m.confirmation_count AS confirmation_count, m.depth AS depth, m.decay_profile AS decay_profile,
       m.ttl_seconds AS ttl_seconds, m.expires_at AS expires_at, m.supersedes AS supersedes,
       m.superseded_by AS superseded_by, m.source AS source, m.evidence AS evidence,
       m.terms AS terms
ORDER BY m.namespace, m.created_at, m.id
