// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// A superseded version is never active.
MATCH (m:Memory) WHERE m.superseded_by IS NOT NULL AND m.active RETURN m.id AS id, m.superseded_by AS target
