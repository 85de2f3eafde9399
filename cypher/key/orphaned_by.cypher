// The keys among $ids whose every link goes to a memory in $gone (memories a write deletes), read
// before it deletes them: they are left with no memory and go with it (write._delete).
MATCH (k:Key) WHERE k.id IN $ids
OPTIONAL MATCH (k)-[:LINKS]->(m:Memory) WHERE NOT m.id IN $gone
WITH k, count(m) AS kept
WHERE kept = 0
RETURN k.id AS id, k.namespace AS namespace
