// RELATED_TO neighbours of some memories, either direction (refresh after a commit).
UNWIND $ids AS i
MATCH (a:Memory {id: i})-[r:RELATED_TO]-(b:Memory)
RETURN a.id AS src, b.id AS dst, r.weight AS weight
