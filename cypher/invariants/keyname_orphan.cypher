// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// KeyName rows point to existing keys.
MATCH (n:KeyName) WHERE NOT EXISTS { MATCH (k:Key) WHERE k.id = n.key_id } RETURN n.id AS id, n.key_id AS target
