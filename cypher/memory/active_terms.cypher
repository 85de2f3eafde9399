// One page of the visible memories' stored BM25 terms (ids after $after, in id order), as one row
// of parallel lists (lexical index load). Paged so that a large store fits Kuzu's buffer pool.
MATCH (m:Memory) WHERE m.id > $after AND m.active AND (m.expires_at IS NULL OR m.expires_at > $now)
WITH m ORDER BY m.id LIMIT $limit
RETURN collect(m.id) AS ids, collect(m.namespace) AS namespaces, collect(coalesce(m.terms, '')) AS terms,
       collect(m.terms IS NULL) AS missing
