MATCH (m:Memory) WHERE m.id = $id RETURN m
