// Ids of memories given by internal offset (a scan of the id column, ~8 ms at 100k): offsets the
// IdBook has not seen, i.e. memories written since it was loaded.
MATCH (m:Memory) WHERE offset(id(m)) IN $offsets RETURN offset(id(m)) AS offset, m.id AS id
