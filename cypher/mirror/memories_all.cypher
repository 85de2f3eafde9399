// The ranking metadata of every memory, as one row of parallel lists (see keymem/memory/mirror.py).
MATCH (m:Memory)
RETURN collect(m.id) AS ids, collect(m.namespace) AS namespaces, collect(m.active) AS active,
       collect(coalesce(m.expires_at, -1.0)) AS expires, collect(m.depth) AS depths,
       collect(m.last_confirmed_at) AS confirmed, collect(m.created_at) AS created,
       collect(m.decay_profile) AS profiles, collect(m.confirmation_count) AS confirmations
