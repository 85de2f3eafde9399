// RELATED_TO neighbours of one memory, either direction (refresh after a commit; a handful of ids).
MATCH (a:Memory)-[r:RELATED_TO]-(b:Memory) WHERE a.id = $id
RETURN a.id AS src, b.id AS dst, r.weight AS weight
