// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// A memory with a RELATED_TO edge has its has_related flag set (schema step 003; the walk skips the rest).
MATCH (m:Memory)-[:RELATED_TO]-(:Memory)
WHERE m.has_related IS NULL OR NOT m.has_related
RETURN DISTINCT m.id AS id
