// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// m.superseded_by names an existing memory.
MATCH (m:Memory) WHERE m.superseded_by IS NOT NULL AND NOT EXISTS { MATCH (o:Memory) WHERE o.id = m.superseded_by }
RETURN m.id AS id, m.superseded_by AS target
