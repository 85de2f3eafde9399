MATCH (n:KeyName) WHERE n.id = $id AND n.key_id = $key_id DELETE n
