// keymem: heavy (a whole-table read: admitted one at a time, see Store._read)
MATCH (m:Memory) WHERE m.expires_at IS NOT NULL AND m.expires_at <= $now RETURN m.id AS id, m.namespace AS namespace
