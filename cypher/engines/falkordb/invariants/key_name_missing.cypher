// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: no EXISTS { } subquery; the KeyName row by its indexed id, counted.
// Every key is found by its own normalised name.
MATCH (k:Key) OPTIONAL MATCH (n:KeyName {id: k.namespace + $sep + k.norm})
WITH k, count(CASE WHEN n.key_id = k.id THEN 1 END) AS found WHERE found = 0
RETURN k.id AS id
