// FalkorDB: the links of a frontier of memories named by keymem id (the range index on Memory.id),
// and whether each ever had a RELATED_TO edge. FalkorDB hands a deleted node's internal id to the
// next node at once, so the walk keeps none (store/walk.py: SameIds); the columns named `m` and `k`
// hold ids here.
UNWIND $memories AS mid
MATCH (m:Memory {id: mid})<-[l:LINKS]-(k:Key)
RETURN m.id AS m, m.has_related AS related, k.id AS k, l.weight AS weight
