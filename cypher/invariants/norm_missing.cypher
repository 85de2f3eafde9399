// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// Every active memory has a MemoryNorm row (duplicate detection).
MATCH (m:Memory) WHERE m.active AND NOT EXISTS { MATCH (n:MemoryNorm) WHERE n.memory_id = m.id } RETURN m.id AS id
