// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// Every node of the graph's tables with its properties, in a stable order (store digests).
MATCH (n) WHERE label(n) <> 'KeyVec' RETURN label(n) AS label, n ORDER BY label, n.id, n.name
