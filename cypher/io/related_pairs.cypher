// The RELATED_TO edges that already leave these memories (an import counts only the edges it creates).
MATCH (a:Memory)-[:RELATED_TO]->(b:Memory) WHERE a.id IN $ids RETURN a.id AS src, b.id AS dst
