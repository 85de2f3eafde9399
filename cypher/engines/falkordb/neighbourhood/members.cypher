// FalkorDB: the visible memories (active, not expired at $now) of keys named by keymem id, leaving
// out keys with more than $fanout lasting links without reading their links (schema step 003's
// copies on LINKS and Key.lasting_links, as on LadybugDB). The columns `k` and `m` hold ids.
UNWIND $keys AS kid
MATCH (k:Key {id: kid})
WHERE k.lasting_links <= $fanout
MATCH (k)-[l:LINKS]->(m:Memory)
WHERE l.m_active AND (l.m_expires_at IS NULL OR l.m_expires_at > $now)
RETURN k.id AS k, m.id AS m, l.weight AS weight
