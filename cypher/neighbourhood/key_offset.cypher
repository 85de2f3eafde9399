// A key's internal offset, by primary key.
MATCH (k:Key) WHERE k.id = $id RETURN offset(id(k)) AS offset
