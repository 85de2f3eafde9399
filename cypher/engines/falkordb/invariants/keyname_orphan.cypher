// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: no EXISTS { } subquery; the key by its indexed id, counted.
// KeyName rows point to existing keys.
MATCH (n:KeyName) OPTIONAL MATCH (k:Key {id: n.key_id}) WITH n, count(k) AS found WHERE found = 0
RETURN n.id AS id, n.key_id AS target
