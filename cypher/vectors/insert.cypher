CREATE (:KeyVec {id: $id, namespace: $namespace, vec: $vec})
