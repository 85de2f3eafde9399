MATCH (m:Memory)-[:RELATED_TO]-(o:Memory) WHERE m.id = $id RETURN DISTINCT o.id AS id
