// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// Link weights stay finite and inside [LINK_MIN, LINK_MAX].
MATCH (k:Key)-[l:LINKS]->(m:Memory) WHERE l.weight IS NULL OR NOT (l.weight >= $lo AND l.weight <= $hi)
RETURN k.id AS key_id, m.id AS memory_id, l.weight AS weight
