MATCH (v:KeyVec) WHERE v.id <> '__sentinel__' RETURN v.id AS id, v.namespace AS namespace, v.vec AS vec
