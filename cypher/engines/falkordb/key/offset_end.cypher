// FalkorDB: pages by internal node id (shared by every label, and reused after a delete: the ids
// are used within one load that holds this process's writer, never kept).
// One past the highest internal node id of Key (0 for an empty table): see memory/offset_end.
MATCH (k:Key) RETURN coalesce(max(id(k)) + 1, 0) AS stop
