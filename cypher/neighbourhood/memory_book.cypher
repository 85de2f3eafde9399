// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// One page of (internal offset, id) of Memory, by offset range (the IdBook's load).
MATCH (m:Memory) WHERE offset(id(m)) >= $lo AND offset(id(m)) < $hi RETURN offset(id(m)) AS offset, m.id AS id
