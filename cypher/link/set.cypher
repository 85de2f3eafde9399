MATCH (k:Key)-[l:LINKS]->(m:Memory) WHERE k.id = $key_id AND m.id = $memory_id SET l.weight = $weight RETURN l.weight AS weight
