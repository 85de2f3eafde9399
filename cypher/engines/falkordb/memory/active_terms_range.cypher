// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: pages by internal node id (shared by every label, and reused after a delete: the ids
// are used within one load that holds this process's writer, never kept).
// The visible memories' stored BM25 terms among node ids [$lo, $hi): one row per namespace,
// ids and terms as parallel lists (lexical index load; pages from Store.offset_ranges, so a large
// store fits the buffer pool; grouped so that a namespace is not returned once per memory).
MATCH (m:Memory) WHERE id(m) >= $lo AND id(m) < $hi
  AND m.active AND (m.expires_at IS NULL OR m.expires_at > $now)
RETURN m.namespace AS namespace, collect(m.id) AS ids, collect(coalesce(m.terms, '')) AS terms,
       collect(m.terms IS NULL) AS missing
