// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// Every KeyVec row (except the sentinel) belongs to an existing concept key.
MATCH (v:KeyVec) WHERE v.id <> $sentinel AND NOT EXISTS { MATCH (k:Key) WHERE k.id = v.id AND k.key_type = 'concept' }
RETURN v.id AS id
