CREATE (:Memory {id: $id, namespace: $namespace, content: $content, norm: $norm, active: $active,
  created_at: $created_at, updated_at: $updated_at, last_confirmed_at: $last_confirmed_at,
  last_access_at: $last_access_at, access_count: $access_count, confirmation_count: $confirmation_count,
  depth: $depth, decay_profile: $decay_profile, ttl_seconds: $ttl_seconds, expires_at: $expires_at,
  supersedes: $supersedes, superseded_by: $superseded_by, source: $source, evidence: $evidence, terms: $terms,
  has_related: false})
