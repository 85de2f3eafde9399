// Hebbian updates for a batch of (key, memory) links: weight * factor + delta, kept in [lo, hi].
UNWIND $rows AS r
MATCH (k:Key {id: r.key_id})-[l:LINKS]->(m:Memory {id: r.memory_id})
SET l.weight = CASE
    WHEN l.weight * r.factor + r.delta > $hi THEN $hi
    WHEN l.weight * r.factor + r.delta < $lo THEN $lo
    ELSE l.weight * r.factor + r.delta END
RETURN k.id AS key_id, m.id AS memory_id, l.weight AS weight
