// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: pages by internal node id (shared by every label, and reused after a delete: the ids
// are used within one load that holds this process's writer, never kept).
// The LINKS edges of the keys with internal ids in [$lo, $hi): one row per key, its memories
// as node ids. Grouped by key (74k groups at 1M memories) the whole table's 4.3M links read
// in 1.4 s; grouped by memory the aggregate does not fit a 256 MiB buffer pool.
MATCH (k:Key)-[l:LINKS]->(m:Memory) WHERE id(k) >= $lo AND id(k) < $hi
RETURN k.id AS key, collect(id(m)) AS memories, collect(l.weight) AS weights
