UNWIND $ids AS i MATCH (n:KeyName) WHERE n.id = i MATCH (k:Key) WHERE k.id = n.key_id RETURN i AS name_id, k
