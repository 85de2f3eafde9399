// Re-derive the LINKS copies of their ends (schema step 003) where they differ: after console
// writes, which bypass the write path.
MATCH (k:Key)-[l:LINKS]->(m:Memory)
WHERE l.k_id IS NULL OR l.m_id IS NULL OR l.k_id <> k.id OR l.m_id <> m.id OR l.m_active IS NULL
   OR l.m_active <> m.active OR coalesce(l.m_expires_at, -1.0) <> coalesce(m.expires_at, -1.0)
SET l.k_id = k.id, l.m_id = m.id, l.m_active = m.active, l.m_expires_at = m.expires_at
RETURN count(l) AS n
