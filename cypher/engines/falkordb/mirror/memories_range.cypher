// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: pages by internal node id (shared by every label, and reused after a delete: the ids
// are used within one load that holds this process's writer, never kept).
// One page of memories by internal node id, [$lo, $hi): ranking metadata as parallel lists.
// Offset ranges instead of `id > $after ORDER BY id LIMIT n`: that sorts the rest of the table for
// every page (11 s for the 50 pages of 1M memories, against 3.5 s by offset).
MATCH (m:Memory) WHERE id(m) >= $lo AND id(m) < $hi
RETURN collect(id(m)) AS offsets, collect(m.id) AS ids, collect(m.namespace) AS namespaces,
       collect(m.active) AS active, collect(coalesce(m.expires_at, -1.0)) AS expires,
       collect(m.depth) AS depths, collect(m.last_confirmed_at) AS confirmed,
       collect(m.created_at) AS created, collect(m.decay_profile) AS profiles,
       collect(m.confirmation_count) AS confirmations
