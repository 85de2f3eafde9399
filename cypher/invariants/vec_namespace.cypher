// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// A KeyVec row carries its key's namespace (vector search filters on it).
MATCH (v:KeyVec), (k:Key) WHERE v.id = k.id AND v.namespace <> k.namespace RETURN k.id AS id, v.namespace AS vns, k.namespace AS kns
