// Content of some memories by primary key: only what is shown is read from the store.
// An UNWIND of primary-key matches is planned as a scan (~10 ms at 100k rows, any count): for a
// handful of ids the one-id statements cost ~0.3-1.5 ms each, see mirror.SINGLE_LOOKUPS.
UNWIND $ids AS i
MATCH (m:Memory {id: i})
RETURN m.id AS id, m.content AS content
