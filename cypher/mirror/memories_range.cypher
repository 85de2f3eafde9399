// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// One page of memories by internal node offset, [$lo, $hi): ranking metadata as parallel lists.
// Offset ranges instead of `id > $after ORDER BY id LIMIT n`: that sorts the rest of the table for
// every page (11 s for the 50 pages of 1M memories, against 3.5 s by offset).
MATCH (m:Memory) WHERE offset(id(m)) >= $lo AND offset(id(m)) < $hi
RETURN collect(offset(id(m))) AS offsets, collect(m.id) AS ids, collect(m.namespace) AS namespaces,
       collect(m.active) AS active, collect(coalesce(m.expires_at, -1.0)) AS expires,
       collect(m.depth) AS depths, collect(m.last_confirmed_at) AS confirmed,
       collect(m.created_at) AS created, collect(m.decay_profile) AS profiles,
       collect(m.confirmation_count) AS confirmations
