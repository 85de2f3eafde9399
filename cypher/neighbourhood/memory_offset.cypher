// A memory's internal offset, by primary key (the only index lookup Kuzu makes; ~0.3 ms at 100k).
MATCH (m:Memory) WHERE m.id = $id RETURN offset(id(m)) AS offset
