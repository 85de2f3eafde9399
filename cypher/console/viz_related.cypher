MATCH (a:Memory)-[r:RELATED_TO]->(b:Memory) WHERE a.id IN $ids AND b.id IN $ids
RETURN a.id AS src, b.id AS dst, r.weight AS weight
