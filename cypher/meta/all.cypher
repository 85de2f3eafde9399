MATCH (m:Meta) RETURN m.name AS name, m.value AS value ORDER BY name
