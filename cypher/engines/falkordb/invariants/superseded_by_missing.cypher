// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: no EXISTS { } subquery; the successor by its indexed id, counted.
// m.superseded_by names an existing memory.
MATCH (m:Memory) WHERE m.superseded_by IS NOT NULL OPTIONAL MATCH (o:Memory {id: m.superseded_by})
WITH m, count(o) AS found WHERE found = 0
RETURN m.id AS id, m.superseded_by AS target
