// keymem: heavy (a whole-table read: it runs alone, see Store._read)
MATCH (a:Memory)-[r:RELATED_TO]->(b:Memory) WHERE $any_ns OR a.namespace = $namespace
RETURN a.id AS src, b.id AS dst, r.weight AS weight, r.created_at AS created_at
ORDER BY src, dst
