// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: STARTS WITH for starts_with(); the key by its indexed id.
// A KeyName row ("<namespace>\x1f<norm>") points into its own namespace.
MATCH (n:KeyName) MATCH (k:Key {id: n.key_id}) WHERE NOT (n.id STARTS WITH (k.namespace + $sep)) RETURN n.id AS id, k.id AS target
