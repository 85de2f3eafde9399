// FalkorDB: RELATED_TO neighbours (both directions) of memories named by keymem id, with the fields
// the walk filters on; the caller keeps the visible ones. The columns `m` and `o` hold ids.
UNWIND $memories AS mid
MATCH (m:Memory {id: mid})-[r:RELATED_TO]-(o:Memory)
RETURN m.id AS m, o.id AS memory_id, o.id AS o, r.weight AS weight,
       o.active AS active, o.expires_at AS expires_at
