// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// PendingAlias rows point to existing keys.
MATCH (p:PendingAlias) WHERE NOT EXISTS { MATCH (k:Key) WHERE k.id = p.key_id } RETURN p.id AS id, p.key_id AS target
