// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// ... and only one.
MATCH (n:MemoryNorm) WITH n.memory_id AS id, count(*) AS n WHERE n > 1 RETURN id, n
