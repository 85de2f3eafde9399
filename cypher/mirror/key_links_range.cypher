// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// The LINKS edges of the keys with internal offsets in [$lo, $hi): one row per key, its memories
// as node offsets. Grouped by key (74k groups at 1M memories) the whole table's 4.3M links read
// in 1.4 s; grouped by memory the aggregate does not fit a 256 MiB buffer pool.
MATCH (k:Key)-[l:LINKS]->(m:Memory) WHERE offset(id(k)) >= $lo AND offset(id(k)) < $hi
RETURN k.id AS key, collect(offset(id(m))) AS memories, collect(l.weight) AS weights
