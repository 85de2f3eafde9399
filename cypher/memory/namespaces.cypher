// keymem: heavy (a whole-table read: it runs alone, see Store._read)
MATCH (m:Memory) WHERE m.active AND (m.expires_at IS NULL OR m.expires_at > $now)
RETURN m.namespace AS namespace, count(m) AS n ORDER BY namespace
