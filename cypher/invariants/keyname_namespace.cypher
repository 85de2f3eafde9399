// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// A KeyName row ("<namespace>\x1f<norm>") points into its own namespace.
MATCH (n:KeyName), (k:Key) WHERE k.id = n.key_id AND NOT starts_with(n.id, k.namespace + $sep) RETURN n.id AS id, k.id AS target
