MATCH (n:KeyName) WHERE n.key_id = $key_id DELETE n
