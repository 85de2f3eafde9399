UNWIND $ids AS i
MATCH (k:Key {id: i})
RETURN k
