// One past the largest internal offset of Key (the pages of link/recount and of the IdBook's load).
MATCH (k:Key) RETURN coalesce(max(offset(id(k))), -1) + 1 AS n
