// FalkorDB: a key's handle in the walk is its keymem id (no internal id is kept: store/walk.py, SameIds).
MATCH (k:Key) WHERE k.id = $id RETURN k.id AS offset
