// FalkorDB: a memory's handle in the walk is its keymem id (no internal id is kept: store/walk.py, SameIds).
MATCH (m:Memory) WHERE m.id = $id RETURN m.id AS offset
