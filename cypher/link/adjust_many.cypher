UNWIND $rows AS r MATCH (k:Key)-[l:LINKS]->(m:Memory) WHERE k.id = r.key_id AND m.id = r.memory_id
SET l.weight = CASE WHEN l.weight * r.factor + r.delta > $hi THEN $hi WHEN l.weight * r.factor + r.delta < $lo THEN $lo ELSE l.weight * r.factor + r.delta END
