// Ids of keys given by internal offset: offsets the IdBook has not seen (keys created since it was loaded).
MATCH (k:Key) WHERE offset(id(k)) IN $offsets RETURN offset(id(k)) AS offset, k.id AS id
