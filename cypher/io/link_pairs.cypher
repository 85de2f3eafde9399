// The links that already end at these memories (an import counts only the links it creates).
MATCH (k:Key)-[:LINKS]->(m:Memory) WHERE m.id IN $ids RETURN k.id AS key_id, m.id AS memory_id
