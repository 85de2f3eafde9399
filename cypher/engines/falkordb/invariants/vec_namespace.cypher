// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: the key by its indexed id (a comma join would be a cartesian product).
// A KeyVec row carries its key's namespace (vector search filters on it).
MATCH (v:KeyVec) MATCH (k:Key {id: v.id}) WHERE v.namespace <> k.namespace RETURN k.id AS id, v.namespace AS vns, k.namespace AS kns
