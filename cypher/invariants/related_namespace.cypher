// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// A RELATED_TO edge never crosses namespaces.
MATCH (a:Memory)-[:RELATED_TO]->(b:Memory) WHERE a.namespace <> b.namespace RETURN a.id AS src, b.id AS dst
