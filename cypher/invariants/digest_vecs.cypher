// Key vectors (digests): id, namespace, the vector.
MATCH (v:KeyVec) RETURN v.id AS id, v.namespace AS namespace, v.vec AS vec ORDER BY id
