MATCH (k:Key) WHERE k.id = $id RETURN k
