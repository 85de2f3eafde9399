// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: no EXISTS { } subquery; the MemoryNorm rows by their indexed memory_id, counted.
// Every active memory has a MemoryNorm row (duplicate detection).
MATCH (m:Memory) WHERE m.active OPTIONAL MATCH (n:MemoryNorm {memory_id: m.id}) WITH m, count(n) AS found
WHERE found = 0 RETURN m.id AS id
