MATCH (m:Memory) WHERE m.id = $id DETACH DELETE m
