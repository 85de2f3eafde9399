MATCH (a:Alias) WHERE a.id = $id DETACH DELETE a
