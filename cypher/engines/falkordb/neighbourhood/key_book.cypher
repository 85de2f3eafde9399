// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: one page of (handle, id) of Key by internal id range; the handle is the keymem id, so
// an entry stays right after the internal id is reused (store/walk.py's SameIds reads no book).
MATCH (k:Key) WHERE id(k) >= $lo AND id(k) < $hi RETURN k.id AS offset, k.id AS id
