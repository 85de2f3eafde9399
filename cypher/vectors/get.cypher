MATCH (v:KeyVec) WHERE v.id IN $ids RETURN v.id AS id, v.vec AS vec
