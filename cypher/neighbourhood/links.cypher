// The links of a frontier of memories given by internal offset, and whether each ever had a
// RELATED_TO edge: a scan of Memory's internal ids (and has_related flags), a filter and one
// extend, reading only the rel (~3 ms at 100k memories, ~0.6 ms at 10k). Ids come from
// store/walk.py's IdBook: reading k.id here is a join with Key (+3 ms at 100k), and
// `WHERE m.id IN $ids` is planned as a scan of the id column and a join.
MATCH (m:Memory)<-[l:LINKS]-(k:Key)
WHERE offset(id(m)) IN $memories
RETURN offset(id(m)) AS m, m.has_related AS related, offset(id(k)) AS k, l.weight AS weight
