// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: labels(n)[0] for label(n) (each node has one label here). The digest sorts its rows itself.
// Every node of the graph's tables with its properties, in a stable order (store digests).
MATCH (n) WHERE labels(n)[0] <> 'KeyVec' RETURN labels(n)[0] AS label, n ORDER BY label, n.id, n.name
