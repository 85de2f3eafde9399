// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: pages by internal node id (shared by every label, and reused after a delete: the ids
// are used within one load that holds this process's writer, never kept).
// One page of keys by internal node id, [$lo, $hi): identity as parallel lists.
MATCH (k:Key) WHERE id(k) >= $lo AND id(k) < $hi
RETURN collect(k.id) AS ids, collect(k.namespace) AS namespaces, collect(k.text) AS texts,
       collect(k.key_type) AS types
