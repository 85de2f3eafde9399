CREATE (:Memory {id: $id, namespace: $namespace, content: $content, norm: $norm, active: true,
created_at: $now, updated_at: $now, last_confirmed_at: $now, last_access_at: NULL, access_count: 0,
confirmation_count: 0, depth: $depth, decay_profile: $decay_profile, ttl_seconds: $ttl_seconds,
expires_at: $expires_at, supersedes: $supersedes, superseded_by: NULL, source: $source, evidence: NULL,
terms: $terms, has_related: false})
