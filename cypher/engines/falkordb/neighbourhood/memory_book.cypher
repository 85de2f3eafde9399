// keymem: heavy (a whole-table read: it runs alone, see Store._read)
// FalkorDB: one page of (handle, id) of Memory by internal id range; the handle is the keymem id, so
// an entry stays right after the internal id is reused (store/walk.py's SameIds reads no book).
MATCH (m:Memory) WHERE id(m) >= $lo AND id(m) < $hi RETURN m.id AS offset, m.id AS id
