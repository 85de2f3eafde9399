// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// Each LINKS edge's copy of its memory's active flag and expiry (schema step 003) equals the memory.
MATCH (k:Key)-[l:LINKS]->(m:Memory)
WHERE l.m_active IS NULL OR l.m_active <> m.active OR coalesce(l.m_expires_at, -1.0) <> coalesce(m.expires_at, -1.0)
RETURN k.id AS key_id, m.id AS memory_id
