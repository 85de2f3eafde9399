// Every LINKS edge with its weight, as one row of parallel lists.
MATCH (k:Key)-[l:LINKS]->(m:Memory)
RETURN collect(k.id) AS keys, collect(m.id) AS memories, collect(l.weight) AS weights
