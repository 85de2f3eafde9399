// RELATED_TO neighbours (both directions) of memories given by internal offset, with the fields the
// walk filters on; the caller keeps the visible ones. (A filter on o's fields here makes Kuzu scan
// all of Memory for them first.)
MATCH (m:Memory)-[r:RELATED_TO]-(o:Memory)
WHERE offset(id(m)) IN $memories
RETURN offset(id(m)) AS m, o.id AS memory_id, offset(id(o)) AS o, r.weight AS weight,
       o.active AS active, o.expires_at AS expires_at
