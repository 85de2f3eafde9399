// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// m.supersedes names an existing memory.
MATCH (m:Memory) WHERE m.supersedes IS NOT NULL AND NOT EXISTS { MATCH (o:Memory) WHERE o.id = m.supersedes }
RETURN m.id AS id, m.supersedes AS target
