// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// The key texts linked to the memories with ids in [$first, $last], as one row of parallel lists
// (a range scan Kuzu plans within a small buffer pool; see memory/active_docs).
MATCH (k:Key)-[:LINKS]->(m:Memory) WHERE m.id >= $first AND m.id <= $last
RETURN collect(m.id) AS memories, collect(k.text) AS texts
