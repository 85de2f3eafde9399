// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// Every RELATED_TO edge (stored direction src -> dst) with its weight.
MATCH (a:Memory)-[r:RELATED_TO]->(b:Memory)
RETURN collect(a.id) AS src, collect(b.id) AS dst, collect(r.weight) AS weights
