// One past the largest internal offset of Memory (the pages of the IdBook's load).
MATCH (m:Memory) RETURN coalesce(max(offset(id(m))), -1) + 1 AS n
