// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: pages by internal node id (shared by every label, and reused after a delete: the ids
// are used within one load that holds this process's writer, never kept).
// The key vectors among node ids [$lo, $hi) (the exact-scan cache's load, a page at a time:
// one statement over every vector keeps its whole result in the buffer pool, 100 MB at 100k memories).
MATCH (v:KeyVec) WHERE id(v) >= $lo AND id(v) < $hi AND v.id <> '__sentinel__'
RETURN v.id AS id, v.namespace AS namespace, v.vec AS vec
