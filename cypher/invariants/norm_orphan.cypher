// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// MemoryNorm rows point to existing active memories.
MATCH (n:MemoryNorm) WHERE NOT EXISTS { MATCH (m:Memory) WHERE m.id = n.memory_id AND m.active } RETURN n.id AS id, n.memory_id AS target
