// Stored BM25 terms of the visible memories, as one row of parallel lists (lexical index load).
MATCH (m:Memory) WHERE m.active AND (m.expires_at IS NULL OR m.expires_at > $now)
RETURN collect(m.id) AS ids, collect(m.namespace) AS namespaces, collect(coalesce(m.terms, '')) AS terms,
       collect(m.terms IS NULL) AS missing
