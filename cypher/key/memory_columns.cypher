// Everything needed to rank a key's memories, as one row of parallel lists: a hub key has
// thousands of links, and one row of lists crosses into Python ~8x faster than a row each.
MATCH (k:Key)-[l:LINKS]->(m:Memory)
WHERE k.id = $key_id AND m.active AND (m.expires_at IS NULL OR m.expires_at > $now)
RETURN collect(m.id) AS ids, collect(l.weight) AS weights, collect(m.depth) AS depths,
       collect(m.last_confirmed_at) AS confirmed, collect(m.decay_profile) AS profiles,
       collect(m.created_at) AS created
