// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// Alias rows point to an existing key through both key_id and ALIAS_OF.
MATCH (a:Alias) WHERE NOT EXISTS { MATCH (a)-[:ALIAS_OF]->(k:Key) WHERE k.id = a.key_id } RETURN a.id AS id, a.key_id AS target
