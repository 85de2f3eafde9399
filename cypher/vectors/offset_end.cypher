// One past the highest internal node offset of KeyVec (0 for an empty table): see memory/offset_end.
MATCH (v:KeyVec) RETURN coalesce(max(offset(id(v))) + 1, 0) AS stop
