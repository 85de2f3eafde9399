// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// Pending aliases (queries counted towards a learned alias of their key); the export keeps those of the
// keys it holds, in its own order.
MATCH (p:PendingAlias)
RETURN p.id AS id, p.key_id AS key_id, p.query AS query, p.count AS count, p.last_at AS last_at
