// keymem: heavy (a whole-table read: admitted one at a time, see Store._read)
// Key vectors (digests): id, namespace, the vector.
MATCH (v:KeyVec) RETURN v.id AS id, v.namespace AS namespace, v.vec AS vec ORDER BY id
