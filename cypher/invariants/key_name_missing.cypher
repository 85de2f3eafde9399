// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// Every key is found by its own normalised name.
MATCH (k:Key) WHERE NOT EXISTS { MATCH (n:KeyName) WHERE n.id = k.namespace + $sep + k.norm AND n.key_id = k.id }
RETURN k.id AS id
