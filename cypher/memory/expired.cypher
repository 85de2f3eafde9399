// keymem: heavy (a whole-table read: it runs alone, see Store._read)
MATCH (m:Memory) WHERE m.expires_at IS NOT NULL AND m.expires_at <= $now RETURN m.id AS id, m.namespace AS namespace
