// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// The key vectors among node offsets [$lo, $hi) (the exact-scan cache's load, a page at a time:
// one statement over every vector keeps its whole result in the buffer pool, 100 MB at 100k memories).
MATCH (v:KeyVec) WHERE offset(id(v)) >= $lo AND offset(id(v)) < $hi AND v.id <> '__sentinel__'
RETURN v.id AS id, v.namespace AS namespace, v.vec AS vec
