// FalkorDB: pages by internal node id (shared by every label, and reused after a delete: the ids
// are used within one load that holds this process's writer, never kept).
// One past the highest internal node id of Memory (0 for an empty table): the bound of the
// offset-range pages whole-table loads read (Store.offset_pages).
MATCH (m:Memory) RETURN coalesce(max(id(m)) + 1, 0) AS stop
