// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// Key vectors (digests): id, namespace, the vector.
MATCH (v:KeyVec) RETURN v.id AS id, v.namespace AS namespace, v.vec AS vec ORDER BY id
