// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: no EXISTS { } subquery; the old version by its indexed id, counted.
// m.supersedes names an existing memory.
MATCH (m:Memory) WHERE m.supersedes IS NOT NULL OPTIONAL MATCH (o:Memory {id: m.supersedes})
WITH m, count(o) AS found WHERE found = 0
RETURN m.id AS id, m.supersedes AS target
