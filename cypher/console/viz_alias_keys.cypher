MATCH (a:Alias) WHERE a.norm = $norm AND ($any_ns OR a.namespace = $namespace) RETURN a.key_id AS id
