// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// Up to $limit links whose copy of their memory's active flag and expiry (schema step 003) is missing
// or differs, set from the memory: the fill after schema step 003, and after console writes, which
// bypass the write path.
MATCH (:Key)-[l:LINKS]->(m:Memory)
WHERE l.m_active IS NULL OR l.m_active <> m.active OR coalesce(l.m_expires_at, -1.0) <> coalesce(m.expires_at, -1.0)
WITH l, m LIMIT $limit
SET l.m_active = m.active, l.m_expires_at = m.expires_at
RETURN count(l) AS n
