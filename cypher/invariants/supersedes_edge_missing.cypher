// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// Every supersedes pointer has its SUPERSEDES edge.
MATCH (m:Memory) WHERE m.supersedes IS NOT NULL AND NOT EXISTS { MATCH (m)-[:SUPERSEDES]->(o:Memory) WHERE o.id = m.supersedes }
RETURN m.id AS id, m.supersedes AS target
