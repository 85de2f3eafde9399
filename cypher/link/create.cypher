// One new link. Both ends are matched by primary key (~0.4 ms at 100k); linking a memory's keys
// with one UNWIND statement was planned as a scan of Key (~3.8 ms per memory at 100k).
MATCH (k:Key), (m:Memory) WHERE k.id = $key_id AND m.id = $memory_id
CREATE (k)-[:LINKS {weight: $weight, created_at: $now}]->(m)
RETURN m.id AS memory_id
