MATCH (n:MemoryNorm) WHERE n.id = $id RETURN n.memory_id AS memory_id
