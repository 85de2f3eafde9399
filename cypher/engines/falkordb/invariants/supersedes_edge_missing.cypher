// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: no EXISTS { } subquery; the memory's own SUPERSEDES edges, counted when they reach the pointer.
// Every supersedes pointer has its SUPERSEDES edge.
MATCH (m:Memory) WHERE m.supersedes IS NOT NULL OPTIONAL MATCH (m)-[:SUPERSEDES]->(o:Memory)
WITH m, count(CASE WHEN o.id = m.supersedes THEN 1 END) AS found WHERE found = 0
RETURN m.id AS id, m.supersedes AS target
