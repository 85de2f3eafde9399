// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// Every concept key has its KeyVec row.
MATCH (k:Key) WHERE k.key_type = 'concept' AND NOT EXISTS { MATCH (v:KeyVec) WHERE v.id = k.id } RETURN k.id AS id
