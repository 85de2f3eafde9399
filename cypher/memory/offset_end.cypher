// One past the highest internal node offset of Memory (0 for an empty table): the bound of the
// offset-range pages whole-table loads read (Store.offset_pages).
MATCH (m:Memory) RETURN coalesce(max(offset(id(m))) + 1, 0) AS stop
