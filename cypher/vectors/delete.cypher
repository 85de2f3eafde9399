MATCH (v:KeyVec) WHERE v.id = $id DELETE v
