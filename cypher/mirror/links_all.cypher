// The LINKS edges of the memories with ids in ($after, $last], as one row of parallel lists.
MATCH (k:Key)-[l:LINKS]->(m:Memory) WHERE m.id > $after AND m.id <= $last
RETURN collect(k.id) AS keys, collect(m.id) AS memories, collect(l.weight) AS weights
