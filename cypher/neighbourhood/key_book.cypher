// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// One page of (internal offset, id) of Key, by offset range (the IdBook's load).
MATCH (k:Key) WHERE offset(id(k)) >= $lo AND offset(id(k)) < $hi RETURN offset(id(k)) AS offset, k.id AS id
