// keymem: heavy (a whole-table read: admitted one at a time, see Store._read)
// A superseded version is never active.
MATCH (m:Memory) WHERE m.superseded_by IS NOT NULL AND m.active RETURN m.id AS id, m.superseded_by AS target
