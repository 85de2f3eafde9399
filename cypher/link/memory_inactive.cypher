// A memory was superseded (memory/supersede): its links' copy of the active flag follows, and its
// keys stop counting it among their lasting links.
MATCH (k:Key)-[l:LINKS]->(m:Memory) WHERE m.id = $id AND l.m_active
SET l.m_active = false,
    k.lasting_links = k.lasting_links - CASE WHEN l.m_expires_at IS NULL THEN 1 ELSE 0 END
