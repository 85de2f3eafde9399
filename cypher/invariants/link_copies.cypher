// Each LINKS edge's copies of its ends (schema step 003) equal the ends.
MATCH (k:Key)-[l:LINKS]->(m:Memory)
WHERE l.k_id IS NULL OR l.m_id IS NULL OR l.k_id <> k.id OR l.m_id <> m.id OR l.m_active IS NULL
   OR l.m_active <> m.active OR coalesce(l.m_expires_at, -1.0) <> coalesce(m.expires_at, -1.0)
RETURN k.id AS key_id, m.id AS memory_id
