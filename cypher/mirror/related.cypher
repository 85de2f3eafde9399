// RELATED_TO neighbours of some memories, either direction (refresh after a commit).
// An UNWIND of primary-key matches is planned as a scan (~10 ms at 100k rows, any count): for a
// handful of ids the one-id statements cost ~0.3-1.5 ms each, see mirror.SINGLE_LOOKUPS.
UNWIND $ids AS i
MATCH (a:Memory {id: i})-[r:RELATED_TO]-(b:Memory)
RETURN a.id AS src, b.id AS dst, r.weight AS weight
