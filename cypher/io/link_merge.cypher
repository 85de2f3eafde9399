// Idempotent: an existing link keeps its weight.
MATCH (k:Key), (m:Memory) WHERE k.id = $key_id AND m.id = $memory_id
MERGE (k)-[l:LINKS]->(m) ON CREATE SET l.weight = $weight, l.created_at = $created_at
