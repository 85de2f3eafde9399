// FalkorDB: the ids of keys named by handle, which is the keymem id itself (store/walk.py, SameIds).
UNWIND $offsets AS handle
MATCH (k:Key {id: handle}) RETURN k.id AS offset, k.id AS id
