MATCH (m:Memory) WHERE m.id IN $ids RETURN m.id AS id
