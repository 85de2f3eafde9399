MATCH (m:Memory) WHERE m.id = $id RETURN m.content AS content
