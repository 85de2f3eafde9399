// MemoryNorm rows point to existing active memories.
MATCH (n:MemoryNorm) WHERE NOT EXISTS { MATCH (m:Memory) WHERE m.id = n.memory_id AND m.active } RETURN n.id AS id, n.memory_id AS target
