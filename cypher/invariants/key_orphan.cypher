// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// A key left with no memory is deleted with its last memory.
MATCH (k:Key) WHERE NOT EXISTS { MATCH (k)-[:LINKS]->(:Memory) } RETURN k.id AS id
