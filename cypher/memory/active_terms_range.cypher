// The visible memories' stored BM25 terms among node offsets [$lo, $hi), as one row of parallel
// lists (lexical index load; pages from Store.offset_ranges, so a large store fits the buffer pool).
MATCH (m:Memory) WHERE offset(id(m)) >= $lo AND offset(id(m)) < $hi
  AND m.active AND (m.expires_at IS NULL OR m.expires_at > $now)
RETURN collect(m.id) AS ids, collect(m.namespace) AS namespaces, collect(coalesce(m.terms, '')) AS terms,
       collect(m.terms IS NULL) AS missing
