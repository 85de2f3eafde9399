// FalkorDB: one past the largest internal id of Memory, the bound of the pages of memory_book (one load).
MATCH (m:Memory) RETURN coalesce(max(id(m)), -1) + 1 AS n
