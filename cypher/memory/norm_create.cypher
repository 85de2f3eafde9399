CREATE (:MemoryNorm {id: $id, memory_id: $memory_id})
