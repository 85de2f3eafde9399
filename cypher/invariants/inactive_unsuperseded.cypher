// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// Only correct() deactivates a memory, and it always records the successor.
MATCH (m:Memory) WHERE NOT m.active AND m.superseded_by IS NULL RETURN m.id AS id
