MATCH (k:Key) WHERE (k.id = $text OR k.norm = $norm) AND ($any_ns OR k.namespace = $namespace) RETURN k.id AS id
