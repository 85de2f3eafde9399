// The association walk reads its neighbourhood hop by hop in Cypher (cypher/neighbourhood/). Kuzu
// 0.11.3 plans a match over a set of nodes as a scan of the node table; each hop is therefore
// a scan of internal ids filtered by offset and one extend, which stays cheap only if it reads
// nothing but the LINKS rel. So each LINKS edge carries copies of what the walk reads of its
// ends: the key's id (k_id) and the memory's id, active flag and expiry (m_id, m_active,
// m_expires_at). Ids never change; m_active and m_expires_at are kept in step by every write
// that creates a link or deactivates a memory (link/create, memory/link_keys, io/link_merge,
// link/memory_inactive), and `keymem check` compares them with the nodes.
ALTER TABLE LINKS ADD k_id STRING;
ALTER TABLE LINKS ADD m_id STRING;
ALTER TABLE LINKS ADD m_active BOOLEAN;
ALTER TABLE LINKS ADD m_expires_at DOUBLE;
// Links of the key to active memories without a TTL: a floor under the key's visible memories at
// any time, so a key above the walk's fan-out is skipped without reading its links. Kept in step
// by the same writes and by link/memory_released before a memory is deleted.
ALTER TABLE Key ADD lasting_links INT64 DEFAULT 0;
MATCH (k:Key)-[l:LINKS]->(m:Memory)
SET l.k_id = k.id, l.m_id = m.id, l.m_active = m.active, l.m_expires_at = m.expires_at;
MATCH (k:Key)-[l:LINKS]->(m:Memory) WHERE m.active AND m.expires_at IS NULL
WITH k, count(l) AS n
SET k.lasting_links = n;
