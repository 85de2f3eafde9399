// One new link. Both ends are matched by primary key (~0.4 ms at 100k); linking a memory's keys
// with one UNWIND statement was planned as a scan of Key (~3.8 ms per memory at 100k).
// The edge carries a copy of the memory's active flag and expiry, and the key counts its lasting
// links (schema step 003).
MATCH (k:Key), (m:Memory) WHERE k.id = $key_id AND m.id = $memory_id
CREATE (k)-[:LINKS {weight: $weight, created_at: $now, m_active: m.active, m_expires_at: m.expires_at}]->(m)
SET k.lasting_links = k.lasting_links + CASE WHEN m.active AND m.expires_at IS NULL THEN 1 ELSE 0 END
RETURN m.id AS memory_id
