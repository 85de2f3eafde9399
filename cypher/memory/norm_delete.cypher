MATCH (n:MemoryNorm) WHERE n.memory_id = $memory_id DELETE n
