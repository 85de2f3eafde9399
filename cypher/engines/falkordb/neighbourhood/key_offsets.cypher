// FalkorDB: one past the largest internal id of Key, the bound of the pages of key_book (one load).
MATCH (k:Key) RETURN coalesce(max(id(k)), -1) + 1 AS n
