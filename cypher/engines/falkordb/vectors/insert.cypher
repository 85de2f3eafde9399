// FalkorDB: a vector property is a vecf32 value (a plain list would be stored as a list of doubles).
CREATE (:KeyVec {id: $id, namespace: $namespace, vec: vecf32($vec)})
