// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// One page of keys by internal node offset, [$lo, $hi): identity as parallel lists.
MATCH (k:Key) WHERE offset(id(k)) >= $lo AND offset(id(k)) < $hi
RETURN collect(k.id) AS ids, collect(k.namespace) AS namespaces, collect(k.text) AS texts,
       collect(k.key_type) AS types
