MATCH (a:Alias), (k:Key) WHERE a.id = $alias_id AND k.id = $key_id CREATE (a)-[:ALIAS_OF]->(k)
