// One page of every memory's ranking metadata (ids after $after, in id order), as one row of
// parallel lists. Paged: one collect over a whole large store would not fit Kuzu's buffer pool.
MATCH (m:Memory) WHERE m.id > $after
WITH m ORDER BY m.id LIMIT $limit
RETURN collect(m.id) AS ids, collect(m.namespace) AS namespaces, collect(m.active) AS active,
       collect(coalesce(m.expires_at, -1.0)) AS expires, collect(m.depth) AS depths,
       collect(m.last_confirmed_at) AS confirmed, collect(m.created_at) AS created,
       collect(m.decay_profile) AS profiles, collect(m.confirmation_count) AS confirmations
