MATCH (k:Key) WHERE k.id = $id DETACH DELETE k
