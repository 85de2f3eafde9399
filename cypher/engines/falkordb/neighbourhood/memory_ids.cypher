// FalkorDB: the ids of memorys named by handle, which is the keymem id itself (store/walk.py, SameIds).
UNWIND $offsets AS handle
MATCH (m:Memory {id: handle}) RETURN m.id AS offset, m.id AS id
