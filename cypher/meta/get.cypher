MATCH (m:Meta) WHERE m.name = $name RETURN m.value AS value
