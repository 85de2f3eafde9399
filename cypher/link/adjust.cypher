// Hebbian update of one link by its two primary keys (~1 ms at 100k): weight * factor + delta,
// kept in [lo, hi]. For many links at once see link/adjust_many (one statement, a scan).
MATCH (k:Key)-[l:LINKS]->(m:Memory)
WHERE k.id = $key_id AND m.id = $memory_id
SET l.weight = CASE
    WHEN l.weight * $factor + $delta > $hi THEN $hi
    WHEN l.weight * $factor + $delta < $lo THEN $lo
    ELSE l.weight * $factor + $delta END
RETURN k.id AS key_id, m.id AS memory_id, l.weight AS weight
