// Some keys' vectors with their namespaces (another daemon's writes, on catch-up).
MATCH (v:KeyVec) WHERE v.id IN $ids RETURN v.id AS id, v.namespace AS namespace, v.vec AS vec
