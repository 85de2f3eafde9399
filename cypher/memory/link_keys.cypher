// Link one new memory to all its (distinct) keys in one statement; the memory has no links yet.
MATCH (m:Memory {id: $memory_id})
UNWIND $key_ids AS kid
MATCH (k:Key {id: kid})
CREATE (k)-[:LINKS {weight: $weight, created_at: $now}]->(m)
