// One past the highest internal node offset of Key (0 for an empty table): see memory/offset_end.
MATCH (k:Key) RETURN coalesce(max(offset(id(k))) + 1, 0) AS stop
