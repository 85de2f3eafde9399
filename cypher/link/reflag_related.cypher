// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// Up to $limit memories with a RELATED_TO edge whose has_related flag (schema step 003) is not set:
// the fill after schema step 003, and after console writes, which bypass the write path.
MATCH (m:Memory)-[:RELATED_TO]-(:Memory)
WHERE m.has_related IS NULL OR NOT m.has_related
WITH DISTINCT m LIMIT $limit
SET m.has_related = true
RETURN count(m) AS n
