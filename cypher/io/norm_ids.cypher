MATCH (n:MemoryNorm) WHERE n.id IN $ids RETURN n.id AS id, n.memory_id AS memory_id
