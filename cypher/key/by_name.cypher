MATCH (n:KeyName) WHERE n.id = $id MATCH (k:Key) WHERE k.id = n.key_id RETURN k
