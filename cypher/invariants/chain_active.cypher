// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// At most one active version per version chain (chains are short: one step of history).
MATCH (a:Memory)-[:SUPERSEDES*1..8]-(b:Memory) WHERE a.active AND b.active AND a.id < b.id
RETURN DISTINCT a.id AS id, b.id AS other
