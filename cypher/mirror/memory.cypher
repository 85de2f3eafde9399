// Ranking metadata of one memory by primary key (refresh after a commit; a handful of ids).
MATCH (m:Memory) WHERE m.id = $id
RETURN m.id AS id, m.namespace AS namespace, m.active AS active, coalesce(m.expires_at, -1.0) AS expires,
       m.depth AS depth, m.last_confirmed_at AS confirmed, m.created_at AS created,
       m.decay_profile AS decay_profile, m.confirmation_count AS confirmations
