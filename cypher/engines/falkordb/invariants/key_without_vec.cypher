// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: no EXISTS { } subquery; the KeyVec row by id, counted.
// Every concept key has its KeyVec row.
MATCH (k:Key) WHERE k.key_type = 'concept' OPTIONAL MATCH (v:KeyVec {id: k.id})
WITH k, count(v) AS n WHERE n = 0 RETURN k.id AS id
