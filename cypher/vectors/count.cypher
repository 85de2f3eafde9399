MATCH (v:KeyVec) WHERE v.id <> '__sentinel__' RETURN count(v) AS n
