MATCH (a:Alias) WHERE a.id IN $ids RETURN a.id AS id
