// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: type(r) for label(r). The digest sorts its rows itself.
// Every relationship with its properties, in a stable order (store digests).
MATCH (a)-[r]->(b) RETURN type(r) AS label, a.id AS src, b.id AS dst, r ORDER BY label, src, dst
