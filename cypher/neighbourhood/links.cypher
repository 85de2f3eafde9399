// The links of a frontier of memories, given by internal offset: a scan of Memory's internal ids,
// a filter and one extend, reading only the rel (its copies of the ends' ids, schema step 003).
// `WHERE m.id IN $ids` would be planned as a scan of the id column instead (~10-16 ms at 100k).
MATCH (m:Memory)<-[l:LINKS]-(k:Key)
WHERE offset(id(m)) IN $memories
RETURN offset(id(m)) AS m, l.m_id AS memory_id, offset(id(k)) AS k, l.k_id AS key_id, l.weight AS weight
