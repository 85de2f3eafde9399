// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: the memory by its indexed id (a comma join would be a cartesian product).
// MemoryNorm rows with their memory, to check the id is <namespace>\x1f<sha256(norm)>.
MATCH (n:MemoryNorm) MATCH (m:Memory {id: n.memory_id}) RETURN n.id AS id, m.id AS memory_id, m.namespace AS namespace, m.content AS content
