// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// Each key's count of lasting links equals its links whose copies say "active, no TTL" (that the
// copies match their memories is invariants/link_copies). Counted over the rel's own properties,
// as the walk reads them: after Kuzu 0.11.3 replays a torn WAL tail, a join on Memory's node
// properties was measured to miss a link that a primary-key match still finds.
MATCH (k:Key)
OPTIONAL MATCH (k)-[l:LINKS]->(:Memory) WHERE l.m_active AND l.m_expires_at IS NULL
WITH k, count(l) AS n
WHERE k.lasting_links IS NULL OR k.lasting_links <> n
RETURN k.id AS id, k.lasting_links AS stored, n
