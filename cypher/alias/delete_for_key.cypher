MATCH (a:Alias) WHERE a.key_id = $key_id DETACH DELETE a
