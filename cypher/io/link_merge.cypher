// Idempotent: an existing link keeps its weight. A new one carries a copy of the memory's active flag
// and expiry, and the key counts it among its lasting links (schema step 003); the memory is written
// before its links.
MATCH (k:Key), (m:Memory) WHERE k.id = $key_id AND m.id = $memory_id
MERGE (k)-[l:LINKS]->(m) ON CREATE SET l.weight = $weight, l.created_at = $created_at, l.m_active = m.active,
  l.m_expires_at = m.expires_at,
  k.lasting_links = k.lasting_links + CASE WHEN m.active AND m.expires_at IS NULL THEN 1 ELSE 0 END
