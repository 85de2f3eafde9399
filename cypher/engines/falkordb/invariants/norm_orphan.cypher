// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: no EXISTS { } subquery; the memory by its indexed id, counted when active.
// MemoryNorm rows point to existing active memories.
MATCH (n:MemoryNorm) OPTIONAL MATCH (m:Memory {id: n.memory_id}) WITH n, count(CASE WHEN m.active THEN 1 END) AS found
WHERE found = 0 RETURN n.id AS id, n.memory_id AS target
