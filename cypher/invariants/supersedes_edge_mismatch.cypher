// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// Every SUPERSEDES edge agrees with both pointers.
MATCH (a:Memory)-[:SUPERSEDES]->(b:Memory)
WHERE a.supersedes IS NULL OR a.supersedes <> b.id OR b.superseded_by IS NULL OR b.superseded_by <> a.id
RETURN a.id AS src, b.id AS dst
