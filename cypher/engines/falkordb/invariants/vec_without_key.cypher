// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: no EXISTS { } subquery; the concept key by its indexed id, counted.
// Every KeyVec row (except the sentinel) belongs to an existing concept key.
MATCH (v:KeyVec) WHERE v.id <> $sentinel OPTIONAL MATCH (k:Key {id: v.id}) WITH v, count(CASE WHEN k.key_type = 'concept' THEN 1 END) AS found
WHERE found = 0 RETURN v.id AS id
