// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: pages by internal node id (shared by every label, and reused after a delete: the ids
// are used within one load that holds this process's writer, never kept).
// The count of lasting links (schema step 003) of the keys with internal ids in [$lo, $hi),
// from the links' copies (link/recopy runs first), where it differs.
MATCH (k:Key) WHERE id(k) >= $lo AND id(k) < $hi
OPTIONAL MATCH (k)-[l:LINKS]->(:Memory) WHERE l.m_active AND l.m_expires_at IS NULL
WITH k, count(l) AS n
WHERE k.lasting_links IS NULL OR k.lasting_links <> n
SET k.lasting_links = n
RETURN count(k) AS n
