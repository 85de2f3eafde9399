// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// Active memories with their namespace and expiry (the lexical index must mirror them).
MATCH (m:Memory) WHERE m.active RETURN m.id AS id, m.namespace AS namespace, m.expires_at AS expires_at
