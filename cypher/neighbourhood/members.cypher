// The visible memories (active, not expired at $now) of keys given by internal offset, leaving out
// keys with more than $fanout lasting links (schema step 003) without reading their links: a scan of
// Key's offsets and counts, a filter and one extend over the rel's copies of the memory's fields.
// (Without the count, a frontier's hub keys cost ~40-100 ms at 100k memories.)
MATCH (k:Key)-[l:LINKS]->(m:Memory)
WHERE offset(id(k)) IN $keys AND k.lasting_links <= $fanout
  AND l.m_active AND (l.m_expires_at IS NULL OR l.m_expires_at > $now)
RETURN offset(id(k)) AS k, offset(id(m)) AS m, l.weight AS weight
