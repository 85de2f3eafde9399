// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: no EXISTS { } subquery; the key by its indexed id, counted.
// PendingAlias rows point to existing keys.
MATCH (p:PendingAlias) OPTIONAL MATCH (k:Key {id: p.key_id}) WITH p, count(k) AS found WHERE found = 0
RETURN p.id AS id, p.key_id AS target
